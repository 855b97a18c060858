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
from typing import Union

import mpmath
from mpmath.ctx_mp_python import _mpf

#: Default working precision, in bits, of the mpmath parts of the reference.
DEFAULT_PRECISION = 256

_precision: contextvars.ContextVar[int] = contextvars.ContextVar(
    "perceptron_oracle_precision", default=DEFAULT_PRECISION
)

Exact = Union[int, Fraction]
_RATIONAL = re.compile(r"^[+-]?\d+(/\d+)?$")
_DECIMAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


@contextlib.contextmanager
def precision(bits: int) -> Iterator[None]:
    """Scope the default mpmath precision (bits) of every reference run inside the block."""
    if int(bits) < 53:
        raise ValueError(f"precision must be at least 53 bits, got {bits}")
    token = _precision.set(int(bits))
    try:
        yield
    finally:
        _precision.reset(token)


def current_precision() -> int:
    return _precision.get()


def number_context(bits: int | None = None) -> mpmath.ctx_mp.MPContext:
    """A private mpmath context at ``bits`` (default: the scoped precision)."""
    ctx = mpmath.MPContext()
    ctx.prec = current_precision() if bits is None else int(bits)
    return ctx


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
        if _RATIONAL.match(text):
            numerator, _, denominator = text.partition("/")
            return Fraction(_parse_int(numerator), _parse_int(denominator or "1"))
        if _DECIMAL.match(text):
            return Fraction(text)
        raise ValueError(f"not an exact number: {value!r} (use an integer, a decimal or p/q)")
    if isinstance(value, _mpf):
        if not mpmath.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        sign, man, exp, _ = value._mpf_  # man_exp drops the sign: read it from _mpf_
        return Fraction(-man if sign else man) * (Fraction(2) ** exp)
    if hasattr(value, "__float__") and type(value).__module__ == "numpy":
        return to_fraction(float(value))  # numpy scalars: the double they hold
    raise TypeError(f"cannot read {value!r} as an exact number")


def is_rational_string(text: str) -> bool:
    return bool(_RATIONAL.match(text))


def format_exact(value: Exact) -> str:
    """``"p/q"``, or ``"p"`` for an integer: the exact-number form of the trace (CONTRACT.md)."""
    value = Fraction(value)
    if value.denominator == 1:
        return _format_int(value.numerator)
    return f"{_format_int(value.numerator)}/{_format_int(value.denominator)}"


# Python refuses str(int) and int(str) beyond 4300 digits (a guard against slow quadratic
# conversions of untrusted input); exact states do outgrow that (HO with a constant rho, long
# ROMMA runs in Fraction), so numbers are converted in chunks of _CHUNK digits instead of
# raising the interpreter-wide limit.
_CHUNK = 4000


def _format_int(n: int) -> str:
    if abs(n) < 10 ** _CHUNK:
        return str(n)
    sign, n = ("-" if n < 0 else ""), abs(n)
    parts = []
    while n >= 10 ** _CHUNK:
        n, low = divmod(n, 10 ** _CHUNK)
        parts.append(str(low).zfill(_CHUNK))
    return sign + str(n) + "".join(reversed(parts))


def _parse_int(text: str) -> int:
    if len(text) <= _CHUNK:
        return int(text)
    sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
    head = len(digits) % _CHUNK or _CHUNK
    n = int(digits[:head])
    for i in range(head, len(digits), _CHUNK):
        n = n * 10 ** _CHUNK + int(digits[i:i + _CHUNK])
    return sign * n
