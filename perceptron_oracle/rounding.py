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
from typing import Any

import mpmath

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


# -- deterministic float operations (SPEC.md, "Portable golden files") ----------------------
#
# Every float the golden generator writes (normalised X, final_tolerance) comes from the
# operations below, from exact arithmetic rounded once, or from scalar IEEE operations
# (+ - * / and math.sqrt, each correctly rounded): never from BLAS (np.dot, @,
# np.linalg.*, scipy.linalg.*) or a numpy reduction or transcendental ufunc with SIMD paths
# (np.sum, np.power, np.exp, np.log), whose roundings depend on the CPU, the BLAS kernel and
# the thread count.

#: The precision (bits) of the mpmath context behind ``power`` and ``largest_eigenvalue``:
#: pure Python, so the same digits on every machine.
DETERMINISTIC_BITS = 128
_CTX = mpmath.MPContext()
_CTX.prec = DETERMINISTIC_BITS


def _ratio_float(numerator: int, exponent: int) -> float:
    """numerator / 2^exponent correctly rounded (CPython's int / int and int -> float are),
    an infinity where it lies beyond float64's range."""
    try:
        if exponent >= 0:
            return numerator / (1 << exponent)
        return float(numerator << -exponent)
    except OverflowError:
        return math.inf


def _iroot(n: int, q: int) -> int:
    """floor(n^(1/q)) for an integer n >= 0, q >= 2 (Newton's method from above)."""
    if n < 2:
        return n
    if q == 2:
        return math.isqrt(n)
    x = 1 << -(-n.bit_length() // q)    # 2^ceil(bits / q) > n^(1/q)
    while True:
        y = ((q - 1) * x + n // x ** (q - 1)) // q
        if y >= x:
            return x
        x = y


def pnorm(values: Iterable[float], p: float = 2.0) -> float:
    """||values||_p of floats, correctly rounded for p = inf and every integer p >= 1 (the
    exact sum of |v|^p as one integer over 2^(p E), its p-th root to 64+ bits and a sticky
    bit, rounded once), else the nearest double of an mpmath evaluation at
    DETERMINISTIC_BITS bits.  The same double on every machine, unlike np.linalg.norm
    (BLAS, SIMD reductions).  inf where the norm is beyond float64's range."""
    mags = [abs(float(v)) for v in values if v]
    if not mags:
        return 0.0
    if not all(m < math.inf for m in mags):
        return math.inf
    if p == math.inf:
        return max(mags)
    if p != int(p):
        terms = [_CTX.mpf(m) ** _CTX.mpf(p) for m in mags]
        return to_nearest(_CTX.fsum(terms) ** (1 / _CTX.mpf(p)))
    q = int(p)
    ratios = [m.as_integer_ratio() for m in mags]     # m = n / 2^k
    top = max(d.bit_length() - 1 for _, d in ratios)
    total = sum((n << (top - d.bit_length() + 1)) ** q for n, d in ratios)  # sum m^q 2^(q top)
    if q == 1:
        return _ratio_float(total, top)
    shift = max(0, 66 - total.bit_length() // q)
    scaled = total << (q * shift)
    root = _iroot(scaled, q)                           # floor(norm 2^(top + shift))
    if root ** q == scaled:
        return _ratio_float(root, top + shift)
    # root < exact < root + 1 with root >= 2^64: exact and root + 1/2 round alike
    return _ratio_float(2 * root + 1, top + shift + 1)


def exact_dot(a: Iterable[float], b: Iterable[float]) -> float:
    """sum_i a_i b_i of floats, computed exactly and correctly rounded."""
    total = sum((Fraction(float(x)) * Fraction(float(z)) for x, z in zip(a, b) if x and z),
                Fraction(0))
    return float_or_inf(total)


def fsum(values: Iterable[float]) -> float:
    """math.fsum (the correctly rounded sum of the floats), an infinity of its sign where
    the sum of finite values overflows (where math.fsum raises OverflowError), and the IEEE
    sum of the non-finite terms where there are any (nan for inf and -inf together, where
    math.fsum raises ValueError)."""
    terms = [float(v) for v in values]
    special = [t for t in terms if not math.isfinite(t)]
    if special:
        return sum(special)
    try:
        return math.fsum(terms)
    except OverflowError:
        return math.inf if math.fsum(math.ldexp(v, -64) for v in terms) > 0 else -math.inf


def fsum_dot(a: Iterable[float], b: Iterable[float]) -> float:
    """sum_i fl(a_i b_i), the products rounded once each and summed correctly rounded
    (``fsum``): deterministic, as accurate as any BLAS dot and faster than ``exact_dot``."""
    return fsum(float(x) * float(z) for x, z in zip(a, b))


def _rows(M: Any) -> Any:
    """A matrix or vector (numpy array, nested lists) as nested Python lists of floats."""
    return M.tolist() if hasattr(M, "tolist") else M


def matmul(A: Any, B: Any) -> Any:
    """A @ B (2-d, or a 1-d vector on either side; numpy arrays or nested lists), each
    entry ``fsum_dot`` of a row and a column: the same doubles on every machine, as nested
    lists (a list for a vector result, a float for two vectors).  No numpy here: the
    reference imports this module without it."""
    a, b = _rows(A), _rows(B)
    left = not a or not isinstance(a[0], list)
    right = not b or not isinstance(b[0], list)
    rows = [a] if left else a
    cols = [b] if right else [list(c) for c in zip(*b)]
    out = [[fsum_dot(r, c) for c in cols] for r in rows]
    if left and right:
        return out[0][0]
    if left:
        return out[0]
    if right:
        return [row[0] for row in out]
    return out


def to_nearest(value: Any) -> float:
    """An mpmath number as the nearest double (mpf's own float() may truncate)."""
    return float(mpmath.libmp.to_float(value._mpf_, rnd=mpmath.libmp.round_nearest))


def power(base: float, exponent: float) -> float:
    """base ** exponent (base >= 0) as the nearest double of an mpmath evaluation at
    DETERMINISTIC_BITS bits: a pure-Python result, where ``**`` and np.power call the
    platform's libm or SIMD code (SVML on AVX-512), whose last bits vary.  inf beyond
    float64's range."""
    base, exponent = float(base), float(exponent)
    if exponent == int(exponent) and abs(exponent) <= 64:
        if base == 0 and exponent < 0:
            return math.inf
        return float_or_inf(Fraction(base) ** int(exponent))
    if base == 0:
        return 0.0 if exponent > 0 else math.inf
    if base == math.inf:
        return math.inf if exponent > 0 else 0.0
    return to_nearest(_CTX.mpf(base) ** _CTX.mpf(exponent))


def largest_eigenvalue(Q: Any) -> float:
    """An upper bound on the largest eigenvalue of a symmetric float64 matrix (a numpy array
    or nested lists), the same on every machine: mpmath's eigsy at DETERMINISTIC_BITS bits
    (pure Python, unlike LAPACK's eigvalsh), plus 2^-(DETERMINISTIC_BITS - 16) times the
    Frobenius norm for its error, rounded up.  inf for a matrix with a non-finite entry."""
    rows = [[float(v) for v in row] for row in _rows(Q)]
    entries = [v for row in rows for v in row]
    if not all(math.isfinite(v) for v in entries):
        return math.inf
    if not any(entries):
        return 0.0
    eigenvalues = _CTX.eigsy(_CTX.matrix(rows), eigvals_only=True)
    frobenius = _CTX.sqrt(_CTX.fsum(_CTX.mpf(v) ** 2 for v in entries))
    top = max(eigenvalues) + _CTX.ldexp(frobenius, -(DETERMINISTIC_BITS - 16))
    return float(mpmath.libmp.to_float(top._mpf_, rnd=mpmath.libmp.round_up))
