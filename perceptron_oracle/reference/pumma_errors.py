"""PUMMA's float64 error model: fragile trials and final bounds (SPEC.md 14.5).

A stated rule, not a proof.  ``PummaErrors`` applies the shared model
(``reference.maximum_margin_errors.ErrorModel``: the p = 2 rule with absolute slacks on the
dual coefficients) to a PUMMA run: each score w.x + b gets its error bound from the
magnitudes of its terms and b's own share (the bias (20) is an average of two scores).
For p > 2, ``ThetaError`` carries the error of a float64 form's dual vector th~ = f(w~) as
an ellipsoid through each update's Jacobian (``update_jacobian``), adding the update's
roundings and the tolerance a float64 Newton on the dual (18) is allowed (NEWTON_TOLERANCE
times kappa per update), and each score adds the Hoelder share (``hoelder_share``: where
the optimum is sparse, the map phi -> w = f^-1(phi) is only Hoelder continuous, of order
1/(p - 1)).  ``final_error_bounds``: the bounds a run attached to its trace, or a fallback
for a trace read from a file.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from ..kernels import Kernel
from ..rounding import ANY_STATE, UNIT_ROUNDOFF, matmul, power, score_error_bound
from ..rounding import pnorm as float_pnorm
from ..trace import Trace
from .alma import plus_ball
from .maximum_margin import Numbers
from .maximum_margin_errors import FALLBACK_RHO, ErrorModel, bound, clamped_float, dual_bounds
from .pumma_newton import NEWTON_TOLERANCE


class MarginErrorParams(Protocol):
    """What the error model reads of ``pumma.PummaParams`` (which this module cannot import:
    ``pumma`` imports it): the norm p and the soft margin's C (None: hard margin)."""

    @property
    def p(self) -> Fraction: ...

    @property
    def C(self) -> Fraction | None: ...


def hoelder_share(p: Any) -> float:
    """(32 NEWTON_TOLERANCE)^(1/(p-1)): how far, relative to the state's scale, a float64
    Newton's w or th may sit from the exact one where the optimum is sparse (SPEC.md 14.5;
    the map phi -> w is Hoelder continuous of order 1/(p - 1) there).  A stated rule."""
    return power(32 * NEWTON_TOLERANCE, 1 / (float(p) - 1))


def pnorm(values: Any, p: float) -> float:
    """||values||_p, correctly rounded (``rounding.pnorm``: exact, nothing overflows on the
    way, the same double on every machine)."""
    return float_pnorm(np.asarray(values, dtype=float).ravel().tolist(), p)


def update_jacobian(z: np.ndarray, th: np.ndarray, v: np.ndarray, w: np.ndarray,
                    phi: np.ndarray, lam: float, eta: float, p: float, n: int,
                    invC: float) -> tuple[np.ndarray, np.ndarray] | None:
    """d phi' / d th of a case-(ii) update (SPEC.md 14.5), on the vectors of the product
    space (the first n coordinates w's, the rest the soft margin's slacks): with
    J = the Jacobian of f^-1 at phi' (14.2.3; 1/C on the slacks), A = [z th]^T and
    H = A J A^T (minus the Hessian of the dual (18)), the implicit function theorem on (17)
    (f^-1(phi').z = 2, f^-1(phi').th = ||th||_p^2, whose gradient in th is 2 v) gives

        d phi' / d th = eta I + A^T H^-1 [-eta z^T J ; 2 (v - w')^T + lam z^T J]

    (eta th^T J = w'^T - lam z^T J by Euler, f^-1 being homogeneous of degree 1): returns
    (A, K), K = H^-1 [..] (2 x n), the map being eta I + A^T K.  None where H is singular or
    a value is not finite."""
    head = phi[:n]
    norm = pnorm(head, p)
    diag = np.full(phi.shape[0], invC)   # J = diag(diag) - (p - 2) s s^T
    s = np.zeros(phi.shape[0])
    if norm > 0:   # J is homogeneous of degree 0: on phi / ||phi||_p nothing overflows
        u = head / norm
        s[:n] = np.sign(u) * np.array([power(abs(a), p - 1) for a in u.tolist()])
        diag[:n] = (p - 1) * np.array([power(abs(a), p - 2) for a in u.tolist()])
    else:
        diag[:n] = 0.0
    A = np.stack([z, th])
    As = np.array(matmul(A, s))
    H = np.array(matmul(A * diag, A.T)) - (p - 2) * np.outer(As, As)
    det = H[0, 0] * H[1, 1] - H[0, 1] * H[1, 0]
    if not (np.all(np.isfinite(H)) and det > 2.0 ** -40 * abs(H[0, 0] * H[1, 1])):
        return None
    Jz = diag * z - (p - 2) * As[0] * s
    B = np.stack([-eta * Jz, 2 * (v - w) + lam * Jz])
    # H^-1 B by Cramer's rule (2 x 2, det checked above): elementwise IEEE operations, the
    # same doubles on every machine, where LAPACK's solve rounds by its BLAS kernel
    K = np.stack([H[1, 1] * B[0] - H[0, 1] * B[1], H[0, 0] * B[1] - H[1, 0] * B[0]]) / det
    return (A, K) if np.all(np.isfinite(K)) else None


