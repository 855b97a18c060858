"""The reference's number context: exact rationals, or mpmath at a stated precision.

Rational algorithms (the Perceptron with a linear or polynomial kernel, HO_2, SOP, ROMMA and
PUMMA with p = 2) run in ``fractions.Fraction`` and never round.  Where an algorithm needs a
transcendental function (the Gaussian kernel, p-norms with p not an even integer) the
reference computes in mpmath at ``prec`` bits.  The precision is *passed*, never set on
mpmath's global ``mp``: :func:`number_context` returns a private ``MPContext`` and
:func:`precision` scopes a default through a context variable (SPEC.md, "Number context").
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, TypeVar

import mpmath

from .errors import DataError

#: Default working precision, in bits, of the mpmath parts of the reference.
DEFAULT_PRECISION = 256

_precision: contextvars.ContextVar[int] = contextvars.ContextVar(
    "perceptron_oracle_precision", default=DEFAULT_PRECISION
)

Exact = int | Fraction
_T = TypeVar("_T")
_RATIONAL = re.compile(r"([+-]?)([0-9]+)(?:/([0-9]+))?")          # matched whole, ASCII digits
_DECIMAL = re.compile(r"[+-]?([0-9]*)\.?([0-9]*)(?:[eE]([+-]?[0-9]+))?")

#: The most digits one integer of an exact number may have: the numerator or the denominator
#: of "p/q", or a JSON integer in a trace (SPEC.md section 5).  The largest in any golden case
#: has 16,708 (ROMMA's w on romma_pumma.json case 6); the limit leaves a factor of six.  It
#: bounds the work of reading one number: Python's int() and gcd are quadratic in the digits,
#: and a decimal such as "1e999999999" would otherwise build a billion-digit power of ten.
MAX_EXACT_DIGITS = 100_000


@contextlib.contextmanager
def scoped(variable: contextvars.ContextVar[_T], value: _T) -> Iterator[None]:
    """``variable`` holds ``value`` inside the block and its former value after it (the
    scoped precision here, ``fast.driver.forced_updates``)."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


@contextlib.contextmanager
def precision(bits: int) -> Iterator[None]:
    """Scope the default mpmath precision (bits) of every reference run inside the block."""
    if int(bits) < 53:
        raise ValueError(f"precision must be at least 53 bits, got {bits}")
    with scoped(_precision, int(bits)):
        yield


def current_precision() -> int:
    return _precision.get()


def number_context(bits: int | None = None) -> mpmath.ctx_mp.MPContext:
    """A private mpmath context at ``bits`` (default: the scoped precision)."""
    ctx = mpmath.MPContext()
    ctx.prec = current_precision() if bits is None else int(bits)
    return ctx


def is_mpf(value: object) -> bool:
    """Whether ``value`` is an mpmath real (``mpf``) of any context.  mpmath gives every
    ``MPContext`` its own ``mpf`` type (``ctx.mpf``), so ``isinstance(value, mpmath.mpf)``
    holds for the global context's numbers only, not for :func:`number_context`'s."""
    ctx = getattr(value, "context", None)
    return isinstance(ctx, mpmath.MPContext) and isinstance(value, ctx.mpf)


