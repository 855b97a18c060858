"""The Second-Order Perceptron (Cesa-Bianchi, Conconi, Gentile 2005) in float64: forms
``primal`` and ``dual``.

Both follow ``reference.second_order`` trial for trial (SPEC.md, "second_order") through the
block-ahead driver.  The state changes only at a mistake, and the decision is the sign of
s = x^T A^{-1} v (A = a_k I + X X^T; the score s / (1 + x^T A^{-1} x) has the same sign), so a
block of trials is decided by one product; the recorded score is the paper's w_t . x_t.

- ``primal`` (linear kernel): A^{-1} (n x n) by Sherman-Morrison rank-one updates (in
  place, numpy; see ``_Primal`` on BLAS threads), u = A^{-1} v; a block is X[block] @ u.
- ``dual`` (any kernel; Theorem 3.3): H = (a_k I + G)^{-1} over the mistakes grown by a
  bordered update, the kernel row of each mistake against X (one row per mistake);
  a block is (H y)^T K[mistakes, block].
- Drift: every ``DRIFT_EVERY`` updates a residual ||(A)(A^{-1} p) - p|| with a fixed probe p;
  above ``DRIFT_TOL`` the inverse is recomputed from A (Cholesky).  The adaptive a_k
  recomputes it at every mistake (a changes).
- ``pseudoinverse=true`` (both forms): a basis of span(X) among the mistakes, G_B^{-1} and
  Bm^{-1} (SPEC.md); x is inside span(X) iff its squared distance is at most
  ``PINV_RANK_TOL`` k(x, x).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..data import validate
from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..reference._common import check_epochs
from ..reference.second_order import PINV_RANK_TOL, a_k, resolve_params
from ..trace import Trace
from ._driver import run_blocks

DRIFT_EVERY = 32
DRIFT_TOL = 1e-9


def _dense_row(X: Any, j: int) -> np.ndarray:
    return X[j].toarray().ravel() if sp.issparse(X) else X[j]


class _Primal:
    """A^{-1} = (a_k I + X X^T)^{-1} (n x n, full), u = A^{-1} v.

    The rank-one update is a numpy outer product rather than BLAS ``dsyr``: under CPU
    contention a multi-threaded BLAS level-2 call costs milliseconds (measured: 5.7 ms for
    dsyr at n = 100 against 0.2 ms for the ufunc route), and the block products dominate
    anyway.  C = X X^T is formed from the mistakes only for a drift check or a refactor."""

    def __init__(self, X: Any, y: np.ndarray, p: dict[str, Any], record: bool):
        self.X, self.y, self.p, self.record = X, y, p, record
        n = X.shape[1]
        self.k = 1
        self.a = float(a_k(p, 1))
        self.Ainv = np.eye(n) / self.a
        self.v = np.zeros(n)
        self.u = np.zeros(n)
        self.support: list[int] = []
        self.probe = np.cos(np.arange(n) + 1.0)
        self.refactors = 0

    def scores(self, start: int, stop: int) -> np.ndarray:
        Xb = self.X[start:stop]
        s = np.asarray(Xb @ self.u).ravel()
        if not self.record:
            return s
        Z = np.asarray(Xb @ self.Ainv)
        Xd = Xb.toarray() if sp.issparse(Xb) else Xb
        q = np.einsum("ij,ij->i", Z, Xd)
        return s / (1.0 + q)

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        return margins <= 0

    def update(self, j: int) -> None:
        x = _dense_row(self.X, j)
        z = self.Ainv @ x                                   # A^{-1} x
        q = float(x @ z)
        self.Ainv -= np.outer(z, z * (1.0 / (1.0 + q)))     # Sherman-Morrison
        self.v += self.y[j] * x
        self.support.append(j)
        self.k += 1
        new_a = float(a_k(self.p, self.k))
        if new_a != self.a:
            self.a = new_a
            self._refactor()
        elif self.k % DRIFT_EVERY == 0 and self._drift() > DRIFT_TOL:
            self._refactor()
        self.u = self.Ainv @ self.v

    def _A(self) -> np.ndarray:
        Xm = self.X[self.support]
        Xm = Xm.toarray() if sp.issparse(Xm) else Xm
        return Xm.T @ Xm + self.a * np.eye(self.X.shape[1])

    def _drift(self) -> float:
        """max |A (A^{-1} p) - p| / max |p|: how far the kept inverse has drifted."""
        r = self._A() @ (self.Ainv @ self.probe) - self.probe
        return float(np.max(np.abs(r)) / np.max(np.abs(self.probe)))

    def _refactor(self) -> None:
        A = self._A()
        self.Ainv = sla.cho_solve(sla.cho_factor(A), np.eye(A.shape[0]))
        self.Ainv = 0.5 * (self.Ainv + self.Ainv.T)
        self.refactors += 1

    def final(self, support: list[int]) -> dict[str, Any]:
        return {"support": support, "w": (self.Ainv @ self.v).tolist(),
                "v": self.v.tolist()}


class _Grow:
    """A square array that grows by one row and column per mistake (capacity doubling)."""

    def __init__(self) -> None:
        self.data = np.zeros((16, 16))
        self.k = 0

    @property
    def view(self) -> np.ndarray:
        return self.data[:self.k, :self.k]

    def grow(self) -> None:
        if self.k == self.data.shape[0]:
            bigger = np.zeros((2 * self.k, 2 * self.k))
            bigger[:self.k, :self.k] = self.view
            self.data = bigger
        self.k += 1


class _Rows:
    """Kernel rows k(x_m, X) of the mistakes' examples, one computed per mistake."""

    def __init__(self, X: Any, kernel: Kernel):
        self.X, self.kernel = X, kernel
        self.data = np.zeros((16, X.shape[0]))
        self.k = 0

    def add(self, j: int) -> np.ndarray:
        if self.k == self.data.shape[0]:
            bigger = np.zeros((2 * self.k, self.data.shape[1]))
            bigger[:self.k] = self.data[:self.k]
            self.data = bigger
        self.data[self.k] = self.kernel.matrix(self.X[j:j + 1], self.X)[0]
        self.k += 1
        return self.data[self.k - 1]

    def block(self, start: int, stop: int) -> np.ndarray:
        return self.data[:self.k, start:stop]


