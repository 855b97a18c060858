"""ROMMA (Li & Long 2002; the base of PUMMA, Ishibashi, Hatano & Takeda 2008) in float64.

Forms ``primal`` (w in float64; linear kernel; dense or CSR X) and ``dual`` (any kernel).
Both follow ``reference.romma`` trial for trial (SPEC.md, "romma / pumma") and share the
block-ahead driver: the state changes only at an update, so a block of upcoming trials is
scored with one product.

This module also holds what ROMMA and PUMMA share (``fast.pumma`` imports it):

- :func:`step2`: the closed-form solution of the relaxed problem for p = 2 (paper eqs. (15)
  and (19), in the form of ROMMA's problem (2)): minimise ||w||^2 subject to w.z >= c and
  w.v >= ||v||^2, where v is the current weight vector.  Case (i): w = (c / ||z||^2) z when
  that already satisfies the second constraint (c v.z >= ||z||^2 ||v||^2, or v = 0); case
  (ii): w = lambda z + eta v with both constraints active, a 2 x 2 linear system.
  ROMMA calls it with z = y x, c = 1; PUMMA with z = x_pos - x_neg, c = 2 (Theorem 2's
  reduction: ROMMA on (x_pos - x_neg) / 2).
- the *spaces* that hold w and give the inner products the step needs:
  :class:`PrimalSpace` (w itself) and :class:`DualSpace` (w = sum_e a_e phi(x_e), one
  coefficient per example: section 4.1's recurrence w_t = lambda_t z_t + eta_t w_{t-1}
  expanded, so a score costs one kernel value per stored example, at most two per stored
  pair).  Both carry section 4.2's 2-norm soft margin as the augmented space
  x~_e = (x_e, y_e e_e / sqrt(C)): the kernel gains delta_ef / C, by example identity across
  epochs, and the update test of example e gains its slack xi_e = y_e a_e / C (the score,
  the prediction, stays w.x on the original x).
- :class:`Guarded`: the driver's update test plus feasibility and Lemma 4's tight examples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import validate
from ..errors import ParamError
from ..kernels import KERNEL_CACHE_BYTES, Kernel, parse_kernel
from ..reference.common import check_epochs
from ..reference.romma import PARAMS
from ..trace import Trace
from .driver import run_blocks

#: a 2 x 2 system whose determinant is below this fraction of ||z||^2 ||v||^2 is singular
#: in float64 (z parallel to v); see SPEC.md for how the reference treats such a trial.
SINGULAR = 2.0 ** -49
#: the same from the residual form of D: ||v - (v.z/||z||^2) z|| <= 2^-40 ||v|| is parallel
RESIDUAL_SINGULAR = 2.0 ** -80


def step2(c: float, zz: float, vz: float, vv: float, zz_scale: float = 0.0,
          residual: Any = None) -> tuple[float, float] | None:
    """(lambda, eta) with w_new = lambda z + eta v, or None when the problem is infeasible
    (z = 0, or z parallel to v with case (i) not applicable).  ``zz_scale``: the magnitude
    of the terms of ||z||^2 (a difference of kernel values), below whose rounding z = 0.
    ``residual(vz / zz)``, where the form has the vectors, returns ||v - (vz/zz) z||^2, so
    that D = ||z||^2 ||v - (v.z/||z||^2) z||^2 without the cancellation of
    ||z||^2 ||v||^2 - (v.z)^2 (which cannot tell a near-parallel pair, sin^2 < 2^-49, from
    a parallel one)."""
    if zz <= SINGULAR * zz_scale:
        return None
    if vv == 0.0 or c * vz >= zz * vv:           # case (i): eta = 0, eq. (15)
        return c / zz, 0.0
    if residual is None:                          # case (ii): eq. (19)
        det = zz * vv - vz * vz
        if det <= SINGULAR * zz * vv:
            return None
    else:
        det = zz * residual(vz / zz)
        if det <= RESIDUAL_SINGULAR * zz * vv:
            return None
    return vv * (c - vz) / det, (zz * vv - c * vz) / det


def _row_dot(X: Any, e: int, w: np.ndarray) -> float:
    if sp.issparse(X):
        lo, hi = X.indptr[e], X.indptr[e + 1]
        return float(X.data[lo:hi] @ w[X.indices[lo:hi]])
    return float(X[e] @ w)


def _row_add(X: Any, e: int, step: float, w: np.ndarray) -> None:
    if sp.issparse(X):
        lo, hi = X.indptr[e], X.indptr[e + 1]
        w[X.indices[lo:hi]] += step * X.data[lo:hi]
    else:
        w += step * X[e]


def _gram_pair(X: Any, e: int, f: int) -> float:
    if sp.issparse(X):
        return float(X[e].multiply(X[f]).sum())
    return float(X[e] @ X[f])


class PrimalSpace:
    """w in R^n (linear kernel); with a soft margin also a_e, the augmented coordinates.

    Scores are w.x (the original space); the soft margin's part a_e / C of the augmented
    score is :meth:`slack` (it enters the update test, not the prediction)."""

    def __init__(self, X: Any, T: int, C: float | None):
        self.X = X
        self.w = np.zeros(X.shape[1])
        self.inv_c = 0.0 if C is None else 1.0 / C
        self.a = np.zeros(T) if C is not None else None

    def block_scores(self, start: int, stop: int) -> np.ndarray:
        return self.X[start:stop] @ self.w  # X is finite: validate() checked it

    def slack(self, start: int, stop: int) -> np.ndarray | None:
        """a_j / C for the block's examples (y_j times the slack xi_j), or None."""
        return None if self.a is None else self.a[start:stop] * self.inv_c

    def coefficients(self) -> np.ndarray:
        return self.a

    def ensure(self, e: int) -> None:
        pass

    def dot(self, e: int) -> float:
        """w~ . x~_e (the augmented score of example e without bias)."""
        out = _row_dot(self.X, e, self.w)
        return out + self.a[e] * self.inv_c if self.a is not None else out

    def gram(self, e: int, f: int) -> float:
        return _gram_pair(self.X, e, f) + (self.inv_c if e == f else 0.0)

    def pair(self, zc: list[tuple[int, float]]) -> tuple[float, float]:
        """||z~||^2 and w~.z~ with z = sum_e coef_e x_e formed explicitly (no cancellation:
        z = 0 exactly iff x_pos = x_neg)."""
        z = np.zeros(self.X.shape[1])
        for e, coef in zc:
            _row_add(self.X, e, coef, z)
        zz, vz = float(z @ z), float(self.w @ z)
        if self.a is not None:
            zz += sum(ce * ce for _, ce in zc) * self.inv_c
            vz += sum(ce * self.a[e] for e, ce in zc) * self.inv_c
        self.z = z
        return zz, vz

    def residual(self, zc: list[tuple[int, float]]) -> Any:
        """r(s) = ||v~ - s z~||^2 for the z~ of the last :meth:`pair` (see step2)."""
        def r(s: float) -> float:
            d = self.w - s * self.z
            out = float(d @ d)
            if self.a is not None:
                extra = self.a.copy()
                for e, ce in zc:
                    extra[e] -= s * ce
                out += float(extra @ extra) * self.inv_c
            return out
        return r

    def norm2(self) -> float:
        out = float(self.w @ self.w)
        return out + float(self.a @ self.a) * self.inv_c if self.a is not None else out

    def apply(self, lam: float, eta: float, zc: list[tuple[int, float]]) -> None:
        """w~ <- eta w~ + lam z~ with z~ = sum_e coef_e x~_e."""
        if eta != 1.0:
            self.w *= eta
            if self.a is not None:
                self.a *= eta
        for e, coef in zc:
            _row_add(self.X, e, lam * coef, self.w)
            if self.a is not None:
                self.a[e] += lam * coef

    def final(self) -> dict[str, Any]:
        return {"w": self.w.tolist()}


