"""The float64 error model of HO_p(c): fragile trials and final-state bounds.  SPEC.md 12.5.

Brotto, Gentile & Vitale, "On Higher-Order Perceptron Algorithms" (NIPS 2007), Figure 1.
A float64 form's score w_{k-1}.x_t is within SAFETY gamma_m M of the exact one, with
M = |x|^T |B|^T |B| |v| the magnitude of the absolute-value computation (identical for the
primal update of A, the dual recursions of D, h, g and the implicit unwrapping of B) and
m = (K + 2)(K + 2 (n + 8) d + 16) + 2 sum_i e_i (``operations``; e_i: the roundings in the
float value of rho_i, ``rho_roundings``).  ``ErrorModel`` applies that rule along a run (the
engines of ``reference.higher_order_engines`` carry the magnitudes); ``state_bounds``
rebuilds the same recursions from a trace for the final state.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Protocol

from ..kernels import Kernel, parse_kernel
from ..numbers import number_context
from ..pnorm import link_inverse, normaliser, to_mpf
from ..rounding import (
    ANY_STATE,
    SMALLEST_SUBNORMAL,
    UNIT_ROUNDOFF,
    linear_sums_exact,
    magnitude_float,
    score_error_bound,
    within,
)
from ..trace import Trace
from .common import Gram, exact_data
from .pnorm_perceptron import pnorm_magnitude


class RhoRuleParams(Protocol):
    """What the error model reads of ``higher_order.HigherOrderParams`` (which this module
    cannot import: ``higher_order`` imports it): the norm p, c, the rule of rho_k and the
    sparse variant."""

    @property
    def p(self) -> Fraction: ...

    @property
    def c(self) -> Fraction: ...

    @property
    def rho(self) -> str: ...

    @property
    def sparse(self) -> bool: ...


# -- the fragile rule along a run -------------------------------------------------------------

def rho_roundings(par: RhoRuleParams, s_error: float) -> int:
    """e: how many unit roundoffs the float64 value of rho may be off, relatively (SPEC.md,
    the higher_order chapter, "Fragile trials and final-state bounds"): c/k 3 (c, the
    division, slack), constant 1, theorem1 3 + u c/(1-c) + err(s) / u."""
    if par.rho == "c/k":
        return 3
    if par.rho == "constant":
        return 1
    c = float(par.c)
    extra = c / (1 - c) if c < 1 else 0.0
    return 4 + math.ceil(extra + s_error / UNIT_ROUNDOFF)


def operations(K: int, n: int, depth: int, rho_errors: int) -> int:
    """m of the fragile rule: (K + 2)(K + 2 (n + 8) d + 16) + 2 sum_i e_i."""
    return (K + 2) * (K + 2 * (n + 8) * depth + 16) + 2 * rho_errors


def primal_update(A: list[list[Any]], x: list[Any], rho: Any,
                  absolute: bool = False) -> list[list[Any]]:
    """A - rho a x^T - rho x a^T + rho^2 (x^T a) x x^T with a = A x (item 1, any x): the
    expansion of (I - rho x x^T) A (I - rho x x^T).  ``absolute``: every sign +, the
    magnitude recursion of the fragile rule."""
    n = len(x)
    a = [sum(A[i][l] * x[l] for l in range(n)) for i in range(n)]
    q = sum(x[i] * a[i] for i in range(n))
    sign = 1 if absolute else -1
    return [[A[i][l] + sign * rho * (a[i] * x[l] + x[i] * a[l]) + rho * rho * q * x[i] * x[l]
             for l in range(n)] for i in range(n)]


class ErrorModel:
    """The fragile rule of the module docstring along a run: K mistakes so far, the rounding
    count sum_i e_i of the rho_i applied, and whether B = I still (every rho 0), when a
    float64 form's p = 2 scores are exact (``_identity_is_exact``).  After a sparse decision
    float64 may take the other way (``branches``), every trial is fragile."""

    def __init__(self, kern: Kernel, rows: list[list[Fraction]], trials: int, p: Any):
        self.depth, self.n = kern.depth, len(rows[0])
        self.exact_identity = p == 2 and _identity_is_exact(kern, rows, trials)
        self.K, self.rho_errors, self.identity = 0, 0, True
        self.branch_from: int | None = None

    def score_is_fragile(self, score: Any, magnitude: float) -> bool:
        """|score| within SAFETY gamma_m M (m = ``operations``), or a branch taken before."""
        if self.branch_from is not None:
            return True
        if self.identity and self.exact_identity:
            return False
        err = score_error_bound(operations(self.K, self.n, self.depth, self.rho_errors),
                                magnitude_float(magnitude))
        return bool(err and within(score, err))

    def mistake(self, s_magnitude: float) -> float:
        """Count a mistake; the rounding bound of its s = v_{k-1}.x_t (0 when exact)."""
        self.K += 1
        if self.exact_identity and self.identity:
            return 0.0
        return score_error_bound(self.K + (self.n + 8) * self.depth,
                                 magnitude_float(s_magnitude))

    def branches(self, t: int, s: Any, s_err: float) -> bool:
        """Whether trial t is the first whose sparse decision y s >= 0 float64 may take the
        other way (s within s_err of 0)."""
        if s_err and within(s, s_err) and self.branch_from is None:
            self.branch_from = t
            return True
        return False

    def factor_applied(self, par: RhoRuleParams, s_err: float) -> None:
        """A factor with rho != 0: B leaves I, and rho's roundings e join m."""
        self.identity = False
        self.rho_errors += rho_roundings(par, s_err)


