"""The Second-Order Perceptron's float64 error model (SPEC.md 13.5): the stated fragile rule
a run applies trial by trial (``FragileRule``) and the final-state bounds of a trace
(``state_bounds``; ``reference.second_order.final_error_bounds`` resolves the parameters).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Protocol

from ..kernels import Kernel, parse_kernel
from ..rounding import (
    ANY_STATE,
    SMALLEST_SUBNORMAL,
    UNIT_ROUNDOFF,
    float_or_inf,
    magnitude_float,
    within,
)
from ..trace import Trace
from .common import Gram, exact_data
from .second_order_engines import FRAGILE_FACTOR, Pinv, RegulariserParams, a_k


class SecondOrderBoundParams(RegulariserParams, Protocol):
    """What the final-state bounds read of ``second_order.SecondOrderParams`` (which this
    module cannot import: ``second_order`` imports it): a, its growth and the
    pseudoinverse."""

    @property
    def pseudoinverse(self) -> bool: ...


class FragileRule:
    """The stated fragile rule (SPEC.md): with k mistakes so far, m = (n + 8) depth + 8 + k
    operations, kappa = (a + tr C) / a (a = a_k; the pseudoinverse: the condition of its
    state) and M = sqrt(k(x_t, x_t)) ||v|| + k max_i |k(x_i, x_t)|, trial t is fragile iff
    |s| <= 64 u m (k + 1) kappa M / a (||C^+|| in units of the mean k(x_i, x_i) for the
    pseudoinverse).  A pseudoinverse rank decision float64 may take the other way flags its
    trial and every later one; s = 0 outside span(X) is structural, never fragile."""

    def __init__(self, gram: Gram, labels: list[int], pseudoinverse: bool):
        self.gram, self.labels, self.pseudoinverse = gram, labels, pseudoinverse
        n = len(gram.rows[0])
        self.ops_base = (n + 8) * gram.kernel.depth + 8
        self.support: list[int] = []  # the example of each mistake, in order
        self.distinct: set[int] = set()
        self.V2 = 0.0  # ||v||^2 in feature space (a magnitude: float is enough)
        self.trC = 0.0  # trace of X X^T: sum of k(x_i, x_i) over the mistakes
        self.ambiguous_from: int | None = None  # pseudoinverse: an undecidable rank

    def flags(self, t: int, j: int, s: Any, state: Any) -> bool:
        """Whether trial t (example j, exact s, the state before any mistake) is fragile."""
        gram, k = self.gram, len(self.support)
        c = gram(j, j)
        ops = self.ops_base + k
        kmag = max((gram.magnitude(i, j) for i in self.distinct), default=0.0)
        if self.pseudoinverse:
            kappa = state.condition()
            if self.ambiguous_from is None and state.rank_ambiguous(ops):
                self.ambiguous_from = t
            scale = k / self.trC if self.trC else 1.0
        else:
            a_now = float(state.a)
            kappa = (a_now + self.trC) / a_now
            scale = 1.0 / a_now
        if self.ambiguous_from is not None:
            return True
        if self.pseudoinverse and not state.inside:
            return False  # s = 0 by structure (x_t outside span(X)), not by cancellation
        M = math.sqrt(magnitude_float(abs(c)) * max(self.V2, 0.0)) + k * kmag
        err = FRAGILE_FACTOR * UNIT_ROUNDOFF * ops * (k + 1) * kappa * scale * M
        if M:  # products that underflow (section 3): a score of 1e-600 is 0 in float64
            err += ops * (k + 1) * SMALLEST_SUBNORMAL
        return bool(err and within(s, err))

    def mistake(self, j: int, label: int) -> None:
        """Add the mistake on example j: ||v||^2 and tr C grow (before the state's update)."""
        gram, c = self.gram, self.gram(j, j)
        vx = sum(self.labels[i] * float_or_inf(gram(i, j)) for i in self.support)
        self.V2 = self.V2 + 2 * label * vx + float_or_inf(c)  # inf or NaN: undecidable
        self.trC += float(magnitude_float(abs(c)))
        self.support.append(j)
        self.distinct.add(j)


def pinv_replay(X: Any, support: list[int], kern: Kernel) -> tuple[float, bool]:
    """The pseudoinverse state's condition and whether a rank decision at a mistake was
    ambiguous, replayed from the mistakes alone (labels do not enter either)."""
    rows, _ = exact_data(X, [1] * (X.shape[0] if hasattr(X, "shape") else len(X)))
    gram = Gram(kern, rows)
    one = Fraction(1) if gram.ctx is None else gram.ctx.mpf(1)
    state = Pinv(gram, one, gram.ctx is None)
    ops_base = (len(rows[0]) + 8) * kern.depth + 8
    ambiguous = False
    for k, j in enumerate(support):
        _, q = state.score(j)
        ambiguous = ambiguous or state.rank_ambiguous(ops_base + k)
        state.mistake(j, 1, q)
    return state.condition(), ambiguous


def state_bounds(trace: Trace, X: Any, par: SecondOrderBoundParams) -> dict[str, Any]:
    """How far a float64 run's final state may lie from the exact one: a stated rule
    (SPEC.md), not a rigorous bound.  With K mistakes, a = a_{K+1}, kappa = (a + tr C) / a
    (||A^{-1}|| <= 1/a) and m = (n + 8) depth + K + 8 operations per value:

        w (and alpha):  64 u m (K + 1) (kappa + K kmax / a) ||v|| / a   (||y|| for alpha)
        v:              the Perceptron's rule on sum_i y_i x_i.
    """
    rows = [[abs(float(v)) for v in row] for row in (X.toarray() if hasattr(X, "toarray")
                                                     else X).tolist()]
    kern = parse_kernel(trace.kernel)
    support = trace.final["support"]
    K = len(support)
    n = len(rows[0])
    m = (n + 8) * kern.depth + K + 8
    mags = [kern.magnitude(rows[i], rows[i]) for i in support]
    kmax = max(mags, default=0.0)
    bounds: dict[str, Any] = {}
    if par.pseudoinverse:
        kappa, ambiguous = pinv_replay(X, support, kern)
        rel = ANY_STATE if ambiguous else \
            FRAGILE_FACTOR * UNIT_ROUNDOFF * m * (K + 1) * kappa * kappa
        scale = 1.0
    else:
        a = float(a_k(par, K + 1))
        kappa = (a + sum(mags)) / a
        rel = FRAGILE_FACTOR * UNIT_ROUNDOFF * m * (K + 1) * (kappa + K * kmax / a)
        scale = 1.0 / a
    if kern.is_linear:
        vmag = [sum(rows[i][c] for i in support) for c in range(n)]
        vnorm = math.sqrt(sum(v * v for v in vmag))
        bounds["final.v"] = [FRAGILE_FACTOR * UNIT_ROUNDOFF * (K + 8) * vm
                             + (K + 8) * SMALLEST_SUBNORMAL for vm in vmag]
        wb = min(ANY_STATE, rel * scale * vnorm + (K + 8) * SMALLEST_SUBNORMAL)
        if par.pseudoinverse:  # C^+ v has no a-priori scale: relative to the data's
            wb = min(ANY_STATE, rel * vnorm / max(kmax, SMALLEST_SUBNORMAL)
                     + (K + 8) * SMALLEST_SUBNORMAL)
        bounds["final.w"] = [wb] * n
    else:
        ab = min(ANY_STATE, rel * scale * math.sqrt(K) * (1 if not par.pseudoinverse
                                                          else 1 / max(kmax, SMALLEST_SUBNORMAL))
                 + (K + 8) * SMALLEST_SUBNORMAL)
        bounds["final.alpha"] = [ab] * K
    return bounds
