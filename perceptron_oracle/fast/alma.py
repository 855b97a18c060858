"""ALMA_p(alpha; B, C) (Gentile 2001) in float64: forms ``primal`` and ``dual``.

Both follow ``reference.alma`` trial for trial (SPEC.md section 15) on the block-ahead driver
(fast/driver.py: the state changes only at a correction, and between corrections the
threshold (1 - alpha) gamma_k is fixed too).

- ``primal`` (linear kernel, any p >= 2; dense or CSR X): th = f(w) in float64 (f the
  gradient of (1/2)||w||_q^2, Lemma 3 of Ishibashi, Hatano & Takeda), w = f^-1(th).  A
  correction is th' = th + eta_k y x^ and th <- th' / max{1, ||th'||_p}, which is
  w'/max{1, ||w'||_q} on w' = f^-1(th') since ||f^-1(th')||_q = ||th'||_p.  p-powers are
  taken on th / max|th| (f^-1 is positively homogeneous;
  ``pnorm_float``'s "max" scaling), so nothing overflows at
  p = 2 ln n.  Scores are (X[block] @ w) / ||x||_p.
- ``dual`` (p = 2, any kernel): w = sum_i a_i x^_i with x^ = phi(x)/sqrt(k(x, x)); a score
  costs one kernel value per support example (rows k(x_s, X) cached); ||w||^2 follows the
  recurrence ||w'||^2 = ||w||^2 + 2 eta y (w.x^) + eta^2 (Gentile's Remark 5), reset to 1
  after a projection.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import validate
from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..pnorm_float import link_inverse, norm, row_norms
from ..reference.alma import PARAMS, AlmaParams
from ..reference.common import check_epochs
from ..trace import Trace
from .driver import finite_final, run_blocks


class _Alma:
    """What both forms share: k, gamma_k's threshold and eta_k."""

    def __init__(self, y: np.ndarray, params: dict[str, Any]):
        """``params``: resolved (``PARAMS.resolve``; ``experiments.pumma`` builds a model
        from them), read here as ``AlmaParams``."""
        par = PARAMS.construct(params)
        self.y = y
        self.p = float(par.p)
        self.alpha = float(par.alpha)
        self.B = 1.0 / float(par.alpha) if par.B is None else float(par.B)
        self.C = math.sqrt(2.0) if par.C is None else float(par.C)
        self.k = 1
        self._thr = self._threshold()

    def _threshold(self) -> float:
        return (1.0 - self.alpha) * self.B * math.sqrt(self.p - 1.0) / math.sqrt(self.k)

    def eta(self) -> float:
        return self.C / (math.sqrt(self.p - 1.0) * math.sqrt(self.k))

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        return margins <= self._thr

    def corrected(self) -> None:
        self.k += 1
        self._thr = self._threshold()


class _Primal(_Alma):
    def __init__(self, X: Any, y: np.ndarray, params: dict[str, Any]):
        super().__init__(y, params)
        self.X = X
        self.norms = row_norms(X, self.p)
        self.inv = np.divide(1.0, self.norms, out=np.zeros_like(self.norms),
                             where=self.norms > 0)
        self.theta = np.zeros(X.shape[1])
        self.w = np.zeros(X.shape[1])

    def scores(self, start: int, stop: int) -> np.ndarray:
        s = np.asarray(self.X[start:stop] @ self.w, dtype=np.float64).ravel()
        scores: np.ndarray = s * self.inv[start:stop]
        return scores

    def update(self, j: int) -> None:
        step = self.eta() * float(self.y[j]) * self.inv[j]
        if sp.issparse(self.X):
            lo, hi = self.X.indptr[j], self.X.indptr[j + 1]
            self.theta[self.X.indices[lo:hi]] += step * self.X.data[lo:hi]
        else:
            self.theta += step * self.X[j]
        N = norm(self.theta, self.p)
        if N > 1.0:
            self.theta /= N
        self.w = link_inverse(self.theta, self.p, "max")
        self.corrected()

    def final(self) -> dict[str, Any]:
        return {"w": self.w.copy(), "k": self.k}