class _Dual:
    """Theorem 3.3: H = (a_k I + G)^{-1} over the mistakes, bordered per mistake."""

    def __init__(self, X: Any, y: np.ndarray, p: dict[str, Any], kernel: Kernel,
                 record: bool):
        self.X, self.y, self.p, self.record = X, y, p, record
        self.kdiag = kernel.diagonal(X)
        self.rows = _Rows(X, kernel)
        self.H, self.G = _Grow(), _Grow()
        self.labels: list[float] = []
        self.support: list[int] = []
        self.coef = np.zeros(0)
        self.k = 1
        self.a = float(a_k(p, 1))
        self.refactors = 0

    def scores(self, start: int, stop: int) -> np.ndarray:
        Kb = self.rows.block(start, stop)
        s = self.coef @ Kb
        if not self.record:
            return s
        bhb = np.einsum("ij,ij->j", Kb, self.H.view @ Kb)
        return self.a * s / (self.a + self.kdiag[start:stop] - bhb)

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        return margins <= 0

    def update(self, j: int) -> None:
        k = self.H.k
        b = self.rows.data[:k, j].copy()
        c = self.kdiag[j]
        h = self.H.view @ b
        delta = self.a + c - b @ h
        self.rows.add(j)
        self.support.append(j)
        self.labels.append(float(self.y[j]))
        self.H.grow()
        self.G.grow()
        H, G = self.H.data, self.G.data
        H[:k, :k] += np.outer(h, h) / delta
        H[:k, k] = H[k, :k] = -h / delta
        H[k, k] = 1.0 / delta
        G[:k, k] = G[k, :k] = b
        G[k, k] = c
        self.k += 1
        new_a = float(a_k(self.p, self.k))
        if new_a != self.a:
            self.a = new_a
            self._refactor()
        elif self.k % DRIFT_EVERY == 0 and self._drift() > DRIFT_TOL:
            self._refactor()
        self.coef = self.H.view @ np.asarray(self.labels)

    def _drift(self) -> float:
        probe = np.cos(np.arange(self.H.k) + 1.0)
        r = (self.G.view + self.a * np.eye(self.H.k)) @ (self.H.view @ probe) - probe
        return float(np.max(np.abs(r)))

    def _refactor(self) -> None:
        k = self.H.k
        A = self.G.view + self.a * np.eye(k)
        self.H.data[:k, :k] = sla.cho_solve(sla.cho_factor(A), np.eye(k))
        self.refactors += 1

    def final(self, support: list[int], kern: Kernel) -> dict[str, Any]:
        out: dict[str, Any] = {"support": support}
        coef = self.coef if len(self.labels) else np.zeros(0)
        if kern.is_linear:
            Xs = self.X[self.support] if self.support else None
            out["w"] = (np.asarray(Xs.T @ coef).ravel() if Xs is not None
                        else np.zeros(self.X.shape[1])).tolist()
            out["v"] = _v(self.X, self.y, self.support).tolist()
        else:
            out["alpha"] = coef.tolist()
        return out


def _v(X: Any, y: np.ndarray, support: list[int]) -> np.ndarray:
    if not support:
        return np.zeros(X.shape[1])
    return np.asarray(X[support].T @ y[support].astype(np.float64)).ravel()