def to_fraction(value: object) -> Fraction:
    """The exact rational value of ``value``.

    A float is taken as the double it is (every float64 is a rational); a string is read as
    written: ``"0.1"`` is 1/10, ``"1/3"`` is 1/3.  An mpmath ``mpf`` is a dyadic rational and
    converts exactly.  NaN and infinities are rejected.
    """
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number here")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        return Fraction(value)
    if isinstance(value, str):
        text = value.strip()
        if _RATIONAL.fullmatch(text):
            return parse_rational(text)
        decimal = _DECIMAL.fullmatch(text)
        if decimal and (decimal.group(1) or decimal.group(2)):
            digits = len(decimal.group(1)) + len(decimal.group(2))
            exponent = decimal.group(3) or "0"
            if digits > MAX_EXACT_DIGITS or len(exponent) > 12 or \
                    digits + abs(int(exponent)) > MAX_EXACT_DIGITS:
                raise ValueError(f"{_clip(text)} has more than {MAX_EXACT_DIGITS} digits "
                                 "written out, the limit for one exact number")
            return Fraction(text)
        raise ValueError(f"not an exact number: {_clip(text)} (use an integer, a decimal or "
                         "p/q)")
    if is_mpf(value):
        if not mpmath.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        real: Any = value
        man, exp = real.man_exp  # |value| = man * 2^exp
        digits = int(abs(exp) * math.log10(2)) + 1  # of 2^|exp|, in p/q's numerator or q
        if digits > MAX_EXACT_DIGITS:  # exp(-1e120): a Fraction of 1e120 bits, never made
            raise DataError(
                f"an exact value of about {digits:.3g} digits, more than the "
                f"{MAX_EXACT_DIGITS:,} a trace holds: the data's scale is beyond the exact "
                "reference here (far-apart rows under the Gaussian kernel: normalise the "
                "instances or lower gamma)")
        exact: Fraction = Fraction(-man if real < 0 else man) * (Fraction(2) ** exp)
        return exact
    if hasattr(value, "__float__") and type(value).__module__ == "numpy":
        return to_fraction(float(value))  # numpy scalars: the double they hold
    raise TypeError(f"cannot read {value!r} as an exact number")


def is_rational_string(text: str) -> bool:
    """``"p/q"`` or ``"p"``: an optional sign, ASCII digits, nothing around them."""
    return _RATIONAL.fullmatch(text) is not None


def parse_rational(text: str, max_digits: int = MAX_EXACT_DIGITS) -> Fraction:
    """The Fraction that ``"p/q"`` or ``"p"`` writes.  ValueError, naming the problem, for
    anything else, a zero denominator, or a numerator or denominator of more than
    ``max_digits`` digits (checked before any conversion, so a refusal costs nothing)."""
    match = _RATIONAL.fullmatch(text)
    if match is None:
        raise ValueError(f"not an exact number: {_clip(text)} (write p/q or p)")
    sign, numerator, denominator = match.groups()
    for part, digits in (("numerator", numerator), ("denominator", denominator or "")):
        if len(digits) > max_digits:
            raise ValueError(f"an exact number whose {part} has {len(digits)} digits (the limit "
                             f"is {max_digits}): {_clip(text)}")
    q = _parse_int(denominator) if denominator is not None else 1
    if q == 0:
        raise ValueError(f"an exact number with denominator 0: {_clip(text)}")
    p = _parse_int(numerator)
    return Fraction(-p if sign == "-" else p, q)


def parse_integer(text: str, max_digits: int = MAX_EXACT_DIGITS) -> int:
    """A decimal integer (optional sign, ASCII digits) of at most ``max_digits`` digits, read
    in chunks beyond Python's 4300-digit limit; ValueError otherwise."""
    match = _RATIONAL.fullmatch(text)
    if match is None or match.group(3) is not None:
        raise ValueError(f"not an integer: {_clip(text)}")
    sign, digits, _ = match.groups()
    if len(digits) > max_digits:
        raise ValueError(f"an integer of {len(digits)} digits (the limit is {max_digits})")
    n = _parse_int(digits)
    return -n if sign == "-" else n


def _clip(text: str, width: int = 40) -> str:
    """``repr(text)``, cut to about ``width`` characters for an error message."""
    return repr(text) if len(text) <= width else repr(text[:width]) + f"... ({len(text)} chars)"


def format_exact(value: Exact) -> str:
    """``"p/q"``, or ``"p"`` for an integer: the exact-number form of the trace (SPEC.md
    section 5)."""
    value = Fraction(value)
    if value.denominator == 1:
        return _format_int(value.numerator)
    return f"{_format_int(value.numerator)}/{_format_int(value.denominator)}"


#: The longest numerator or denominator :func:`brief` writes out in full, in bits (about 60
#: decimal digits).
BRIEF_BITS = 200


