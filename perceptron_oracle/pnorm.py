"""The p-norm link, exact: the norm, f^-1 and f of SPEC.md sections 12 and 15, written once.

For p >= 2 and its dual exponent q = p/(p-1) (Lemma 3 of Ishibashi, Hatano & Takeda 2008;
Gentile 2001, ALMA_p; the HO paper's g, Brotto, Gentile & Vitale 2007, section 2 item 3):

    ||v||_p      = (sum_i |v_i|^p)^(1/p)                                   ``norm``
    f^-1(th)_i   = sign(th_i) |th_i|^(p-1) / ||th||_p^(p-2)                ``link_inverse``
                 = the gradient of ||th||_p^2 / 2 (HO's g; f^-1(0) = 0, identity at p = 2)
    f(w)_i       = sign(w_i) |w_i|^(q-1) / ||w||_q^(q-2)                   ``link``
                 = f^-1 with the dual exponent

Pure Python (Fraction, mpmath through the ``ctx`` the caller passes): the reference imports
this module and must import without numpy (``reference/__init__``); the float64 forms of the
same three maps are ``pnorm_float`` (numpy), and the compiled ones live in ``fast._numba``
under the same names.

Two roundings of f^-1 are kept, because the references' results must stay what they are:

- ``link_inverse(theta, p, ctx)`` (ALMA, SPEC.md 15): every step in mpmath, the normaliser
  ||th||_p^(p-2) as a power of ``norm``;
- ``link_inverse(theta, p, ctx, rational=True)`` (the p-norm Perceptron and HO, SPEC.md
  12): sign(t)|t|^(p-1) exact (a Fraction) when t is rational and p an integer, and the
  normaliser one power of the exact sum (``normaliser``), so the p-norm Perceptron decides
  its integer-p trials on an exact numerator.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def to_mpf(value: Any, ctx: Any) -> Any:
    """``value`` (a Fraction or a number mpmath takes) as an mpf of ``ctx``."""
    if isinstance(value, Fraction):
        return ctx.mpf(value.numerator) / value.denominator
    return ctx.mpf(value)


def signed_power(value: Any, q: Fraction, ctx: Any) -> Any:
    """sign(value) |value|^q: exact (a Fraction) when value is rational and q an integer."""
    if value == 0:
        return Fraction(0)
    if isinstance(value, Fraction) and q.denominator == 1:
        mag = abs(value) ** int(q)
    else:
        mag = ctx.power(abs(to_mpf(value, ctx)), to_mpf(q, ctx))
    return mag if value > 0 else -mag


def norm(values: list[Any], p: Fraction, ctx: Any) -> Any:
    """||v||_p = (sum_i |v_i|^p)^(1/p), in mpmath (p = 2: the square root of the sum of
    squares)."""
    if p == 2:
        return ctx.sqrt(sum((to_mpf(v, ctx) ** 2 for v in values), ctx.mpf(0)))
    pm = to_mpf(p, ctx)
    total = sum((ctx.power(abs(to_mpf(v, ctx)), pm) for v in values if v), ctx.mpf(0))
    return ctx.power(total, 1 / pm) if total else ctx.mpf(0)


def normaliser(theta: list[Any], p: Fraction, ctx: Any) -> Any:
    """||theta||_p^(p-2), f^-1's denominator, as one power of sum_i |theta_i|^p (that sum
    exact for rational theta and an integer p); 1 for p = 2; an mpf otherwise."""
    if p == 2:
        return Fraction(1)
    total = sum((signed_power(abs(t), p, ctx) for t in theta), Fraction(0))
    if total == 0:
        return Fraction(0)
    return ctx.power(to_mpf(total, ctx), to_mpf((p - 2) / p, ctx))


def link_inverse(theta: list[Any], p: Fraction, ctx: Any, rational: bool = False
                 ) -> list[Any]:
    """f^-1(th)_i = sign(th_i)|th_i|^(p-1) / ||th||_p^(p-2) (Lemma 3; HO's g); f^-1(0) = 0
    and p = 2 returns th itself.  ``rational``: the powers by ``signed_power`` over
    ``normaliser`` (the p-norm Perceptron's and HO's rounding), else all in mpmath over
    ``norm`` (ALMA's); the module docstring says why both are kept."""
    if p == 2:
        return list(theta)
    if rational:
        scale = normaliser(theta, p, ctx)
        if scale == 0:
            return [Fraction(0)] * len(theta)
        return [signed_power(t, p - 1, ctx) / scale for t in theta]
    n = norm(theta, p, ctx)
    if not n:
        return [ctx.mpf(0)] * len(theta)
    pm = to_mpf(p, ctx)
    scale = ctx.power(n, pm - 2)
    return [ctx.sign(t) * ctx.power(abs(t), pm - 1) / scale if t else ctx.mpf(0)
            for t in theta]


def link(w: list[Any], p: Fraction, ctx: Any) -> list[Any]:
    """f(w)_i = sign(w_i)|w_i|^(q-1) / ||w||_q^(q-2), q = p/(p-1): the inverse of
    ``link_inverse`` (f^-1 with the dual exponent)."""
    return link_inverse(w, p / (p - 1), ctx)