class _Pinv:
    """The pseudoinverse form: basis B of span(X) among the mistakes, G_B^{-1}, Bm^{-1}, gamma
    (reference.second_order._Pinv, in float64)."""

    def __init__(self, X: Any, y: np.ndarray, kernel: Kernel, record: bool):
        self.X, self.y, self.record = X, y, record
        self.kdiag = kernel.diagonal(X)
        self.rows = _Rows(X, kernel)           # kernel rows of the basis examples
        self.GBinv, self.Bminv = _Grow(), _Grow()
        self.gamma = np.zeros(0)
        self.basis: list[int] = []
        self.support: list[int] = []

    def _parts(self, start: int, stop: int) -> tuple[np.ndarray, ...]:
        Kb = self.rows.block(start, stop)
        A = self.GBinv.view @ Kb                                   # coordinates alpha
        rho = self.kdiag[start:stop] - np.einsum("ij,ij->j", Kb, A)
        inside = rho <= PINV_RANK_TOL * self.kdiag[start:stop]
        Z = self.Bminv.view @ A
        return A, rho, inside, Z

    def scores(self, start: int, stop: int) -> np.ndarray:
        A, _, inside, Z = self._parts(start, stop)
        s = np.where(inside, self.gamma @ Z, 0.0)
        if not self.record:
            return s
        q = np.einsum("ij,ij->j", Z, A)
        return np.where(inside, s / (1.0 + q), 0.0)

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        return margins <= 0

    def update(self, j: int) -> None:
        A, rho, inside, Z = self._parts(j, j + 1)
        al, z = A[:, 0], Z[:, 0]
        self.support.append(j)
        r = self.GBinv.k
        if not inside[0]:
            rh = float(rho[0])
            self.GBinv.grow()
            self.Bminv.grow()
            G, B = self.GBinv.data, self.Bminv.data
            G[:r, :r] += np.outer(al, al) / rh
            G[:r, r] = G[r, :r] = -al / rh
            G[r, r] = 1.0 / rh
            B[:r, r] = B[r, :r] = 0.0
            B[r, r] = 1.0
            self.gamma = np.append(self.gamma, float(self.y[j]))
            self.basis.append(j)
            self.rows.add(j)
            return
        q = float(z @ al)
        self.Bminv.data[:r, :r] -= np.outer(z, z) / (1.0 + q)
        self.gamma = self.gamma + self.y[j] * al

    def final(self, support: list[int], kern: Kernel) -> dict[str, Any]:
        coef = (self.GBinv.view @ (self.Bminv.view @ self.gamma)) if self.basis else []
        at = dict(zip(self.basis, np.asarray(coef).tolist()))
        alpha, seen = [], set()
        for j in self.support:
            alpha.append(at[j] if j in at and j not in seen else 0.0)
            seen.add(j)
        out: dict[str, Any] = {"support": support}
        if kern.is_linear:
            Xs = self.X[self.support] if self.support else None
            out["w"] = (np.asarray(Xs.T @ np.asarray(alpha)).ravel() if Xs is not None
                        else np.zeros(self.X.shape[1])).tolist()
            out["v"] = _v(self.X, self.y, self.support).tolist()
        else:
            out["alpha"] = alpha
        return out


def _run(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
         record_scores: bool) -> Trace:
    kern = parse_kernel(kernel)
    p = resolve_params(given)
    if form == "primal" and not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    X, y = validate(X, y)
    epochs = check_epochs(epochs)
    if p["pseudoinverse"]:
        model: Any = _Pinv(X, y, kern, record_scores)
    elif form == "primal":
        model = _Primal(X, y, p, record_scores)
    else:
        model = _Dual(X, y, p, kern, record_scores)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        result = run_blocks(model, y, epochs, record_scores)
    T = y.shape[0]
    support = [t % T for t in result.updates]
    final = model.final(support) if isinstance(model, _Primal) else model.final(support, kern)
    return Trace(algorithm="second_order", form=form, kernel=kern.spec, params=p,
                 n_examples=T, epochs=epochs, mistakes=result.mistakes,
                 updates=result.updates, final=final, scores=result.scores)


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", a: Any = 1,
           a_growth: Any = "constant", pseudoinverse: Any = False,
           record_scores: bool = False) -> Trace:
    """Primal form: (a_k I + X X^T)^{-1} by rank-one updates; linear kernel only."""
    return _run("primal", X, y, epochs, kernel,
                dict(a=a, a_growth=a_growth, pseudoinverse=pseudoinverse), record_scores)


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", a: Any = 1,
         a_growth: Any = "constant", pseudoinverse: Any = False,
         record_scores: bool = False) -> Trace:
    """Dual (kernel) form, Theorem 3.3: (a_k I + G)^{-1} grown by bordered updates."""
    return _run("dual", X, y, epochs, kernel,
                dict(a=a, a_growth=a_growth, pseudoinverse=pseudoinverse), record_scores)
