"""PUMMA's float64 error model: fragile trials and final bounds (SPEC.md 14.5).

A stated rule, not a proof.  ``PummaErrors`` applies the shared model
(``reference.maximum_margin_errors.ErrorModel``: the p = 2 rule with absolute slacks on the
dual coefficients, the kappa rule for the primal w when p > 2) to a PUMMA run: each score
w.x + b gets its error bound from the magnitudes of its terms, b's own share (the bias (20)
is an average of two scores) and, p > 2, the tolerance a float64 Newton on the dual (18) is
allowed (NEWTON_TOLERANCE times kappa per update) and the Hoelder share (``hoelder_share``:
where the optimum is sparse, the map phi -> w = f^-1(phi) is only Hoelder continuous, of
order 1/(p - 1)).  ``final_error_bounds``: the bounds a run attached to its trace, or a
fallback for a trace read from a file.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ..kernels import Kernel
from ..rounding import score_error_bound
from ..trace import Trace
from .maximum_margin import Numbers
from .maximum_margin_errors import FALLBACK_RHO, ErrorModel, bound, dual_bounds
from .pumma_newton import NEWTON_TOLERANCE


def hoelder_share(p: Any) -> float:
    """(32 NEWTON_TOLERANCE)^(1/(p-1)): how far, relative to the state's scale, a float64
    Newton's w or th may sit from the exact one where the optimum is sparse (SPEC.md 14.5;
    the map phi -> w is Hoelder continuous of order 1/(p - 1) there).  A stated rule."""
    return (32 * NEWTON_TOLERANCE) ** (1 / (float(p) - 1))


class PummaErrors:
    """The float64 error model along a PUMMA run (``ErrorModel``): each score's error
    bound, and b's (the magnitude of its terms and its share of the boundary slack); p > 2
    adds a float64 Newton's tolerance per update and the Hoelder share on each score."""

    def __init__(self, rows: list[list[Fraction]], kern: Kernel, num: Numbers,
                 par: dict[str, Any], threshold: Any):
        self.rows, self.kern, self.par = rows, kern, par
        self.two = par["p"] == 2
        self.model = ErrorModel(ref_unit=num.unit)
        self.threshold_error = score_error_bound(1, float(threshold))
        self.newton = 0.0 if self.two else NEWTON_TOLERANCE
        self.ref_newton = 0.0 if self.two else 2.0 ** -(num.bits // 2 - 8)
        self.b_magnitude = 0.0      # the magnitude of b's terms, for the rounding bound
        self.b_slack = 0.0          # b's share of the boundary slack
        self.row_sums = [math.fsum(abs(float(v)) for v in row) for row in rows]  # sum |x_jd|
        self.max_row_sum = max(self.row_sums)
        self.hoelder = 0.0 if self.two else hoelder_share(par["p"])

    def operations(self, st: Any) -> int:
        """The roundings of a float64 score w.x_j + b."""
        return (len(self.rows[0]) + 8) * self.kern.depth + st.terms + 8

    def score_error(self, st: Any, j: int, slack: Any) -> float:
        """How far a float64 score (and, p = 2, its slack a_j / C) may be off: p = 2 from
        the terms' magnitudes and the absolute slacks; p > 2 with each w_d within the final
        bounds' rule applied to this state (|w_d| + ||w~||_2, plus the Hoelder share)."""
        m, model = self.operations(st), self.model
        if self.two:
            invC = 0.0 if st.invC is None else float(st.invC)
            magnitude = st.magnitude(j) + self.b_magnitude + st.size[j] * invC
            return (model.score_error(m, magnitude) + st.slack_error(j)
                    + 2 * st.slack[j] * invC + self.b_slack)
        row_sum, scale = self.row_sums[j], st.scale()
        magnitude = st.magnitude(j) + scale * row_sum + self.b_magnitude + abs(float(slack))
        return (model.score_error(m, magnitude)
                + scale * self.hoelder * (row_sum + self.max_row_sum))

    def fragile(self, st: Any, j: int, margin: Any, slack: Any, threshold: Any) -> bool:
        """Whether a float64 form may decide the mistake test, or the update test against
        ``threshold`` (None: none), otherwise (``ErrorModel.tests_fragile``)."""
        return self.model.tests_fragile(margin, self.score_error(st, j, slack), threshold,
                                        self.threshold_error)

    def started(self, st: Any, pos: int, neg: int) -> None:
        """After the update that completes the pair (case (i) from v = 0)."""
        self.b_magnitude = st.pair_magnitude(pos, neg)
        self.model.update(False, 1.0, len(self.rows[0]) + 8, self.newton, self.ref_newton,
                          rho_lam=st.rho_lam if self.two else None)

    def updated(self, st: Any, pos: int, neg: int, case_ii: bool, kappa: float,
                m: int) -> None:
        """After an update (``ErrorModel.update``; Newton's tolerance times kappa)."""
        self.b_magnitude = st.pair_magnitude(pos, neg)
        if self.two:
            invC = 0.0 if st.invC is None else float(st.invC)
            self.b_slack = (st.slack_error(pos) + st.slack_error(neg)
                            + 2 * (st.slack[pos] + st.slack[neg]) * invC) / 2
        self.model.update(case_ii, kappa, m, self.newton * kappa, self.ref_newton * kappa,
                          rho_lam=st.rho_lam if self.two else None)

    def final_bounds(self, final: dict[str, Any], st: Any) -> dict[str, Any]:
        """How far a float64 form's final values may lie from ``final`` (``_final_bounds``)."""
        two = self.two
        return _final_bounds(self.model.rho, final, st.size if two else [], self.rows,
                             self.kern, self.par, self.b_magnitude, None if two else st,
                             st.slack if two else None, self.b_slack)


# -- final bounds -----------------------------------------------------------------------------

def norm2(values: list[float]) -> float:
    """||values||_2 without overflowing on the way (inf only if the norm itself is)."""
    top = max((abs(v) for v in values), default=0.0)
    if top == 0 or not top < math.inf:
        return top
    return top * math.sqrt(math.fsum((v / top) ** 2 for v in values))


def _final_bounds(rho: float, final: dict[str, Any], primal_size: list[float],
                  rows: list[list[Fraction]], kern: Kernel, par: dict[str, Any],
                  b_magnitude: float, primal: Any, slack: list[float] | None,
                  b_slack: float) -> dict[str, Any]:
    T = len(rows)
    out: dict[str, Any] = {}
    if primal is None:
        out.update(dual_bounds(rho, primal_size, rows, kern.is_linear, final, slack))
    else:
        # p > 2: relative to |w_d| plus the state's scale ||w~||_2 = ||(w, sqrt(C) xi)||_2
        # (a Newton residual moves every coordinate by ~ rho ||w~||, also one that is 0)
        parts = [float(v) for v in final["w"]]
        if "xi" in final:
            root_c = math.sqrt(float(par["C"]))
            parts += [root_c * float(v) for v in final["xi"]]
        scale = norm2(parts)
        # Two Newton runs that both stop at a residual <= NEWTON_TOLERANCE may still differ
        # by more than the residual where the optimum is sparse: the map phi -> w is only
        # Hoelder continuous there, of order q - 1 = 1/(p - 1).  A stated rule (SPEC.md),
        # with a factor 32 on the tolerance.
        hoelder = scale * hoelder_share(par["p"])
        out["final.w"] = [bound(rho, abs(float(v)) + scale, 8, v) + hoelder
                          for v in final["w"]]
        b_slack += hoelder * max(math.fsum(abs(float(v)) for v in r) for r in rows)
    out["final.b"] = bound(rho, b_magnitude, T + 16, final["b"]) + b_slack
    if "xi" in final and primal is None:
        invC = 1 / float(par["C"])
        out["final.xi"] = [bound(rho, primal_size[i] * invC if slack else abs(float(v)), 4, v)
                           + 2 * (slack[i] * invC if slack else 0.0)
                           for i, v in enumerate(final["xi"])]
    elif "xi" in final:   # p > 2: sqrt(C) xi_e is a coordinate of w~, as w_d is
        out["final.xi"] = [bound(rho, abs(float(v)) + scale / root_c, 4, v) + hoelder / root_c
                           for v in final["xi"]]
    return out


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """How far a float64 form's final w (or alpha), b and xi may lie from the exact ones.

    For a trace the reference returned, the bounds its run derived (``trace.final_bounds``:
    the ErrorModel's final rho on the magnitudes of each value's terms, as ROMMA's).
    For a trace read from a file: rho = FALLBACK_RHO on magnitudes rebuilt from the values
    (w_d: |w_d| + ||w||_2 max_i |x_id| T; b: |b| + ||w||_2 max_i ||x_i||_2 + the slacks).
    """
    known = trace.final_bounds
    if known is not None:
        return known
    rows = [[abs(float(v)) for v in row] for row in
            (X.toarray() if hasattr(X, "toarray") else X).tolist()]
    T = len(rows)
    out: dict[str, Any] = {}
    norm = 0.0
    if "w" in trace.final:
        w = trace.final["w"]
        norm = sum(float(v) ** 2 for v in w) ** 0.5
        out["final.w"] = [bound(FALLBACK_RHO, abs(float(v)) + norm * T
                                * max(r[d] for r in rows), T + 8, v) for d, v in enumerate(w)]
    if "alpha" in trace.final:
        out["final.alpha"] = [bound(FALLBACK_RHO, abs(float(a)), 2, a)
                              for a in trace.final["alpha"]]
        norm = sum(abs(float(a)) for a in trace.final["alpha"])
    xi = trace.final.get("xi") or []
    if xi:
        out["final.xi"] = [bound(FALLBACK_RHO, abs(float(v)), 4, v) for v in xi]
    big = max((sum(v * v for v in r) ** 0.5 for r in rows), default=0.0)
    out["final.b"] = bound(FALLBACK_RHO, abs(float(trace.final["b"])) + norm * big * T
                           + sum(abs(float(v)) for v in xi), T + 16, trace.final["b"])
    return out
