"""Hypothesis strategies and invariant checks taken from the papers' theorems.

Importable by any implementation's test suite: ``strategies`` draws online sequences and
parameters; one module per family (``perceptron``, ...) holds that family's invariants as
functions that take an implementation callable and raise ``InvariantViolation``.
"""
