"""PUMMA_p(delta) (Ishibashi, Hatano & Takeda 2008) in float64: forms ``primal`` and ``dual``.

Both follow ``reference.pumma`` trial for trial (SPEC.md, "romma / pumma") and share the
block-ahead driver and, from ``fast.maximum_margin``, the p = 2 step and the spaces that
hold w.

- ``primal`` (linear kernel, any p >= 2; dense or CSR X).  p = 2: w in float64, the closed
  forms (15)/(19) through :func:`fast.maximum_margin.step2` with z = x_pos - x_neg and c = 2;
  the same as a compiled per-trial loop (``fast._compiled_pumma``; ``engine=``), the default
  when numba is installed.  p > 2: w and its dual vector theta = f(w) (Lemma 3; kept as the
  last phi = alpha z + beta theta, since f(f^{-1}(phi)) = phi), case (i) in closed form and
  case (ii) by a damped Newton iteration on the Lagrange dual (18), vectorised over the
  coordinates, with the exact 2 x 2 Hessian and warm-started from the previous update's
  (alpha, beta) when that point is better than the paper's (0, 1).  The soft margin
  (24)-(25) adds the slack part of the dual: with a_e = y_e C xi_e the slack enters exactly
  as the augmented coordinates of the p = 2 case.  On the numba engine the run is a
  compiled per-trial loop (``fast._numba_pumma.pumma_pnorm_primal``, :func:`_pnorm_compiled`):
  ``PNormSpace``'s solve and apply with the same Newton compiled
  (``fast._numba_pumma.pumma_newton``) and f^{-1} by ``fast._numba.link_inverse``; an update
  whose compiled Newton stops above NEWTON_TOLERANCE leaves the loop for the finishing
  pass in Python (:func:`_finish_pending`), and the loop resumes after it.
- ``dual`` (p = 2, any kernel): fast.maximum_margin.DualSpace; section 4.2's soft margin
  adds 1/C on the support Gram matrix's diagonal, by example identity across epochs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import validate
from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..pnorm_float import link_inverse, norm
from ..reference.common import check_epochs
from ..reference.pumma import PARAMS, PummaParams
from ..reference.pumma_newton import NEWTON_MAX_STEPS as REFERENCE_NEWTON_STEPS
from ..reference.pumma_newton import NEWTON_TOLERANCE, FloatOps, newton_dual
from ..trace import Trace
from . import _compiled, _compiled_pumma
from ._compiled import TINY_SQUARES
from ._slots import (
    PUMMA_ALPHA,
    PUMMA_B,
    PUMMA_BAD_SCORE,
    PUMMA_CONST_CASE_TIE,
    PUMMA_CONST_NEWTON_MAX_STEPS,
    PUMMA_CONST_NEWTON_STOP,
    PUMMA_CONST_NEWTON_TOLERANCE,
    PUMMA_CONST_RESIDUAL_SINGULAR,
    PUMMA_CONST_SINGULAR,
    PUMMA_CONSTS_SIZE,
    PUMMA_LAST1,
    PUMMA_MISTAKES,
    PUMMA_NEG,
    PUMMA_PENDING_NEG,
    PUMMA_PENDING_POS,
    PUMMA_PENDING_TRIAL,
    PUMMA_PNORM_STATE_SIZE,
    PUMMA_POS,
    PUMMA_STATE_SIZE,
    PUMMA_TARGET,
    PUMMA_UPDATES,
)
from .driver import finite_final, forced_updates, run_blocks
from .maximum_margin import (
    RESIDUAL_SINGULAR,
    SINGULAR,
    DualSpace,
    Guarded,
    PrimalSpace,
    make_space,
    pair_products,
    step2,
)

NEWTON_MAX_STEPS = 100
NEWTON_STOP = 2.0 ** -46
#: a case-(i) test within this relative distance of a tie takes case (i) (p > 2)
CASE_TIE = 2.0 ** -42


def _scaled(phi: np.ndarray) -> tuple[float, np.ndarray]:
    """(max|phi|, phi / max|phi|): the Newton's powers are taken on the scaled vector."""
    m = float(np.max(np.abs(phi))) if phi.size else 0.0
    return m, (phi / m if m > 0 else phi)