class DualSpace:
    """w = sum_e a_e phi(x_e) over the examples that took part in an update (the support).

    Kept: the coefficients a (by support position), the kernel rows k(x_s, X) of the support
    (each computed once, up to ``KERNEL_CACHE_BYTES``; further rows are recomputed per block)
    and the support's Gram matrix G (with 1/C added on its diagonal for the soft margin)."""

    def __init__(self, X: Any, T: int, C: float | None, kernel: Kernel):
        self.X, self.kernel, self.T = X, kernel, T
        self.inv_c = 0.0 if C is None else 1.0 / C
        self.support: list[int] = []
        self.slot = np.full(T, -1, dtype=np.int64)
        self.coef = np.zeros(16)
        self.G = np.zeros((16, 16))
        self.max_cached = max(1, KERNEL_CACHE_BYTES // (8 * T))
        self.rows = np.zeros((min(16, self.max_cached), T))

    def block_scores(self, start: int, stop: int) -> np.ndarray:
        S = len(self.support)
        cached = min(S, self.max_cached)
        s = self.coef[:cached] @ self.rows[:cached, start:stop]
        if S > cached:
            extra = self.kernel.matrix(self.X[start:stop], self.X[self.support[cached:]])
            s += extra @ self.coef[cached:S]
        return s

    def slack(self, start: int, stop: int) -> np.ndarray | None:
        """a_j / C for the block's examples (y_j times the slack xi_j), or None."""
        if not self.inv_c:
            return None
        slots = self.slot[start:stop]
        out = np.zeros(stop - start)
        inside = slots >= 0
        out[inside] = self.coef[slots[inside]] * self.inv_c
        return out

    def ensure(self, e: int) -> None:
        """Make example e a support example (coefficient 0), computing its kernel row."""
        if self.slot[e] >= 0:
            return
        S = len(self.support)
        if S == self.coef.shape[0]:
            self.coef = np.concatenate([self.coef, np.zeros(S)])
            G = np.zeros((2 * S, 2 * S))
            G[:S, :S] = self.G[:S, :S]
            self.G = G
        if S < self.max_cached:
            if S == self.rows.shape[0]:
                grown = np.zeros((min(2 * S, self.max_cached), self.T))
                grown[:S] = self.rows
                self.rows = grown
            self.rows[S] = self.kernel.matrix(self.X[e:e + 1], self.X)[0]
            k = self.rows[S, self.support + [e]]
        else:
            k = self.kernel.matrix(self.X[e:e + 1], self.X[self.support + [e]])[0]
        self.slot[e] = S
        self.support.append(e)
        self.G[S, :S + 1] = k
        self.G[:S + 1, S] = k
        self.G[S, S] += self.inv_c

    def _Ga(self) -> np.ndarray:
        S = len(self.support)
        return self.G[:S, :S] @ self.coef[:S]

    def dot(self, e: int) -> float:
        S = len(self.support)
        return float(self.G[self.slot[e], :S] @ self.coef[:S])

    def gram(self, e: int, f: int) -> float:
        return float(self.G[self.slot[e], self.slot[f]])

    def residual(self, zc: list[tuple[int, float]]) -> Any:
        return None  # no vectors: step2 uses ||z||^2 ||v||^2 - (v.z)^2

    def pair(self, zc: list[tuple[int, float]]) -> tuple[float, float]:
        """||z~||^2 and v~.z~ from kernel values: k(p,p) + k(n,n) - 2 k(p,n) cancels when
        x_pos is close to x_neg (see :func:`step2`'s zz_scale)."""
        vz = sum(ce * self.dot(e) for e, ce in zc)
        if self.kernel.is_linear:  # form z itself: no cancellation
            z = np.zeros(self.X.shape[1])
            for e, coef in zc:
                _row_add(self.X, e, coef, z)
            return float(z @ z) + sum(ce * ce for _, ce in zc) * self.inv_c, vz
        zz = sum(ce * cf * self.gram(e, f) for e, ce in zc for f, cf in zc)
        return zz, vz

    def norm2(self) -> float:
        S = len(self.support)
        return float(self.coef[:S] @ self._Ga())

    def apply(self, lam: float, eta: float, zc: list[tuple[int, float]]) -> None:
        S = len(self.support)
        if eta != 1.0:
            self.coef[:S] *= eta
        for e, coef in zc:
            self.coef[self.slot[e]] += lam * coef

    def coefficients(self) -> np.ndarray:
        """a_e for every example (0 outside the support)."""
        out = np.zeros(self.T)
        S = len(self.support)
        out[self.support] = self.coef[:S]
        return out

    def final(self) -> dict[str, Any]:
        """{"w"} for the linear kernel (w = sum_e a_e x_e), else {"alpha"}: a_e for every
        example index (the reference's layout)."""
        if self.kernel.is_linear:
            S = len(self.support)
            rows = self.X[self.support] if S else self.X[:0]
            w = rows.T @ self.coef[:S] if S else np.zeros(self.X.shape[1])
            return {"w": np.asarray(w).ravel().tolist()}
        return {"alpha": self.coefficients().tolist()}


def pair_products(space: Any, zc: list[tuple[int, float]]) -> tuple[float, float, float]:
    """||z~||^2, v~.z~ and ||v~||^2 for z~ = sum_e coef_e x~_e and the current w~ = v~."""
    for e, _ in zc:
        space.ensure(e)
    zz, vz = space.pair(zc)
    return zz, vz, space.norm2()


def make_space(form: str, X: Any, T: int, C: float | None, kern: Kernel) -> Any:
    if form == "primal":
        if not kern.is_linear:
            raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
        return PrimalSpace(X, T, C)
    return DualSpace(X, T, C, kern)


# -- ROMMA ------------------------------------------------------------------------------------

class Guarded:
    """The driver's update test plus feasibility: a trial whose problem is infeasible is not
    an update (the state stays, so the block's scores stay valid); the first feasible
    candidate's solution is kept for :meth:`update`."""

    threshold: float

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        wants = self.wants(start, stop, margins)
        for i in np.flatnonzero(wants):
            solution = self.solve(start + int(i), float(margins[i]))
            if solution is not None:
                self.pending = (start + int(i), solution)
                break
            wants[i] = False
        return wants

    def wants(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        wants = margins < self.threshold
        for j in self.tight():  # margin exactly 1 (Lemma 4): never an update
            if start <= j < stop:
                wants[j - start] = False
        return wants

    def tight(self) -> tuple[int, ...]:
        """The examples whose update constraint is tight in exact arithmetic."""
        return ()

    def update(self, j: int) -> None:
        done, solution = self.pending
        assert done == j
        self.apply(j, solution)


class _Romma(Guarded):
    """Score w.x; update iff y w.x < 1 - delta, solving problem (2) with z = y x, c = 1."""

    def __init__(self, space: Any, y: np.ndarray, delta: float):
        self.space, self.y = space, y
        self.threshold = 1.0 - delta
        self.last = -1   # the example of the last update: y w.x = 1 exactly

    def tight(self) -> tuple[int, ...]:
        return (self.last,)

    def scores(self, start: int, stop: int) -> np.ndarray:
        return self.space.block_scores(start, stop)

    def solve(self, j: int, margin: float) -> Any:
        """(lambda, eta) or None (infeasible: z = 0, or z a nonpositive multiple of v)."""
        self.space.ensure(j)
        zc = [(j, float(self.y[j]))]
        zz, vz, vv = pair_products(self.space, zc)
        return step2(1.0, zz, vz, vv, residual=self.space.residual(zc))

    def apply(self, j: int, solution: tuple[float, float]) -> None:
        self.space.apply(solution[0], solution[1], [(j, float(self.y[j]))])
        self.last = j

    def final(self) -> dict[str, Any]:
        return self.space.final()


def setup(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any]
          ) -> tuple[_Romma, dict[str, Any], Any, np.ndarray, int]:
    """The model of a run (the experiments continue it epoch by epoch), its resolved
    parameters, the validated data and epochs."""
    kern = parse_kernel(kernel)
    p = PARAMS.resolve(given)
    if form == "primal" and not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    X, y = validate(X, y)
    epochs = check_epochs(epochs)
    space = make_space(form, X, y.shape[0], None, kern)
    return _Romma(space, y, float(p["delta"])), p, X, y, epochs


def _romma_run(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
               record_scores: bool) -> Trace:
    model, p, X, y, epochs = setup(form, X, y, epochs, kernel, given)
    result = run_blocks(model, y, epochs, record_scores)
    return Trace(algorithm="romma", form=form, kernel=parse_kernel(kernel).spec, params=p,
                 n_examples=y.shape[0], epochs=epochs, mistakes=result.mistakes,
                 updates=result.updates, final=model.final(), scores=result.scores)


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", delta: Any = 0,
           numbers: Any = "auto", record_scores: bool = False) -> Trace:
    """Primal form: w in float64, block-ahead scoring with X[block] @ w.  ``numbers`` is the
    reference's arithmetic; it is checked and recorded, and does not change a float64 run."""
    return _romma_run("primal", X, y, epochs, kernel, dict(delta=delta, numbers=numbers),
                      record_scores)


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", delta: Any = 0,
         numbers: Any = "auto", record_scores: bool = False) -> Trace:
    """Dual (kernel) form: one coefficient per support example, cached kernel rows."""
    return _romma_run("dual", X, y, epochs, kernel, dict(delta=delta, numbers=numbers),
                      record_scores)
