"""The one exception every invariant check raises."""

from __future__ import annotations


class InvariantViolation(AssertionError):
    """An implementation broke an invariant taken from a paper's theorem; the message names
    the invariant and what broke it.  A subclass of AssertionError, so a failing check is a
    failing test in pytest and unittest alike."""