class _Dual(_Alma):
    def __init__(self, X: Any, y: np.ndarray, params: dict[str, Any], kernel: Any):
        super().__init__(y, params)
        self.X, self.kernel = X, kernel
        diag = np.asarray(kernel.diagonal(X), dtype=np.float64)
        self.kn = np.sqrt(np.maximum(diag, 0.0))
        self.inv = np.divide(1.0, self.kn, out=np.zeros_like(self.kn), where=self.kn > 0)
        self.support: list[int] = []
        self.where: dict[int, int] = {}
        self.a = np.zeros(0)
        self.rows = np.zeros((0, X.shape[0]))
        self.ww = 0.0

    def _ensure(self, j: int) -> int:
        if j not in self.where:
            row = np.asarray(self.kernel.matrix(self.X[j:j + 1], self.X),
                             dtype=np.float64).ravel() * self.inv[j]
            self.where[j] = len(self.support)
            self.support.append(j)
            self.rows = np.vstack([self.rows, row[None, :]])
            self.a = np.append(self.a, 0.0)
        return self.where[j]

    def scores(self, start: int, stop: int) -> np.ndarray:
        if not self.support:
            return np.zeros(stop - start)
        return (self.a @ self.rows[:, start:stop]) * self.inv[start:stop]

    def update(self, j: int) -> None:
        eta, label = self.eta(), float(self.y[j])
        if self.kn[j] > 0:
            s = float(self.scores(j, j + 1)[0])
            i = self._ensure(j)
            self.a[i] += eta * label
            ww = self.ww + 2.0 * eta * label * s + eta * eta
        else:
            ww = self.ww
        if ww > 1.0:
            self.a /= math.sqrt(ww)
            ww = 1.0
        self.ww = ww
        self.corrected()

    def final(self) -> dict[str, Any]:
        T = self.X.shape[0]
        if self.kernel.is_linear:
            w = np.zeros(self.X.shape[1])
            for i, j in enumerate(self.support):
                row = self.X[j].toarray().ravel() if sp.issparse(self.X) else self.X[j]
                w += (self.a[i] * self.inv[j]) * row
            return {"w": w, "k": self.k}
        alpha = np.zeros(T)
        for i, j in enumerate(self.support):
            alpha[j] = self.a[i]
        return {"alpha": alpha, "k": self.k}


def _setup(X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any]
           ) -> tuple[Kernel, AlmaParams, Any, np.ndarray, int]:
    kern = parse_kernel(kernel)
    par = PARAMS.read(given)
    X, y = validate(X, y, check_finite=True)
    return kern, par, X, y, check_epochs(epochs)


def _trace(form: str, kern: Any, params: dict[str, Any], y: np.ndarray, epochs: int,
           model: Any, record_scores: bool) -> Trace:
    result = run_blocks(model, y, epochs, record_scores)
    return Trace(algorithm="alma", form=form, kernel=kern.spec, params=params,
                 n_examples=y.shape[0], epochs=epochs, mistakes=result.mistakes,
                 updates=result.updates,
                 final=finite_final(model.final(), result.updates, y.shape[0]),
                 scores=result.scores)


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
           alpha: Any = Fraction(1, 10), B: Any = None, C: Any = None,
           record_scores: bool = False) -> Trace:
    """Primal form, any p: th = f(w) and w = f^-1(th) in float64 (linear kernel)."""
    kern, par, X, y, epochs = _setup(X, y, epochs, kernel, dict(p=p, alpha=alpha, B=B, C=C))
    if not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    params = PARAMS.as_dict(par)
    return _trace("primal", kern, params, y, epochs, _Primal(X, y, params), record_scores)


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
         alpha: Any = Fraction(1, 10), B: Any = None, C: Any = None,
         record_scores: bool = False) -> Trace:
    """Dual form, p = 2, any kernel: one coefficient per support example."""
    kern, par, X, y, epochs = _setup(X, y, epochs, kernel, dict(p=p, alpha=alpha, B=B, C=C))
    if par.p != 2:
        raise ParamError("the dual form takes p = 2 only (the p-norm link has no kernel form)")
    params = PARAMS.as_dict(par)
    return _trace("dual", kern, params, y, epochs, _Dual(X, y, params, kern), record_scores)