class ThetaError:
    """p > 2 (SPEC.md 14.5, a stated rule): how far a float64 form's dual vector
    th~ = (th, C xi) (th = f(w); the fast primal keeps it as the last phi') may lie from the
    exact one, as the ellipsoid E(Q) = {e : (a.e)^2 <= a^T Q a for all a}, carried through
    each update by the update map's Jacobian (``update_jacobian``; nearly equal maps do not
    multiply their norms, as a 2 sqrt(kappa) factor per update did), plus a ball per
    update: its roundings and its Newton tolerance (relative ``fresh``) and the second
    order.  ``rho``: the relative error this leaves on w~ = (w, sqrt(C) xi) (``w_error``).
    """

    def __init__(self, n: int, p: float, C: float | None):
        self.n, self.p = n, p
        self.invC = 0.0 if C is None else 1 / C
        self.slots: dict[int, int] = {}     # example index -> the coordinate of its slack
        self.Q = np.zeros((n, n))

    def vector(self, head: list[Any], slack: dict[int, Any], times: float = 1.0
               ) -> np.ndarray:
        """A vector of the product space: ``head`` (w's coordinates), ``slack`` times
        ``times`` at the slacks' coordinates."""
        out = np.zeros(self.Q.shape[0])
        out[:self.n] = [clamped_float(v) for v in head]
        for e, v in slack.items():
            out[self.slots[e]] = times * clamped_float(v)
        return out

    def grow(self, indices: Any) -> None:
        """Coordinates for the slacks of ``indices`` not yet held (error 0)."""
        new = [e for e in indices if e not in self.slots]
        for e in new:
            self.slots[e] = self.Q.shape[0] + new.index(e)
        if new:
            self.Q = np.pad(self.Q, (0, len(new)))

    @property
    def radius(self) -> float:
        """sqrt(tr Q) >= the ellipsoid's largest half-axis: ||th~_float - th~||_2 at most."""
        return math.sqrt(max(math.fsum(np.diagonal(self.Q).tolist()), 0.0))

    def restart(self, st: Any, fresh: float) -> None:
        """Case (i): phi' = lam z does not depend on th; a ball of radius fresh ||phi~'||_2
        (the update's roundings)."""
        self.grow(st.xis)
        phi = self.vector(st.link(st.w, st.q), st.xis, 1 / self.invC if self.invC else 1.0)
        with np.errstate(all="ignore"):     # a state beyond float64: Q infinite
            Q = plus_ball(np.zeros_like(self.Q), fresh * pnorm(phi, 2.0))
        self.Q = Q if np.all(np.isfinite(Q)) else np.full_like(Q, math.inf)

    def carry(self, st: Any, pos: int, neg: int, kappa: float, fresh: float) -> None:
        """Case (ii) (``st.solved``): Q' = J Q J^T plus a ball of radius fresh ||phi~'||_2
        + 4 kappa D^2 / ||th~||_2 (the second order; D = ``radius``).  Where the Jacobian
        is not available (H singular): the former rule's factor, D' = 2 sqrt(kappa) D."""
        z, th, v, xis, lam, eta, phi = st.solved
        C = None if not self.invC else 1 / self.invC
        E = {pos: 1, neg: 1} if C else {}
        self.grow(list(xis) + list(E))
        vec = self.vector
        tth, tphi = vec(th, xis, C or 1.0), vec(phi, st.xis, C or 1.0)
        eta = clamped_float(eta)
        with np.errstate(all="ignore"):     # a state beyond float64: Q infinite, rho too
            J = update_jacobian(vec(z, E), tth, vec(v, xis), vec(st.w, st.xis), tphi,
                                clamped_float(lam), eta, self.p, self.n, self.invC)
            D, th_norm = self.radius, pnorm(tth, 2.0)
            if J is None:
                Q = 4 * kappa * D * D * np.eye(self.Q.shape[0])
            else:   # (eta I + A^T K) Q (eta I + A^T K)^T, in O(dim^2)
                A, K = J
                KQ = np.array(matmul(K, self.Q))   # rounding.matmul: fsum dots, not BLAS
                cross = np.array(matmul(A.T, KQ))
                Q = (eta * eta * self.Q + eta * (cross + cross.T)
                     + np.array(matmul(matmul(A.T, matmul(KQ, K.T)), A)))
            second = 4 * kappa * D * D / th_norm if th_norm > 0 else 0.0
            Q = plus_ball(Q, fresh * pnorm(tphi, 2.0) + second)
        self.Q = Q if np.all(np.isfinite(Q)) else np.full_like(Q, math.inf)

    def w_error(self, st: Any, m: int) -> float:
        """rho: ||w~_float - w~||_2 / ||w~||_2 at most, w~ = (w, sqrt(C) xi): f^-1 is
        Lipschitz with constant (p - 1) (max_i |phi_i| + D)^(p-2) / (||phi||_p - D)^(p-2)
        over the ball of radius D around phi (its Jacobian J is positive semidefinite,
        below its diagonal), the slacks' map a -> a / sqrt(C) with 1 / sqrt(C); plus the
        roundings of w = f^-1(phi), 4 (m + 8) u."""
        D = self.radius
        scale: float = st.scale()
        if D == 0:
            return 4 * (m + 8) * UNIT_ROUNDOFF
        phi = [clamped_float(t) for t in st.link(st.w, st.q)]
        norm = pnorm(phi, self.p)
        if not (norm > D and scale > 0):
            return ANY_STATE
        ratio = min(1.0, (max(abs(t) for t in phi) + D) / (norm - D))
        lip = max((self.p - 1) * power(ratio, self.p - 2), math.sqrt(self.invC))
        return min(ANY_STATE, lip * D / scale + 4 * (m + 8) * UNIT_ROUNDOFF)


