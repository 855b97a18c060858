"""How far a float64 implementation's score may stray from the exact one (SPEC.md, "Fragile
trials").

A float64 implementation computes each score as a sum of m rounded terms.  Whatever the order
of summation (BLAS blocking, fused multiply-add), the classical bound (Higham, *Accuracy and
Stability of Numerical Algorithms*, sec. 3.1) is

    |fl(s) - s| <= gamma_m * M,   gamma_m = m u / (1 - m u),   u = 2^-53,

where M is the sum of the absolute values of all terms and partial products.  The reference
computes M alongside the exact score, takes m from the algorithm's operation count and doubles
the result.  A trial whose exact distance to a decision threshold is within that bound is
*fragile*: a correct float64 implementation may take either branch there.

When every input is a dyadic rational on a common grid 2^-E and every partial sum stays below
2^52 grid steps (``exact_in_float64``), float64 sums and products are exact and the bound is 0:
exact ties on small-integer data are then decided the same way by float64 code, and are
compared, not excused (SPEC.md section 3 names the runs this applies to).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

UNIT_ROUNDOFF = 2.0 ** -53
#: The smallest positive float64 (subnormal, 2^-1074): a nonzero magnitude that underflowed.
SMALLEST_SUBNORMAL = 5e-324
#: A finite stand-in for "no bound": the final-state bound (or the error bound it derives
#: from) that allows any state, once the carried error bound is lost (e.g. after a fragile
#: trial).  Finite, because bounds are read as floats (compare.py) and written as JSON
#: numbers (the golden files).
ANY_STATE = 1e300
SAFETY = 2.0


def score_error_bound(operations: int, magnitude: float) -> float:
    """``SAFETY * (gamma_m * M + m * 2^-1074)`` for m = ``operations``, M = ``magnitude``.

    The second term covers underflow: a product that lands among the subnormals may lose up
    to 2^-1075 absolutely, whatever its relative size.  A magnitude of 0 means no nonzero
    term at all (see :func:`magnitude_float`), and the bound is then 0.
    """
    if magnitude == 0:
        return 0.0  # no nonzero term: float64 computes the exact 0
    if not magnitude < math.inf:
        return math.inf  # the terms overflow float64 (or their magnitude is NaN): undecidable
    m = operations * UNIT_ROUNDOFF
    return SAFETY * (m / (1.0 - m) * magnitude + operations * SMALLEST_SUBNORMAL)


def magnitude_float(value: object) -> float:
    """A nonnegative magnitude as a float that is 0 only if the value is 0: a value below the
    float64 range becomes the smallest subnormal (``score_error_bound`` needs that), one
    above it infinity (the bound is then infinite: undecidable)."""
    out = float_or_inf(value)
    return out if out or not value else SMALLEST_SUBNORMAL


def float_or_inf(value: object) -> float:
    """float(value), or an infinity of its sign when the exact value is beyond float64's range
    (``float`` of such a Fraction or int raises OverflowError).  The error bounds are floats:
    one that overflows is infinite, and the trial it bounds undecidable in float64."""
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


def product_magnitude(exact: object, magnitude: float) -> float:
    """|exact| x magnitude as a float (a parameter times a float magnitude, the Perceptron's
    eta sum_i alpha_i |k(x_i, x)|), the smallest subnormal where a nonzero product falls
    below float64's range (section 3: M is 0 only when every term is)."""
    out = abs(float_or_inf(exact)) * magnitude
    return out if out or not (exact and magnitude) else SMALLEST_SUBNORMAL


def power_or_inf(base: float, exponent: int) -> float:
    """base ** exponent for a float base and an integer exponent >= 0, an infinity of the
    power's sign where Python's ``**`` raises OverflowError (its ``*`` gives the infinity)."""
    try:
        return base ** exponent
    except OverflowError:
        return -math.inf if base < 0 and exponent % 2 else math.inf


def dyadic_exponent(value: Fraction) -> int | None:
    """E with denominator 2^E, or None if the denominator is not a power of two."""
    d = value.denominator
    if d & (d - 1):
        return None
    return d.bit_length() - 1


def max_dyadic_exponent(values: Iterable[Fraction]) -> int | None:
    """The largest exponent over ``values``; None if any of them is not dyadic."""
    worst = 0
    for v in values:
        e = dyadic_exponent(v)
        if e is None:
            return None
        worst = max(worst, e)
    return worst


def exact_in_float64(exponent: int | None, magnitude: float) -> bool:
    """True iff every quantity bounded by ``magnitude`` on the grid 2^-exponent is a float64."""
    if exponent is None or not magnitude < math.inf:
        return False
    if magnitude == 0:
        return True
    return math.frexp(magnitude)[1] + exponent <= 52  # magnitude < 2^(52 - exponent)


def linear_sums_exact(rows: list[list[Fraction]], max_updates: int) -> bool:
    """Whether float64 computes every v.x of a linear run exactly, v a sum of at most
    ``max_updates`` signed instances: all data on one dyadic grid and every partial sum
    below 2^52 of its steps (SPEC.md section 3, "Exact float64 runs")."""
    e_x = max_dyadic_exponent(v for row in rows for v in row)
    if e_x is None:
        return False
    x_max = max(abs(float(v)) for row in rows for v in row)
    r2 = max(sum(float(v) * float(v) for v in row) for row in rows) * (1 + 1e-12)
    return exact_in_float64(2 * e_x, max_updates * (r2 + x_max))


def within(value: object, bound: float) -> bool:
    """|value| <= bound, decided exactly for an exact value of any size (a Fraction, an int,
    an mpmath mpf, or a ``(numerator, denominator)`` pair of ints): never through a float
    conversion that overflows beyond float64's range.  An infinite (or NaN) bound holds every
    value: the float64 terms overflowed, so a float64 form cannot decide the trial."""
    if not bound < math.inf:
        return True
    exact: int | Fraction
    if isinstance(value, tuple):
        num, den = value
        exact = Fraction(num, den)
    elif isinstance(value, (int, Fraction)):
        exact = value
    else:  # an mpf: mpmath compares it with a float exactly, whatever its exponent (a
        # Fraction of exp(-1e120) would need 1e120 bits)
        return bool(abs(value) <= bound)  # type: ignore[arg-type]
    return abs(Fraction(exact)) <= Fraction(bound)