class PNormSpace(PrimalSpace):
    """Primal state for p > 2: w, theta = f(w), tt = ||w||_q^2 = ||theta||_p^2, and the
    augmented coordinates a of the soft margin."""

    def __init__(self, X: Any, T: int, C: float | None, p: float, compiled: bool = False):
        super().__init__(X, T, C)
        self.p = p
        self.theta = np.zeros(X.shape[1])
        self.tt = 0.0
        self.last = (0.0, 1.0)  # the previous case (ii) solution (alpha, beta)
        #: ``fast._numba_pumma`` when compiled (the compiled Newton and f^-1; the p > 2 loop's
        #: space, and ``setup``'s ``compiled``), else None
        self.kernels: Any = _compiled_pumma.loops() if compiled else None

    def row(self, e: int) -> np.ndarray:
        row: np.ndarray = self.X[e].toarray()[0] if sp.issparse(self.X) else self.X[e]
        return row

    def pair_solve(self, pos: int, neg: int) -> tuple[float, float, np.ndarray] | None:
        """(alpha, beta, phi) solving problem (3) / (24) for the pair, or None if it is
        infeasible (z = 0 without soft margin; (z, E) a nonpositive multiple of (theta,
        C xi') in case (ii): reference.pumma's 2-norm Gram test)."""
        z = self.row(pos) - self.row(neg)
        inv_c, a = self.inv_c, self.a                                      # a: soft margin
        zs = 2.0 * inv_c if a is not None else 0.0                         # ||E||^2 / C
        vs = (a[pos] - a[neg]) * inv_c if a is not None else 0.0           # xi'_pos + xi'_neg
        ss = self.slack_norm2(a) if a is not None else 0.0                 # C ||xi'||^2
        target = self.tt + ss                                              # ||v~||^2
        Fz = self.link_inverse(z)
        nz = float(Fz @ z)                                                 # ||z||_p^2
        if nz + zs <= 0.0:
            return None
        alpha = 2.0 / (nz + zs)
        # case (i) when its w meets the second constraint.  For p > 2 the case matters
        # beyond w: at a tie (exact ties happen on integer data) case (i) leaves
        # theta_i = 0 where z_i = 0, case (ii) a theta_i of the size of beta, and f^-1
        # hides that in w (|theta_i|^(p-1)) until a later update; so a tie within
        # rounding (CASE_TIE, relative) is decided for case (i), as exact arithmetic does.
        if target == 0.0 or alpha * (float(Fz @ self.theta) + vs) >= target * (1 - CASE_TIE):
            return alpha, 0.0, alpha * z
        if self._parallel(z, pos, neg):
            return None
        if self.kernels is not None:
            return self._newton_compiled(z, zs, vs, ss, target, alpha)
        return self._newton(z, zs, vs, ss, target, alpha)

    def _parallel(self, z: np.ndarray, pos: int, neg: int) -> bool:
        """Whether (z, E) is a nonpositive multiple of (theta, a) (case (ii) infeasible,
        reference.pumma's 2-norm Gram test), by the residual form of its determinant
        (fast.maximum_margin.step2).  Where ||theta||^2 + ||a||^2 is below ``TINY_SQUARES`` (a
        soft margin's tiny C makes both of C's size: at C = 1e-170 the test was 0 <= 0, an
        update called infeasible) the test runs on (theta, a) times k, the power of two that
        brings their largest entry into [1/2, 1): exact, and the test is homogeneous in
        them."""
        theta, a = self.theta, self.a  # a: the soft margin's (None without one)
        tt2 = float(theta @ theta) + (float(a @ a) if a is not None else 0.0)
        if tt2 < TINY_SQUARES:
            m = max(float(np.max(np.abs(theta))),
                    float(np.max(np.abs(a))) if a is not None else 0.0)
            k = math.ldexp(1.0, -math.frexp(m)[1])
            theta, a = theta * k, (a * k if a is not None else a)
            tt2 = float(theta @ theta) + (float(a @ a) if a is not None else 0.0)
        zz2 = float(z @ z) + (2.0 if a is not None else 0.0)
        zt = float(z @ theta) + (a[pos] - a[neg] if a is not None else 0.0)
        s = zt / zz2
        d = theta - s * z
        res = float(d @ d)
        if a is not None:
            extra = a.copy()
            extra[pos] -= s
            extra[neg] += s
            res += float(extra @ extra)
        return zz2 * res <= RESIDUAL_SINGULAR * zz2 * tt2

    def link_inverse(self, phi: np.ndarray) -> np.ndarray:
        """f^{-1}(phi) (Lemma 3), by ``pnorm_float.link_inverse`` on phi / max|phi| (its
        "max" scaling) or, on the numba engine, by ``fast._numba.link_inverse`` (the same
        map, rounded as ``pnorm_float``'s "binary" scaling)."""
        if self.kernels is None:
            return link_inverse(phi, self.p, "max")
        out = np.empty_like(phi)
        self.kernels.link_inverse(phi, self.p, out)
        return out

    def pair_apply(self, pos: int, neg: int, solution: tuple[float, float, np.ndarray]
                   ) -> None:
        alpha, beta, phi = solution
        if beta:
            self.last = (alpha, beta)
        self.theta = phi
        self.w = self.link_inverse(phi)
        if self.kernels is None:
            n = norm(phi, self.p)
            self.tt = n * n
        else:  # w = f^{-1}(theta): w.theta = ||theta||_p^2
            self.tt = float(self.w @ phi)
        if self.a is not None:
            self.a *= beta
            self.a[pos] += alpha
            self.a[neg] -= alpha

    def _dual_value(self, x: np.ndarray, A: np.ndarray, S: np.ndarray, rhs: np.ndarray
                    ) -> float:
        n = norm(x @ A, self.p)
        return -0.5 * n * n - 0.5 * float(x @ S @ x) + float(rhs @ x)

    def _newton(self, z: np.ndarray, zs: float, vs: float, ss: float, target: float,
                alpha_i: float) -> tuple[float, float, np.ndarray] | None:
        """Maximise the dual L*(alpha, beta) = -||alpha z + beta theta||_p^2 / 2 - slack part
        + 2 alpha + beta ||v~||^2 (eq. (18); the slack part from the Lagrangian of (24)):
        damped Newton steps (:meth:`_direction`, :meth:`_line_search`) from :meth:`_start`,
        finished by :meth:`_finish` when they stop short of the KKT point."""
        A, S, rhs = self._dual_parts(z, zs, vs, ss, target)
        x, value = self._start(A, S, rhs)
        for _ in range(NEWTON_MAX_STEPS):
            step = self._direction(x, A, S, rhs)
            if step is None:
                # f^-1 is flat where phi is 0: at (0, 1) with z and theta of disjoint
                # supports the Hessian is singular.  Move halfway to case (i)'s point,
                # where phi covers both supports, and go on from there.
                x = 0.5 * (x + np.array([alpha_i, 0.0]))
                value = self._dual_value(x, A, S, rhs)
                continue
            cand, cand_value = self._line_search(x, value, step, A, S, rhs)
            if cand_value < value - 1e-14 * abs(value):
                break
            moved = np.abs(cand - x)
            x, value = cand, cand_value
            # quadratic convergence: after a relative step of 2^-46 the iterate is exact to
            # rounding (the reference's rule, at the fast forms' NEWTON_TOLERANCE = 2^-40)
            if (moved[0] <= NEWTON_STOP * abs(x[0])
                    and moved[1] <= NEWTON_STOP * max(abs(x[1]), 1.0)):
                break
        if self._residual(x, A, S, rhs) > NEWTON_TOLERANCE:
            x = self._finish(x, z, vs, ss, target, A, S, rhs)
        return float(x[0]), float(x[1]), x @ A

    def _newton_compiled(self, z: np.ndarray, zs: float, vs: float, ss: float, target: float,
                         alpha_i: float) -> tuple[float, float, np.ndarray]:
        """:meth:`_newton` by the compiled loop (``fast._numba_pumma.pumma_newton``): the same
        start, steps, line search and stopping rules, its sums in another order; the
        finishing pass (:meth:`_finish`) in Python when its residual exceeds
        NEWTON_TOLERANCE."""
        phi = np.empty_like(z)
        alpha, beta, residual = self.kernels.pumma_newton(
            z, self.theta, zs, vs, ss, target, alpha_i, self.p, self.last[0], self.last[1],
            NEWTON_MAX_STEPS, NEWTON_STOP, SINGULAR, phi)
        if residual > NEWTON_TOLERANCE:
            A, S, rhs = self._dual_parts(z, zs, vs, ss, target)
            x = self._finish(np.array([alpha, beta]), z, vs, ss, target, A, S, rhs)
            return float(x[0]), float(x[1]), x @ A
        return alpha, beta, phi

    def _dual_parts(self, z: np.ndarray, zs: float, vs: float, ss: float, target: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The dual (18) as phi = x A, its slack part x S x and its linear part rhs.x."""
        return (np.stack([z, self.theta]), np.array([[zs, vs], [vs, ss]]),
                np.array([2.0, target]))

    def _start(self, A: np.ndarray, S: np.ndarray, rhs: np.ndarray
               ) -> tuple[np.ndarray, float]:
        """The paper's start (0, 1) (w = v), or the previous update's (alpha, beta) when its
        dual value is larger; with that value."""
        x = np.array([0.0, 1.0])
        value = self._dual_value(x, A, S, rhs)
        warm = np.array(self.last)
        if warm[1] > 0:
            warm_value = self._dual_value(warm, A, S, rhs)
            if warm_value > value:
                x, value = warm, warm_value
        return x, value

    def _direction(self, x: np.ndarray, A: np.ndarray, S: np.ndarray, rhs: np.ndarray
                   ) -> np.ndarray | None:
        """Newton's step at x with the exact 2 x 2 Hessian of the dual, or None where the
        Hessian is singular (or not finite)."""
        p = self.p
        m, s = _scaled(x @ A)
        a = np.abs(s)
        # phi = 0 (w = 0, the soft margin's slacks carry the constraints; the exact
        # optimum can be there): f^-1 and its Jacobian vanish, as in the reference
        N = float(np.sum(a ** p)) ** (1.0 / p) if m > 0.0 else 1.0
        Fs = np.sign(s) * a ** (p - 1) / N ** (p - 2)      # f^{-1}(phi / m)
        grad = rhs - m * (A @ Fs) - S @ x
        d = (p - 1) * a ** (p - 2) / N ** (p - 2)
        AF = A @ Fs
        H = (A * d) @ A.T - (p - 2) * np.outer(AF, AF) / (N * N) + S
        det = H[0, 0] * H[1, 1] - H[0, 1] * H[1, 0]
        if not det > SINGULAR * abs(H[0, 0] * H[1, 1]) or not np.isfinite(det):
            return None
        step: np.ndarray = np.array([H[1, 1] * grad[0] - H[0, 1] * grad[1],
                                     H[0, 0] * grad[1] - H[1, 0] * grad[0]]) / det
        return step

    def _line_search(self, x: np.ndarray, value: float, step: np.ndarray, A: np.ndarray,
                     S: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, float]:
        """Backtracking from the full step (the dual is concave, Newton's direction ascends):
        the candidate and its dual value."""
        t = 1.0
        while True:
            cand = x + t * step
            cand_value = self._dual_value(cand, A, S, rhs)
            # near the optimum L* is flat to rounding: accept a step that does not lose
            # more than that (a strict test would stop at sqrt(eps) accuracy)
            if cand_value >= value - 1e-14 * abs(value) or t < 1e-6:
                return cand, cand_value
            t *= 0.5

    def _finish(self, x: np.ndarray, z: np.ndarray, vs: float, ss: float, target: float,
                A: np.ndarray, S: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """The Newton loop stopped short of the KKT point (a failed line search or a flat
        stretch; seen on small-integer data with p = 5/2, residual ~1; and, after an update
        on a tiny z, w ~ 1e23 against z ~ 1, where the line search's floor stops the first,
        far overshooting step): finish with the reference's damped Newton on the residual
        rule, in float64, and keep the better iterate."""
        # Python floats: the reference's FloatOps.sign cannot take numpy's (vs is a_pos - a_neg)
        soft = None if self.a is None else (float(vs), float(ss) * self.inv_c, 1.0 / self.inv_c)
        start = (float(x[0]), float(x[1])) if x[0] > 0 and x[1] > 0 else (0.0, 1.0)
        try:
            lam, eta = newton_dual(FloatOps(), z.tolist(), self.theta.tolist(), target,
                                   self.p, soft, start, NEWTON_TOLERANCE,
                                   max_steps=REFERENCE_NEWTON_STEPS, scaled=True)
            finished = np.array([lam, eta])
            if self._residual(finished, A, S, rhs) < self._residual(x, A, S, rhs):
                return finished
        except (ArithmeticError, ValueError):
            pass
        return x

    def _residual(self, x: np.ndarray, A: np.ndarray, S: np.ndarray, rhs: np.ndarray
                  ) -> float:
        """The KKT residual of (17), |2 - w.z| / 2 + |vv - w.th| / vv (with the soft
        margin's terms), the reference's stopping rule, divided by
        ``reference.pumma_newton.kkt_scale``, the magnitude of its terms relative to the
        right-hand sides (1 unless w.z = 2 or w.th = vv is a cancellation: float64 cannot
        bring the plain residual below u times that magnitude)."""
        w = link_inverse(x @ A, self.p, "max")
        grad = rhs - A @ w - S @ x
        mag = np.abs(A) @ np.abs(w) + np.abs(S) @ np.abs(x)
        scale = max(1.0, float(mag[0]) / 2, float(mag[1]) / float(rhs[1]))
        return (abs(float(grad[0])) / 2 + abs(float(grad[1])) / float(rhs[1])) / scale


class _Pumma(Guarded):
    """reference.pumma's docstring: start-up from the first positive and the first negative
    example (score b = -1 until a positive is stored, then +1 until a negative is; storing
    either is an update), then score w.x + b, update iff y score + xi_j < 1 - delta,
    replacing x_pos or x_neg and solving problem (3) (or (24)) for the new pair; bias (20).
    """

    def __init__(self, space: Any, y: np.ndarray, delta: float, p: float):
        self.space, self.y, self.p = space, y, p
        self.threshold = 1.0 - delta
        self.pos = -1
        self.neg = -1
        self.started = False
        self.b = -1.0
        #: per trial, the update test's left side as :meth:`wants` computes it (y score +
        #: xi_j; nan where the test is not made), recorded by :func:`forced_run` only
        self.tested: list[float] | None = None

    def scores(self, start: int, stop: int) -> np.ndarray:
        if not self.started:
            out = np.full(stop - start, self.b)
        else:
            out = self.space.block_scores(start, stop) + self.b
        if self.tested is not None:
            self._record(start, stop, out)
        return out

    def _record(self, start: int, stop: int, scores: np.ndarray) -> None:
        """The update test's left side of the block's trials, by the expressions of
        :meth:`wants` on the margins the driver forms (y * scores): the same float64
        numbers the form compares with 1 - delta."""
        assert self.tested is not None
        if not self.started:
            self.tested.extend([math.nan] * (stop - start))
            return
        tested = self.test_margins(start, stop, self.y[start:stop] * scores)
        for j in self.tight():
            if start <= j < stop:
                tested[j - start] = math.nan
        self.tested.extend(tested.tolist())

    def test_margins(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        """y score + xi_j, the update test's left side (the margins alone without a soft
        margin)."""
        slack = self.space.slack(start, stop)
        if slack is not None:
            margins = margins + self.y[start:stop] * slack
        return margins

    def wants(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        if not self.started:
            labels = self.y[start:stop]
            return ((labels > 0) & (self.pos < 0)) | ((labels < 0) & (self.neg < 0))
        return super().wants(start, stop, self.test_margins(start, stop, margins))

    def tight(self) -> tuple[int, ...]:
        return (self.pos, self.neg)   # Lemma 4: y (w.x + b) + xi = 1 exactly

    def pair(self, j: int) -> tuple[int, int]:
        return (j, self.neg) if self.y[j] > 0 else (self.pos, j)

    def solve(self, j: int, margin: float) -> Any:
        """What the update at example j does: store half a pair (start-up), or solve
        problem (3) for the new pair: (lambda, eta) for p = 2; None if infeasible."""
        pos, neg = self.pair(j)
        if pos < 0 or neg < 0:
            return "store"
        if self.p != 2.0:
            return self.space.pair_solve(pos, neg)
        zc = [(pos, 1.0), (neg, -1.0)]
        zz, vz, vv = pair_products(self.space, zc)
        scale = 0.0  # the primal forms z exactly; the dual's kernel sum may cancel
        if isinstance(self.space, DualSpace) and not self.space.kernel.is_linear:
            scale = self.space.gram(pos, pos) + self.space.gram(neg, neg) \
                + 2.0 * abs(self.space.gram(pos, neg))
        return step2(2.0, zz, vz, vv, scale, self.space.residual(zc))

    def apply(self, j: int, solution: Any) -> None:
        self.pos, self.neg = self.pair(j)
        if solution == "store":
            self.b = 1.0 if self.pos >= 0 else -1.0
            return
        self.started = True
        if self.p != 2.0:
            self.space.pair_apply(self.pos, self.neg, solution)
        else:
            self.space.apply(solution[0], solution[1], [(self.pos, 1.0), (self.neg, -1.0)],
                             j)
        self.b = -0.5 * (self.space.dot(self.pos) + self.space.dot(self.neg))

    def final(self, y: np.ndarray) -> dict[str, Any]:
        out = dict(self.space.final())
        out["b"] = self.b
        out.update(pair_indices(self.pos, self.neg))
        if self.space.inv_c:
            a = self.space.coefficients()
            out["xi"] = a * y * self.space.inv_c
        return out


def pair_indices(pos: int, neg: int) -> dict[str, int]:
    """The final state's ``pos`` and ``neg`` (-1 here: none yet), each left out while the
    run has none, as the reference does (SPEC.md 14.2.3)."""
    return {key: index for key, index in (("pos", pos), ("neg", neg)) if index >= 0}


def _resolve(form: str, kernel: Any, given: dict[str, Any]) -> tuple[Kernel, PummaParams]:
    """The parsed kernel and the resolved parameters (C "none": the hard margin), with the
    checks of what each form takes."""
    kern = parse_kernel(kernel)
    if isinstance(given.get("C"), str) and given["C"].strip().lower() == "none":
        given = dict(given, C=None)
    par = PARAMS.read(given)
    if form == "primal" and not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    if form == "dual" and par.p != 2:
        raise ParamError(f"the dual form takes p = 2 only, not p = {par.p}")
    return kern, par


def setup(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
          compiled: bool = False) -> tuple[_Pumma, dict[str, Any], Any, np.ndarray, int]:
    """The model of a run (the experiments continue it epoch by epoch), its resolved
    parameters, the validated data and epochs; ``compiled``: p > 2 solves by the compiled
    Newton (``PNormSpace``) inside the block-ahead driver, the p > 2 loop's algorithm one
    update at a time (the tests compare the two)."""
    kern, par = _resolve(form, kernel, given)
    p = float(par.p)
    X, y = validate(X, y)
    epochs = check_epochs(epochs)
    T = y.shape[0]
    C = None if par.C is None else float(par.C)
    space = PNormSpace(X, T, C, p, compiled) if p != 2.0 else make_space(form, X, T, C, kern)
    return _Pumma(space, y, float(par.delta), p), PARAMS.as_dict(par), X, y, epochs


def _run(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
         record_scores: bool, engine: str = "numpy") -> Trace:
    """A run of ``form``; with the linear kernel and when ``engine`` chooses numba
    (``fast._compiled.choose``: never under ``forced_updates``) by the compiled primal loop
    (p = 2: :func:`_primal_compiled`, p > 2: :func:`_pnorm_compiled`; the dual form's
    linear-kernel run is the primal's: w = sum_e a_e x_e, the trace's ``final`` in both
    forms; SPEC.md 14.7), else by the block-ahead driver."""
    kern, par = _resolve(form, kernel, given)
    if _compiled.choose(engine, compiled_serves=kern.is_linear, kernel=kern) == "numba":
        if float(par.p) == 2.0:
            return _primal_compiled(form, X, y, epochs, kernel, given, record_scores)
        return _pnorm_compiled(form, X, y, epochs, kernel, given, record_scores)
    model, params, X, y, epochs = setup(form, X, y, epochs, kernel, given)
    result = run_blocks(model, y, epochs, record_scores)
    return Trace(algorithm="pumma", form=form, kernel=parse_kernel(kernel).spec,
                 params=params, n_examples=y.shape[0], epochs=epochs,
                 mistakes=result.mistakes, updates=result.updates,
                 final=finite_final(model.final(y), result.updates, y.shape[0]),
                 scores=result.scores)


class _CompiledRun:
    """What a compiled primal loop reads and writes (``fast._compiled_pumma``): the data as
    the loops take it (dense X is not checked for NaN or infinity beforehand: the loop's row
    products are that check, a row holding one gives NaN or infinity, reported as validate()
    reports it), the soft margin's a (T entries, else 1) with ``held``/``mark``, the state,
    the mistake and update trials and the scores."""

    def __init__(self, form: str, X: Any, y: Any, epochs: int, kernel: Any,
                 given: dict[str, Any], record_scores: bool, state: list[float]):
        self.form = form
        self.kern, self.par = _resolve(form, kernel, given)
        self.X, y = validate(X, y, check_finite=sp.issparse(X))  # dense: the first pass
        self.y, self.labels = y, y.astype(np.float64)
        self.epochs = check_epochs(epochs)
        self.T, n = self.X.shape
        self.soft = self.par.C is not None
        self.inv_c = 1.0 / float(self.par.C) if self.par.C is not None else 0.0
        self.threshold = 1.0 - float(self.par.delta)
        self.parts = _compiled.csr_parts(self.X)
        self.a = np.zeros(self.T if self.soft else 1)
        self.held = np.zeros(self.a.shape[0], dtype=np.int64)
        self.mark = np.zeros(self.a.shape[0], dtype=bool)
        self.state = np.array(state, dtype=np.float64)
        trials = self.epochs * self.T
        self.mistakes = np.empty(trials, dtype=np.int64)
        self.updates = np.empty(trials, dtype=np.int64)
        self.record = record_scores
        self.scores = np.zeros(trials if record_scores else 1)
        self.w = np.zeros(n)

    def trace(self) -> Trace:
        """The run's trace from the state (``fast._slots``' PUMMA_*)."""
        pos, neg = int(self.state[PUMMA_POS]), int(self.state[PUMMA_NEG])
        final: dict[str, Any] = {"w": self.w.copy(), "b": float(self.state[PUMMA_B]),
                                 **pair_indices(pos, neg)}
        if self.soft:
            final["xi"] = self.a * self.y * self.inv_c
        done = self.updates[:int(self.state[PUMMA_UPDATES])].tolist()
        return Trace(algorithm="pumma", form=self.form, kernel=self.kern.spec,
                     params=PARAMS.as_dict(self.par), n_examples=self.T, epochs=self.epochs,
                     mistakes=self.mistakes[:int(self.state[PUMMA_MISTAKES])].tolist(),
                     updates=done,
                     final=finite_final(final, done, self.T),
                     scores=self.scores.tolist() if self.record else None)


def _primal_compiled(form: str, X: Any, y: Any, epochs: int, kernel: Any,
                     given: dict[str, Any], record_scores: bool) -> Trace:
    """The run for p = 2 and the linear kernel by the compiled per-trial loop
    (``fast._numba_pumma.pumma_primal``), traced as ``form``'s."""
    run = _CompiledRun(form, X, y, epochs, kernel, given, record_scores,
                       _start_state(PUMMA_STATE_SIZE))
    bad = _compiled_pumma.loops().pumma_primal(
        *run.parts, run.labels, run.epochs, run.threshold, RESIDUAL_SINGULAR, run.inv_c,
        run.soft, run.w, np.zeros(run.w.shape[0]), run.a, run.held, run.mark, run.state,
        run.mistakes, run.updates, run.scores, run.record)
    # dense X: NaN, inf named first
    _compiled.raise_if_bad(bad, run.T, run.state[PUMMA_BAD_SCORE], run.X)
    return run.trace()


def _start_state(size: int) -> list[float]:
    """A loop's start state (``fast._slots``' PUMMA_*, ``size`` slots): no pair, b = -1;
    for p > 2 (``PUMMA_PNORM_STATE_SIZE``) tt = 0, the warm start (0, 1)
    (``PNormSpace.last``), no pending Newton; every count 0."""
    state = [0.0] * size
    state[PUMMA_POS] = state[PUMMA_NEG] = state[PUMMA_B] = -1.0
    if size > PUMMA_STATE_SIZE:
        state[PUMMA_LAST1] = 1.0
        state[PUMMA_PENDING_TRIAL] = -1.0
    return state


#: The p > 2 loop's start state (``fast._numba_pumma.pumma_pnorm_primal``).
PNORM_START = _start_state(PUMMA_PNORM_STATE_SIZE)


def _pnorm_compiled(form: str, X: Any, y: Any, epochs: int, kernel: Any,
                    given: dict[str, Any], record_scores: bool) -> Trace:
    """The run for p > 2 by the compiled per-trial loop (``fast._numba_pumma.pumma_pnorm_primal``),
    traced as ``form``'s.  A ``PNormSpace`` holds w and theta (the loop's, in place) and
    the soft margin's a, for its Python finishing pass: where the loop stops at an update
    whose compiled Newton left a residual above NEWTON_TOLERANCE, :func:`_finish_pending`
    finishes and applies it, and the loop resumes at the next trial."""
    run = _CompiledRun(form, X, y, epochs, kernel, given, record_scores, PNORM_START)
    p = float(run.par.p)
    space = PNormSpace(run.X, run.T, float(run.par.C) if run.par.C is not None else None, p,
                       True)
    run.w = space.w
    if run.soft:
        assert space.a is not None  # C given: the space keeps a
        run.a = space.a
    scratch = [np.zeros(run.w.shape[0]) for _ in range(3)]  # z, f^{-1}(z), phi
    consts = np.zeros(PUMMA_CONSTS_SIZE)
    consts[PUMMA_CONST_RESIDUAL_SINGULAR] = RESIDUAL_SINGULAR
    consts[PUMMA_CONST_CASE_TIE] = CASE_TIE
    consts[PUMMA_CONST_NEWTON_TOLERANCE] = NEWTON_TOLERANCE
    consts[PUMMA_CONST_NEWTON_MAX_STEPS] = NEWTON_MAX_STEPS
    consts[PUMMA_CONST_NEWTON_STOP] = NEWTON_STOP
    consts[PUMMA_CONST_SINGULAR] = SINGULAR
    loops, start = space.kernels, 0
    while True:
        bad = loops.pumma_pnorm_primal(
            *run.parts, run.labels, run.epochs, start, run.threshold, p, run.inv_c,
            run.soft, consts, space.w, space.theta, *scratch, run.a, run.held, run.mark,
            run.state, run.mistakes, run.updates, run.scores, run.record)
        _compiled.raise_if_bad(bad, run.T, run.state[PUMMA_BAD_SCORE], run.X)
        if run.state[PUMMA_PENDING_TRIAL] < 0:
            return run.trace()
        start = _finish_pending(run, space, scratch[0]) + 1


def _finish_pending(run: _CompiledRun, space: PNormSpace, z: np.ndarray) -> int:
    """The update the p > 2 loop stopped at (state PUMMA_PENDING_TRIAL .. PUMMA_TARGET:
    trial, pos, neg, the compiled Newton's (alpha, beta), zs, vs, ss, target;
    z = x_pos - x_neg): finished by
    :meth:`PNormSpace._finish` (the reference's float64 Newton) as the driver's numba path
    does, applied by the loop's ``pnorm_pair_apply`` (pair_apply and the bias (20)) and
    counted.  Returns its trial."""
    state = run.state
    t = int(state[PUMMA_PENDING_TRIAL])
    pos, neg = int(state[PUMMA_PENDING_POS]), int(state[PUMMA_PENDING_NEG])
    x0, x1, zs, vs, ss, target = state[PUMMA_ALPHA:PUMMA_TARGET + 1].tolist()
    A, S, rhs = space._dual_parts(z, zs, vs, ss, target)
    x = space._finish(np.array([x0, x1]), z, vs, ss, target, A, S, rhs)
    space.kernels.pnorm_pair_apply(*run.parts, pos, neg, space.p, run.inv_c, run.soft,
                                   float(x[0]), float(x[1]), x @ A, space.theta, space.w,
                                   run.a, run.held, state)
    run.updates[int(state[PUMMA_UPDATES])] = t
    state[PUMMA_UPDATES] += 1
    return t


def forced_run(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
               updates: Any) -> tuple[Trace, list[float]]:
    """A shadow run (``fast.driver.forced_updates``): the form updates at exactly
    ``updates`` (an exact run's) and reports, beside every trial's score, its update test's
    left side y score + xi_j as the form compares it with 1 - delta (nan at start-up and for
    the pair members, whose test is skipped).  The reference's soft-margin fragile rule
    reads both (SPEC.md 14.5).  The decisions and outputs of ``primal``/``dual`` are not
    touched: the record exists only here.  Always the block-ahead driver (the numpy path):
    the compiled loop of p = 2 (``fast._compiled_pumma``) neither imposes updates nor
    records the test's left side."""
    model, params, X, y, epochs = setup(form, X, y, epochs, kernel, given)
    model.tested = []
    with forced_updates(updates):
        result = run_blocks(model, y, epochs, True)
    trace = Trace(algorithm="pumma", form=form, kernel=parse_kernel(kernel).spec,
                  params=params, n_examples=y.shape[0], epochs=epochs,
                  mistakes=result.mistakes, updates=result.updates, final=model.final(y),
                  scores=result.scores)
    return trace, model.tested


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
           delta: Any = 0, C: Any = None, numbers: Any = "auto",
           record_scores: bool = False, engine: str = "auto") -> Trace:
    """Primal form, any p >= 2: w (and theta = f(w) for p > 2) in float64.  ``numbers`` is
    the reference's arithmetic: checked and recorded, it does not change a float64 run.

    ``engine``: "numba" runs the compiled per-trial loop (``fast._compiled_pumma``; p > 2
    with the compiled Newton, its rare finishing pass in Python), "numpy" the block-ahead
    driver scoring a block with X[block] @ w (p > 2: the numpy Newton), "auto" (the
    default) the compiled loop when numba is installed (``fast._compiled`` says how numba
    is found).  Runs under ``forced_updates`` (shadow runs) take the numpy path whatever
    was asked, as does :func:`forced_run`."""
    return _run("primal", X, y, epochs, kernel,
                dict(p=p, delta=delta, C=C, numbers=numbers), record_scores, engine)


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
         delta: Any = 0, C: Any = None, numbers: Any = "auto",
         record_scores: bool = False, engine: str = "auto") -> Trace:
    """Dual (kernel) form, p = 2: one coefficient per support example.

    ``engine`` (the linear kernel): "numba" runs the primal form's compiled loop, whose w is
    the dual's sum_e a_e x_e and the trace's ``final`` in both forms; "numpy" the
    block-ahead driver on the coefficients; "auto" (the default) the compiled loop when
    numba is installed.  Other kernels and shadow runs take the driver whatever was asked."""
    return _run("dual", X, y, epochs, kernel, dict(p=p, delta=delta, C=C, numbers=numbers),
                record_scores, engine)
