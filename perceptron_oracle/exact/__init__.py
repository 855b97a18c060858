"""The fast exact engines: each family's exact run, trial for trial and bit for bit the
readable reference's trace (``reference/``), computed with FLINT (python-flint) instead of
Python's Fractions and mpmath, as CPython keeps ``_decimal`` beside ``_pydecimal``.

A float64 input is a dyadic rational, so integer-scaled data make most states integer
vectors (``fmpz``, ``fmpz_mat``); what is not rational is held in Arb balls whose precision
grows until every decision is certified.  Decisions are filtered: a cheap bound first, exact
work only where it does not decide.  The reference stays the specification; tests run one
suite over both (tests/test_exact_engines.py).
"""
