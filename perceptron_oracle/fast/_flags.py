"""The fixed protocol between a compiled loop (``fast._numba`` and its family modules
``fast._numba_*``) and its caller: the per-trial flags and return codes the loops write, and
the constants they read as such (the state arrays' slots are ``fast._slots``).  A module of
constants only, imported by the fronts (``fast._compiled``, ``fast._compiled_multiclass``)
and by the loop modules alike, so neither side imports the other for them.
"""

from __future__ import annotations

__all__ = ["BLOCKED", "DONE", "FULL_BASE", "MISTAKE", "TINY_SQUARES", "UPDATE"]

#: Per-trial flags written by the loops.
MISTAKE, UPDATE, BLOCKED = 1, 2, 4

#: A float64 sum of squares at or above this is exact to its rounding (a square that
#: underflowed is off by at most 2^-1075, far below the sum's ulp of 2^-952); below it, the
#: forms that can meet such sums (PUMMA's soft margin at a tiny C:
#: ``fast.maximum_margin.slack_root``) sum again on scaled terms.  Fixed, as the flags: the
#: compiled loops read it as a constant.
TINY_SQUARES = 2.0 ** -900

#: Return codes of the one-vs-rest loops besides a trial number (a score that is not finite).
DONE = -1
#: The one-vs-rest dual loop returns ``FULL_BASE - t`` when trial t needs room for one more
#: support.
FULL_BASE = -2