def brief(value: object, digits: int = 6) -> str:
    """A number for a message, short whatever its size and never formatted whole: ``"p/q
    (~1.5)"`` or ``"p"`` while p and q have at most BRIEF_BITS bits; beyond, its size and
    a decimal approximation to ``digits`` significant digits, e.g. ``"an integer of about
    3,010,300 digits (~9.04382e+3010299)"``, from ``int.bit_length`` and the leading bits
    (no decimal string of the whole number is built, so neither time nor Python's
    int_max_str_digits limit is an issue).  A float is its repr; anything that is not a
    number, a clipped repr."""
    if isinstance(value, float):
        return repr(value)
    try:
        exact = to_fraction(value)
    except (TypeError, ValueError, ArithmeticError, DataError):
        return _clip(repr(value)) if not isinstance(value, str) else _clip(value)
    p, q = exact.numerator, exact.denominator
    approx = _approximate(p, q, digits)
    if max(p.bit_length(), q.bit_length()) <= BRIEF_BITS:
        text = format_exact(exact)
        return text if q == 1 else f"{text} (~{approx})"
    size = _digits(p)
    if q == 1:
        return f"an integer of about {size:,} digits (~{approx})"
    return f"an exact number p/q of about {size:,} / {_digits(q):,} digits (~{approx})"


def _digits(n: int) -> int:
    """The decimal digits of ``abs(n)``, from its bit length: exact up to 100,000 bits,
    beyond that exact or one too many (10^d, the check, would cost more than it says)."""
    n = abs(n)
    d = max(1, int(n.bit_length() * math.log10(2)))   # 10^(d-1) <= n, or n < 10
    if n.bit_length() > 100_000:
        return d + 1
    return d + 1 if n >= 10 ** d else d


def approximate(value: Fraction, digits: int = 6) -> str:
    """``value`` to ``digits`` significant digits, whatever its size (from the leading bits
    of its numerator and denominator, as :func:`brief`)."""
    return _approximate(value.numerator, value.denominator, digits)


def _approximate(p: int, q: int, digits: int) -> str:
    """p/q to ``digits`` significant digits, from the leading 64 bits of p and q."""
    if p == 0:
        return "0"
    sign, p = ("-" if p < 0 else ""), abs(p)
    if max(p.bit_length(), q.bit_length()) <= 4 * BRIEF_BITS:
        try:
            nearest = p / q     # correctly rounded
        except OverflowError:
            nearest = 0.0
        if nearest:
            return f"{sign}{nearest:.{digits}g}"
    p_shift, q_shift = max(p.bit_length() - 64, 0), max(q.bit_length() - 64, 0)
    ratio = (p >> p_shift) / (q >> q_shift)
    exponent2 = p_shift - q_shift
    log10 = math.log10(ratio) + exponent2 * math.log10(2)
    exponent10 = math.floor(log10)
    mantissa = 10 ** (log10 - exponent10)
    if float(f"{mantissa:.{digits - 1}f}") >= 10:
        mantissa, exponent10 = mantissa / 10, exponent10 + 1
    return f"{sign}{mantissa:.{digits - 1}f}e{exponent10:+d}"


# Python refuses str(int) and int(str) beyond 4300 digits (a guard against slow quadratic
# conversions of untrusted input); exact states do outgrow that (HO with a constant rho, long
# ROMMA runs in Fraction), so numbers are converted in chunks of _CHUNK digits instead of
# raising the interpreter-wide limit.
_CHUNK = 4000


_CHUNK_POWER = 10 ** _CHUNK


def _format_int(n: int) -> str:
    if n.bit_length() <= 13_000 or abs(n) < _CHUNK_POWER:   # 10^4000 has 13,288 bits
        return str(n)
    sign, n = ("-" if n < 0 else ""), abs(n)
    parts = []
    while n >= _CHUNK_POWER:
        n, low = divmod(n, _CHUNK_POWER)
        parts.append(str(low).zfill(_CHUNK))
    return sign + str(n) + "".join(reversed(parts))


def _parse_int(text: str) -> int:
    if len(text) <= _CHUNK:
        return int(text)
    sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
    head = len(digits) % _CHUNK or _CHUNK
    n = int(digits[:head])
    for i in range(head, len(digits), _CHUNK):
        n = n * _CHUNK_POWER + int(digits[i:i + _CHUNK])
    return sign * n