def _identity_is_exact(kern: Kernel, rows: list[list[Fraction]], max_updates: int) -> bool:
    """While B = I (every rho so far 0) and p = 2, a float64 form computes v.x (primal: A = I
    exactly; dual: g = y; implicit: factors with rho = 0 leave z unchanged).  True iff that is
    exact for every trial: linear kernel, data on a dyadic grid, sums below 2^53 steps."""
    return kern.is_linear and linear_sums_exact(rows, max_updates)


# -- final-state bounds -----------------------------------------------------------------------

def state_bounds(trace: Trace, X: Any, par: RhoRuleParams) -> dict[str, Any]:
    """How far a float64 form's ``final`` may lie from the exact one (SPEC.md, the
    higher_order chapter, "Fragile trials and final-state bounds"); ``par``: the trace's,
    resolved.

    The same absolute-value recursions as the fragile rule, rebuilt from the trace (the
    mistakes' examples and ``final.rho``): w_i within SAFETY gamma_m (|A| |v|)_i (p = 2) or
    (|B|^T G)_i with G_i = (p + 1) Theta_i^(p-1) / ||theta||_p^(p-2) (p != 2,
    ``_pnorm_w_bounds``); g_j within SAFETY gamma_m |g|_j (dual, kernels); v_i within
    gamma_{K+8} sum |x_ti|; rho_k within SAFETY gamma_{e_k} |rho_k|.  m is the fragile
    rule's, for K = all mistakes, plus T.  A sparse run with a fragile mistake may have
    taken the other branch: every bound is then ANY_STATE.
    """
    dense = X.toarray() if hasattr(X, "toarray") else X
    rows = [list(r) for r in (dense.tolist() if hasattr(dense, "tolist") else dense)]
    T, n = len(rows), len(rows[0])
    p = par.p
    kern = parse_kernel(trace.kernel)
    mistakes = [t % T for t in trace.mistakes]
    K = len(mistakes)
    final = trace.final
    rhos = final["rho"]
    abs_rows = [[abs(float(v)) for v in row] for row in rows]

    rho_e, gram = _rho_roundings_along(rows, mistakes, kern, par)
    total_e = sum(e for e, r in zip(rho_e, rhos) if r)
    ops = operations(K, n, kern.depth, total_e) + T
    if par.sparse and set(trace.fragile or ()) & set(trace.mistakes):
        return {f"final.{key}": ([ANY_STATE] * len(val) if isinstance(val, list) else
                                 ANY_STATE) for key, val in final.items()}
    out: dict[str, Any] = {
        "final.rho": [_bound(e, abs(float(r)), r) if r else 0.0 for e, r in zip(rho_e, rhos)]}
    if not kern.is_linear and gram is not None:  # dual coefficients: the dual recursions
        g_abs = _dual_g_abs(gram, mistakes, rhos)
        out["final.g"] = [_bound(ops, ga, g) for ga, g in zip(g_abs, final["g"])]
        return out
    v_abs = [0.0] * n
    for j in mistakes:
        v_abs = [a + b for a, b in zip(v_abs, abs_rows[j])]
    out["final.v"] = [_bound(K + 8, a, vi) for a, vi in zip(v_abs, final["v"])]
    if p == 2:
        A_abs = [[float(i == l) for l in range(n)] for i in range(n)]
        for j, r in zip(mistakes, rhos):
            if r:
                A_abs = primal_update(A_abs, abs_rows[j], abs(float(r)), absolute=True)
        w_mag = [sum(a * b for a, b in zip(row, v_abs)) for row in A_abs]
        out["final.w"] = [_bound(ops, m, wi) for m, wi in zip(w_mag, final["w"])]
        return out
    out["final.w"] = _pnorm_w_bounds(rows, abs_rows, mistakes, rhos, p, final, v_abs, ops)
    return out


def _bound(ops: int, magnitude: float, exact: Any) -> float:
    """gamma_ops magnitude; a magnitude that underflowed to 0 while the exact value is not
    counts as the smallest subnormal."""
    return score_error_bound(ops, magnitude if magnitude or not exact else SMALLEST_SUBNORMAL)