class PummaErrors:
    """The float64 error model along a PUMMA run (``ErrorModel``): each score's error
    bound, and b's (the magnitude of its terms and its share of the boundary slack); p > 2
    takes rho from the carried ellipsoid (``ThetaError``) and adds the Hoelder share on each
    score."""

    def __init__(self, rows: list[list[Fraction]], kern: Kernel, num: Numbers,
                 par: MarginErrorParams, threshold: Any):
        self.rows, self.kern, self.par = rows, kern, par
        self.two = par.p == 2
        self.model = ErrorModel(ref_unit=num.unit)
        self.threshold_error = score_error_bound(1, float(threshold))
        self.newton = 0.0 if self.two else NEWTON_TOLERANCE
        self.ref_newton = 0.0
        if not self.two:
            assert num.bits is not None     # p > 2 runs in mpmath only
            self.ref_newton = 2.0 ** -(num.bits // 2 - 8)
        self.b_magnitude = 0.0      # the magnitude of b's terms, for the rounding bound
        self.b_slack = 0.0          # b's share of the boundary slack
        self.row_sums = [math.fsum(abs(float(v)) for v in row) for row in rows]  # sum |x_jd|
        self.max_row_sum = max(self.row_sums)
        self.hoelder = 0.0 if self.two else hoelder_share(par.p)
        self.theta = None if self.two else ThetaError(
            len(rows[0]), float(par.p), None if par.C is None else float(par.C))

    def operations(self, st: Any) -> int:
        """The roundings of a float64 score w.x_j + b."""
        terms: int = st.terms
        return (len(self.rows[0]) + 8) * self.kern.depth + terms + 8

    def score_error(self, st: Any, j: int, slack: Any) -> float:
        """How far a float64 score (and, p = 2, its slack a_j / C) may be off: p = 2 from
        the terms' magnitudes and the absolute slacks; p > 2 with each w_d within the final
        bounds' rule applied to this state (|w_d| + ||w~||_2, plus the Hoelder share)."""
        m, model = self.operations(st), self.model
        if self.two:
            invC = 0.0 if st.invC is None else float(st.invC)
            magnitude = st.magnitude(j) + self.b_magnitude + st.size[j] * invC
            error: float = (model.score_error(m, magnitude) + st.slack_error(j)
                            + 2 * st.slack[j] * invC + self.b_slack)
            return error
        row_sum = self.row_sums[j]
        scale: float = st.scale()
        magnitude = st.magnitude(j) + scale * row_sum + self.b_magnitude + abs(float(slack))
        if st.C is not None:    # xi_j, whose sqrt(C) xi_j is a coordinate of w~
            magnitude += scale / math.sqrt(float(st.C))
        return (model.score_error(m, magnitude) + self.b_slack
                + scale * self.hoelder * (row_sum + self.max_row_sum))

    def fragile(self, st: Any, j: int, margin: Any, slack: Any, threshold: Any) -> bool:
        """Whether a float64 form may decide the mistake test, or the update test against
        ``threshold`` (None: none), otherwise (``ErrorModel.tests_fragile``)."""
        return self.model.tests_fragile(margin, self.score_error(st, j, slack), threshold,
                                        self.threshold_error)

    def started(self, st: Any, pos: int, neg: int) -> None:
        """After the update that completes the pair (case (i) from v = 0)."""
        self.b_magnitude = st.pair_magnitude(pos, neg)
        m = len(self.rows[0]) + 8
        self.model.update(False, 1.0, m, self.ref_newton,
                          rho_lam=st.rho_lam if self.two else None)
        if self.theta is not None:
            self._carry(st, pos, neg, False, 1.0, m)

    def updated(self, st: Any, pos: int, neg: int, case_ii: bool, kappa: float,
                m: int) -> None:
        """After an update (``ErrorModel.update``; p > 2 ``_carry``, with Newton's
        tolerance times kappa)."""
        self.b_magnitude = st.pair_magnitude(pos, neg)
        if self.two:
            invC = 0.0 if st.invC is None else float(st.invC)
            self.b_slack = (st.slack_error(pos) + st.slack_error(neg)
                            + 2 * (st.slack[pos] + st.slack[neg]) * invC) / 2
        self.model.update(case_ii, kappa, m, self.ref_newton * kappa,
                          rho_lam=st.rho_lam if self.two else None)
        if self.theta is not None:
            self._carry(st, pos, neg, case_ii, kappa, m)

    def _carry(self, st: Any, pos: int, neg: int, case_ii: bool, kappa: float,
               m: int) -> None:
        """p > 2: the error ellipsoid of th~ through the update (``ThetaError``), in place of
        the kappa rule's rho; b = -(w.x_pos + w.x_neg + xi_pos - xi_neg) / 2 is then within
        2 rho ||w~||_2 (||x_pos||_1 + ||x_neg||_1 + 2 / sqrt(C)) / 2 of its share."""
        theta, model = self.theta, self.model
        assert theta is not None
        fresh = 4 * (m + 8) * UNIT_ROUNDOFF
        if case_ii:
            theta.carry(st, pos, neg, kappa, kappa * (fresh + self.newton))
        else:
            theta.restart(st, fresh)
        model.rho = theta.w_error(st, m)
        slacks = 0.0 if st.C is None else 2 / math.sqrt(float(st.C))
        self.b_slack = (model.rho * st.scale()
                        * (self.row_sums[pos] + self.row_sums[neg] + slacks))

    def final_bounds(self, final: dict[str, Any], st: Any) -> dict[str, Any]:
        """How far a float64 form's final values may lie from ``final`` (``_final_bounds``)."""
        two = self.two
        return _final_bounds(self.model.rho, final, st.size if two else [], self.rows,
                             self.kern, self.par, self.b_magnitude, None if two else st,
                             st.slack if two else None, self.b_slack)


# -- final bounds -----------------------------------------------------------------------------

def norm2(values: list[float]) -> float:
    """||values||_2 correctly rounded, without overflowing on the way (inf only if the norm
    itself is): ``rounding.pnorm``, the same double on every machine."""
    return float_pnorm(values, 2.0)


def _final_bounds(rho: float, final: dict[str, Any], primal_size: list[float],
                  rows: list[list[Fraction]], kern: Kernel, par: MarginErrorParams,
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
            assert par.C is not None  # xi is the soft margin's
            root_c = math.sqrt(float(par.C))
            parts += [root_c * float(v) for v in final["xi"]]
        scale = norm2(parts)
        # Two Newton runs that both stop at a residual <= NEWTON_TOLERANCE may still differ
        # by more than the residual where the optimum is sparse: the map phi -> w is only
        # Hoelder continuous there, of order q - 1 = 1/(p - 1).  A stated rule (SPEC.md),
        # with a factor 32 on the tolerance.
        hoelder = scale * hoelder_share(par.p)
        out["final.w"] = [min(ANY_STATE, bound(rho, abs(float(v)) + scale, 8, v) + hoelder)
                          for v in final["w"]]
        b_slack += hoelder * max(math.fsum(abs(float(v)) for v in r) for r in rows)
    out["final.b"] = min(ANY_STATE, bound(rho, b_magnitude, T + 16, final["b"]) + b_slack)
    if "xi" in final and primal is None:
        assert par.C is not None  # xi is the soft margin's
        invC = 1 / float(par.C)
        out["final.xi"] = [bound(rho, primal_size[i] * invC if slack else abs(float(v)), 4, v)
                           + 2 * (slack[i] * invC if slack else 0.0)
                           for i, v in enumerate(final["xi"])]
    elif "xi" in final:   # p > 2: sqrt(C) xi_e is a coordinate of w~, as w_d is
        out["final.xi"] = [min(ANY_STATE, bound(rho, abs(float(v)) + scale / root_c, 4, v)
                               + hoelder / root_c) for v in final["xi"]]
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
        norm = math.sqrt(sum(float(v) * float(v) for v in w))
        out["final.w"] = [bound(FALLBACK_RHO, abs(float(v)) + norm * T
                                * max(r[d] for r in rows), T + 8, v) for d, v in enumerate(w)]
    if "alpha" in trace.final:
        out["final.alpha"] = [bound(FALLBACK_RHO, abs(float(a)), 2, a)
                              for a in trace.final["alpha"]]
        norm = sum(abs(float(a)) for a in trace.final["alpha"])
    xi = trace.final.get("xi") or []
    if xi:
        out["final.xi"] = [bound(FALLBACK_RHO, abs(float(v)), 4, v) for v in xi]
    big = max((float_pnorm(r, 2.0) for r in rows), default=0.0)
    out["final.b"] = bound(FALLBACK_RHO, abs(float(trace.final["b"])) + norm * big * T
                           + sum(abs(float(v)) for v in xi), T + 16, trace.final["b"])
    return out
