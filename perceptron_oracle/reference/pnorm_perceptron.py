"""The p-norm (dual-norm) Perceptron, exact.  SPEC.md, "higher_order" (the p-norm part).

Grove, Littlestone & Schuurmans' p-norm Perceptron as the Higher-Order Perceptron paper uses it
(Brotto, Gentile & Vitale 2007, section 2 item 3 with B = I; HO_p(0) of section 4):

    score_t = g(v).x_t,   g(theta)_i = sign(theta_i) |theta_i|^(p-1) / ||theta||_p^(p-2)
    mistake iff y_t score_t <= 0;   on a mistake  v += y_t x_t

with v_0 = 0, g the gradient of ||theta||_p^2 / 2 (g(0) = 0) and p >= 2 (p = 2: g = identity,
the Perceptron).  Linear kernel only.  Instances are taken as given (normalising to unit p-norm
is the caller's named preprocessing step; the CLI does it by default).

Exactness.  The normaliser ||v||_p^(p-2) is positive, so the sign of the score is the sign of
the *numerator* N(v, x) = sum_i sign(v_i)|v_i|^(p-1) x_i.  For an integer p that numerator is
rational: the reference computes it in Fraction and decides every trial exactly (ties
included).  For a non-integer p it is computed in mpmath (``number_context()``) together with
a bound E_P on its own rounding error at the context's precision; |N| <= E_P is taken as a tie
(score 0, a mistake) and is always flagged fragile.  The reported score is N / ||v||_p^(p-2)
(an mpf, or an exact Fraction when p = 2 or N = 0).

``final``: ``v`` (the sum vector, exact rationals) and ``w`` = g(v) (Fractions for p = 2,
else mpf values written exactly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import parse_kernel
from ..numbers import number_context
from ..params import ParamSchema
from ..pnorm import link_inverse, normaliser, signed_power, to_mpf
from ..rounding import (
    ANY_STATE,
    SMALLEST_SUBNORMAL,
    float_or_inf,
    fsum,
    linear_sums_exact,
    magnitude_float,
    power,
    score_error_bound,
)
from ..trace import Trace
from .common import TrialRecord, check_epochs, exact_data, norm_param


@dataclass(frozen=True)
class PnormPerceptronParams:
    """The p-norm Perceptron's parameter, read and checked by ``PARAMS``.

    ``p``: the norm parameter, p >= 2: w = g(v), g the gradient of ||.||_p^2 / 2 (section 2
    item 3); p = 2 is the Perceptron.
    """

    p: Fraction


PARAMS = ParamSchema(
    norm_param("norm parameter: w = g(v), g the gradient of ||.||_p^2 / 2 (section 2 "
               "item 3); p = 2 is the Perceptron"),
    dataclass_type=PnormPerceptronParams,
)

#: mpmath's own error allowance: a computed numerator within this many of its rounding
#: errors of 0 is a tie (see the module docstring).
SAFETY_P = 4


# -- the numerator of g(v).x (g = f^-1: ``pnorm.link_inverse``, rational=True) --------------
def is_integer(p: Fraction) -> bool:
    return p.denominator == 1


def numerator(theta: list[Any], z: list[Any], p: Fraction, ctx: Any) -> Any:
    """N = sum_i sign(theta_i)|theta_i|^(p-1) z_i: g(theta).z times ||theta||_p^(p-2) > 0."""
    return sum((signed_power(t, p - 1, ctx) * zi for t, zi in zip(theta, z) if t and zi),
               Fraction(0))




def own_error(p: Fraction, operations: int, theta: list[Any], z: list[Any], ctx: Any) -> Any:
    """E_P: the reference's own rounding allowance for an mpmath numerator (module doc),
    on the magnitude sum_i |theta_i|^(p-1) |z_i| taken in mpmath too (a float64 one may
    underflow where mpmath's numbers do not)."""
    magnitude = numerator([abs(a) for a in theta], [abs(b) for b in z], p, ctx)
    return (ctx.mpf(SAFETY_P) * (to_mpf(p, ctx) + 1) ** 2 * operations * magnitude
            * ctx.ldexp(1, -ctx.prec))


def pnorm_magnitude(theta_abs: list[float], z_abs: list[float], p: Fraction,
                    scale: float) -> float:
    """The fragile rule's magnitude for a p-norm score (SPEC.md, the higher_order chapter,
    "Fragile trials and final-state bounds"): (p + 1) *
    sum_i Theta_i^(p-1) Z_i / ||theta||_p^(p-2), Theta >= |theta| and Z >= |z| the
    componentwise magnitudes a float64 evaluation works with.  It is 0 only if every term
    is: a term that underflows counts as the smallest subnormal (score_error_bound's
    underflow allowance then applies)."""
    q = float(p) - 1
    total = 0.0
    for t, zz in zip(theta_abs, z_abs):
        if t and zz:   # rounding.power: the same double on every machine (inf beyond range)
            total += power(t, q) * zz or SMALLEST_SUBNORMAL
    if p == 2:
        return total
    if scale == 0 or scale == float("inf"):
        return float("inf") if total else 0.0
    return (float(p) + 1) * total / scale or (SMALLEST_SUBNORMAL if total else 0.0)


# -- the algorithm ------------------------------------------------------------------------
def pnorm_perceptron(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
                     p: Any = 2, record_scores: bool = False) -> Trace:
    """Run the p-norm Perceptron over ``epochs`` passes of (X, y); returns the exact trace."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    if not kern.is_linear:
        raise ParamError("pnorm_perceptron takes the linear kernel only")
    par = PARAMS.read(dict(p=p))
    p = par.p
    ctx = number_context()
    T, n = len(rows), len(rows[0])
    abs_rows = [[abs(float(v)) for v in row] for row in rows]
    exact_floats = p == 2 and _perceptron_is_exact(rows, epochs * T)

    v = [Fraction(0)] * n
    v_abs = [0.0] * n
    norm: Any = Fraction(1)      # ||v||_p^(p-2), recomputed when v changes
    k = 0
    record = TrialRecord(labels, epochs, record_scores)
    for t, j, label in record.trials():
        x = rows[j]
        num = numerator(v, x, p, ctx)
        ops = k + n + 16
        scale = float(norm) if p != 2 else 1.0
        magnitude = pnorm_magnitude(v_abs, abs_rows[j], p, scale)
        if not isinstance(num, Fraction) and abs(num) <= own_error(p, ops, v, x, ctx):
            num = Fraction(0)  # a tie at the reference's precision
        score = (Fraction(0) if num == 0 else num if p == 2 else to_mpf(num, ctx) / norm)
        record.score(score)
        if not exact_floats:
            err = score_error_bound(ops, magnitude_float(magnitude))
            if err and abs(float_or_inf(score)) <= err:
                record.fragile.append(t)
        if record.decide(t, label * num <= 0):
            record.mistakes.append(t)
            k += 1
            v = [a + label * b for a, b in zip(v, x)]
            v_abs = [a + b for a, b in zip(v_abs, abs_rows[j])]
            norm = normaliser(v, p, ctx)

    final = {"w": link_inverse(v, p, ctx, rational=True), "v": v}
    return record.trace("pnorm_perceptron", kern, PARAMS.as_dict(par), final,
                        updates=list(record.mistakes))


def _perceptron_is_exact(rows: list[list[Fraction]], max_updates: int) -> bool:
    """p = 2: float64 computes every v.x exactly (all data on a dyadic grid, sums small)."""
    return linear_sums_exact(rows, max_updates)


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """Bounds on |float - exact| for ``final.v`` and ``final.w`` (SPEC.md, the higher_order
    chapter, "Fragile trials and final-state bounds").

    v_i is a sum of K signed x_ti: K + 8 roundings of magnitude V_i = sum |x_ti| over the
    mistakes.  w = g(v): the fragile rule's argument per coordinate, magnitude
    (p + 1) V_i^(p-1) / ||v||_p^(p-2), plus the normaliser's relative error
    (p - 2) gamma_K sum_i V_i^p / ||v||_p^p times |w_i|.
    """
    rows = (X.toarray() if hasattr(X, "toarray") else X)
    rows = [[abs(float(v)) for v in row] for row in (rows.tolist() if hasattr(rows, "tolist")
                                                     else rows)]
    T, n = len(rows), len(rows[0])
    p = PARAMS.read(trace.params).p
    K = len(trace.mistakes)
    v_abs = [0.0] * n
    for t in trace.mistakes:
        v_abs = [a + b for a, b in zip(v_abs, rows[t % T])]
    v, w = trace.final["v"], trace.final["w"]
    v_bounds = [score_error_bound(K + 8, magnitude_float(a) if a else
                                  (SMALLEST_SUBNORMAL if v[i] else 0.0))
                for i, a in enumerate(v_abs)]
    if p == 2:
        return {"final.v": v_bounds, "final.w": list(v_bounds)}
    ops = K + n + 16
    pf = float(p)
    # The magnitude is homogeneous of degree 1 in (v, V): computed on v / top and V / top,
    # top = max |v_i|, and scaled back, so that |v_i|^p does not underflow (v ~ 1e-100 at
    # p = 7 made the bound 0); ANY_STATE where it leaves float64's range
    top = max(abs(float(a)) for a in v)
    if not top:
        # v = 0 exactly, a float64 v within v_bounds: |g(v)_i| <= ||g(v)||_q = ||v||_p, at
        # most the sum of v's bounds (found: a + 1 - 1 - a, a = 0.046875000046875, left
        # v_3 = -2^-54 and w_3 = g(v)_3 = v_3 where the bound was 0)
        total = 2 * math.fsum(v_bounds)
        return {"final.v": v_bounds, "final.w": [total] * n}
    vs = [abs(float(a)) / top for a in v]
    Vs = [a / top for a in v_abs]
    # powers by rounding.power and sums by math.fsum: the same doubles on every machine
    # (SPEC.md, "Portable golden files"); a power beyond float64's range is inf
    norm_p = fsum(power(a, pf) for a in vs)
    scale = power(norm_p, (pf - 2) / pf) if norm_p else 0.0
    total = fsum(power(a, pf) for a in Vs)   # inf for terms far above |v|: rel inf, the
    #                                          normaliser may be anything
    rel = ((pf - 2) * score_error_bound(K + 8, 1.0) * total / norm_p if norm_p else 0.0)
    w_bounds = []
    for i, wi in enumerate(w):
        mag = top * pnorm_magnitude([Vs[i]], [1.0], p, scale) if scale else 0.0
        bound = score_error_bound(ops, magnitude_float(mag) if mag or not wi
                                  else SMALLEST_SUBNORMAL)
        if wi:
            bound += 2 * rel * abs(float(wi))
        w_bounds.append(bound if bound < ANY_STATE else ANY_STATE)
    return {"final.v": v_bounds, "final.w": w_bounds}