def _rho_roundings_along(rows: list[list[Any]], mistakes: list[int], kern: Kernel,
                         par: RhoRuleParams) -> tuple[list[int], Gram | None]:
    """e_k of each mistake's rho, with the s_err the run used (an upper bound without the
    labels), and the Gram matrix the bounds read (theorem1 or a kernel; else None)."""
    n, rule = len(rows[0]), par.rho
    exact_rows = None
    if rule == "theorem1":
        exact_rows, _ = exact_data(rows, [1] * len(rows))
    gram = Gram(kern, exact_rows or [[Fraction(v) for v in r] for r in rows]) \
        if rule == "theorem1" or not kern.is_linear else None
    rho_e = []
    for k, j in enumerate(mistakes, start=1):
        if gram is not None and rule == "theorem1":
            mag = sum(gram.magnitude(i, j) for i in mistakes[:k - 1])
            s_err = score_error_bound(k + (n + 8) * kern.depth, magnitude_float(mag))
        else:
            s_err = 0.0
        rho_e.append(rho_roundings(par, s_err))
    return rho_e, gram


def _pnorm_w_bounds(rows: list[list[Any]], abs_rows: list[list[float]], mistakes: list[int],
                    rhos: list[Any], p: Any, final: dict[str, Any], v_abs: list[float],
                    ops: int) -> list[float]:
    """p != 2: the bounds on w, with B rebuilt (mpmath) for theta = B v and the
    normaliser, and |B| as in ``PNorm``."""
    n = len(rows[0])
    ctx = number_context()
    exact_x = [[Fraction(v) for v in rows[j]] for j in mistakes]
    B = [[ctx.mpf(int(i == l)) for l in range(n)] for i in range(n)]
    B_abs = [[float(i == l) for l in range(n)] for i in range(n)]
    for x, xa, r in zip(exact_x, (abs_rows[j] for j in mistakes), rhos):
        if not r:
            continue
        gx = [to_mpf(v, ctx) for v in link_inverse(x, p, ctx, rational=True)]
        a = [sum((B[i][l] * x[l] for l in range(n)), ctx.mpf(0)) for i in range(n)]
        B = [[B[i][l] - to_mpf(r, ctx) * a[i] * gx[l] for l in range(n)] for i in range(n)]
        ga = [abs(float(v)) for v in gx]
        aa = [sum(u * w for u, w in zip(row, xa)) for row in B_abs]
        B_abs = [[B_abs[i][l] + abs(float(r)) * aa[i] * ga[l] for l in range(n)]
                 for i in range(n)]
    theta = [sum((B[i][l] * to_mpf(final["v"][l], ctx) for l in range(n)), ctx.mpf(0))
             for i in range(n)]
    theta_abs = [sum(u * w for u, w in zip(row, v_abs)) for row in B_abs]
    scale = float(normaliser(theta, p, ctx))
    if not scale:
        # theta = 0, or ||theta||_p^p below float64's range: a float form's theta may be its
        # rounding error alone.  g is 1-homogeneous, |g(t)_i| <= ||t||_p <= ||t||_1, so
        # |w - w~| <= |B|^T (|g(theta)| + |g(theta~)|) <= |B|^T 1 (2 n max|theta| + err).
        top = max(abs(float(t)) for t in theta)
        err = score_error_bound(ops + n + 16, n * max(theta_abs))
        spread = 2 * n * top + err
        return [sum(B_abs[i][l] for i in range(n)) * spread for l in range(n)]
    G = [pnorm_magnitude([ta], [1.0], p, scale) for ta in theta_abs]
    w_mag = [sum(B_abs[i][l] * G[i] for i in range(n)) for l in range(n)]
    return [_bound(ops + n + 16, m, wi) for m, wi in zip(w_mag, final["w"])]


def _dual_g_abs(gram: Gram, mistakes: list[int], rhos: list[Any]) -> list[float]:
    """|g| of the dual recursions (class Dual's ``_abs`` twins), from the mistakes and rho."""
    active: list[int] = []
    D: dict[tuple[int, int], float] = {}
    h: list[float] = []
    g: list[float] = []
    for k, (j, r) in enumerate(zip(mistakes, rhos)):
        kabs = [gram.magnitude(i, j) for i in mistakes[:k]]
        qa = gram.magnitude(j, j)
        ba = {i: sum(D[i, l] * kabs[l] for l in active) for i in active}
        ha_new = sum(kabs) + qa
        h = [a + b for a, b in zip(h, kabs)]
        ra = abs(float(r))
        ga_new = 1.0 + ra * sum(ba[i] * h[i] for i in active)
        for i in active:
            g[i] += ba[i] * (1.0 + ra * ha_new)
        if r:
            da = ra * ra * (sum(kabs[i] * ba[i] for i in active) + qa) + 2 * ra
            ga_new += da * ha_new
            for i in active:
                D[i, k] = D[k, i] = ra * ba[i]
            D[k, k] = da
            active.append(k)
        h.append(ha_new)
        g.append(ga_new)
    return g
