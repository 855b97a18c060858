"""The Second-Order Perceptron (Cesa-Bianchi, Conconi, Gentile 2005) in float64: forms
``primal`` and ``dual``.

Both follow ``reference.second_order`` trial for trial (SPEC.md, "second_order") through the
block-ahead driver.  The state changes only at a mistake, and the decision is the sign of
s = x^T A^{-1} v (A = a_k I + X X^T; the score s / (1 + x^T A^{-1} x) has the same sign), so a
block of trials is decided by one product; the recorded score is the paper's w_t . x_t.

- ``primal`` (linear kernel): A^{-1} (n x n, upper triangle) by Sherman-Morrison rank-one
  updates in place (dsymv, dsyr, dsymv; ``_Primal``), u = A^{-1} v; a block is
  X[block] @ u.  With numba installed, runs of at least
  ``fast.higher_order.COMPILED_MIN_TRIALS`` trials (dense X, no recorded scores, not a
  shadow run) take a compiled per-trial loop making the same BLAS calls (keyword ``engine``:
  "auto", "numpy" or "numba").
- ``dual`` (any kernel; Theorem 3.3): H = (a_k I + G)^{-1} over the mistakes, packed and
  grown by a bordered update in place (dspmv, dspr: O(k^2) per mistake, which no
  representation of H avoids); a block is (H y)^T K[mistakes, block], its kernel values
  from a window of upcoming trials (``_Window``: one kernel block against the mistakes when
  the window opens, then one row per mistake against the window's later trials, so a run
  computes about the T x |S| kernel block; at most ``KERNEL_CACHE_BYTES``).
- Drift: every ``DRIFT_EVERY`` updates a residual max|A^{-1} (A p) - p| with a fixed probe
  p, A p kept as the mistakes arrive (O(n) / O(k) each); above ``DRIFT_TOL`` the inverse is
  recomputed from A (Cholesky).  The adaptive a_k recomputes it at every mistake (a
  changes); so does the dual after a mistake whose delta lost more than four digits to
  cancellation (``BORDER_CANCELLATION``: x nearly in the span, badly scaled data; on raw
  Wdbc the bordered H otherwise drifted to score errors of half the score within 32
  mistakes).
- ``pseudoinverse=true`` (both forms): a basis of span(X) among the mistakes, G_B^{-1} and
  Bm^{-1} (SPEC.md); x is inside span(X) iff its squared distance is at most
  ``PINV_RANK_TOL`` k(x, x).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg import blas

from ..data import validate
from ..errors import ParamError
from ..kernels import KERNEL_CACHE_BYTES, Kernel, parse_kernel
from ..reference.common import check_epochs
from ..reference.second_order import PARAMS, SecondOrderParams, resolve_params
from ..reference.second_order_engines import PINV_RANK_TOL, a_k
from ..trace import Trace
from .blas_threads import OneBlasThread
from .driver import UPDATE_FAILURES, finite_final, run_blocks, update_failed
from .higher_order import (
    Packed,
    blas_pointers,
    check_engine,
    compiled,
    run_compiled,
    use_compiled,
)

DRIFT_EVERY = 32
DRIFT_TOL = 1e-9
#: The dual refactors H after a mistake whose delta = a + k(x, x) - b.h is below this share
#: of a + k(x, x) (more than four digits lost to cancellation: badly scaled data).
BORDER_CANCELLATION = 1e-4
#: The dual's kernel window: at least this many upcoming trials (``_Window``).
WINDOW = 256


def _dense_row(X: Any, j: int) -> np.ndarray:
    row: np.ndarray = X[j].toarray().ravel() if sp.issparse(X) else X[j]
    return row


class _Primal:
    """A^{-1} = (a_k I + X X^T)^{-1} (n x n, upper triangle, Fortran order), u = A^{-1} v.

    A mistake costs the three level-2 BLAS calls of Sherman-Morrison, in place on the upper
    triangle (``scipy.linalg.blas`` inside ``OneBlasThread``: one OpenBLAS thread, see
    ``fast.higher_order``): z = A^{-1} x (dsymv), A^{-1} -= z z^T / (1 + x.z) (dsyr),
    u = A^{-1} v (dsymv, recomputed rather than updated, so u carries no drift of its own).
    No n x n temporary.  For the drift check the form keeps C p (C = X X^T over the
    mistakes, p a fixed probe) by C p += x (x.p), O(n) per mistake, so the residual
    A^{-1} (a p + C p) - p costs one dsymv; C itself is formed only for a refactor (and, for
    the adaptive a_k, kept by one more dsyr per mistake since every mistake refactors).
    The compiled engine (``primal(..., engine=...)``) runs the same calls per trial."""

    def __init__(self, X: Any, y: np.ndarray, par: SecondOrderParams, record: bool):
        self.X, self.y, self.par, self.record = X, y, par, record
        n = X.shape[1]
        self.k = 1
        self.a = float(a_k(par, 1))
        self.adaptive = par.a_growth != "constant"
        self.Ainv = np.asfortranarray(np.eye(n) / self.a)
        self.C = np.asfortranarray(np.zeros((n, n))) if self.adaptive else None
        self.v = np.zeros(n)
        self.u = np.zeros(n)
        self.support: list[int] = []
        self.probe = np.cos(np.arange(n) + 1.0)
        self.Cp = np.zeros(n)
        self.refactors = 0
        self._full: np.ndarray | None = None

    def full_inverse(self) -> np.ndarray:
        """A^{-1} as a full symmetric matrix (the run keeps its upper triangle)."""
        if self._full is None:
            upper = np.triu(self.Ainv)
            self._full = upper + np.triu(self.Ainv, 1).T
        return self._full

    def scores(self, start: int, stop: int) -> np.ndarray:
        Xb = self.X[start:stop]
        s = np.asarray(Xb @ self.u).ravel()
        if not self.record:
            return s
        Z = np.asarray(Xb @ self.full_inverse())
        Xd = Xb.toarray() if sp.issparse(Xb) else Xb
        q = np.einsum("ij,ij->i", Z, Xd)
        scores: np.ndarray = s / (1.0 + q)
        return scores

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        return margins <= 0

    def update(self, j: int) -> None:
        x = _dense_row(self.X, j)
        z = blas.dsymv(1.0, self.Ainv, x)                       # A^{-1} x
        q = float(x @ z)
        blas.dsyr(-1.0 / (1.0 + q), z, a=self.Ainv, overwrite_a=1)   # Sherman-Morrison
        self.v += self.y[j] * x
        self.Cp += float(x @ self.probe) * x
        if self.C is not None:
            blas.dsyr(1.0, x, a=self.C, overwrite_a=1)
        self.support.append(j)
        self._after(1)

    def _after(self, made: int) -> None:
        """Bookkeeping after ``made`` mistakes: a_k, the drift check, u."""
        self._full = None
        before = self.k
        self.k += made
        new_a = float(a_k(self.par, self.k))
        if new_a != self.a:
            self.a = new_a
            self._refactor()
        elif self.k // DRIFT_EVERY > before // DRIFT_EVERY and self._drift() > DRIFT_TOL:
            self._refactor()
        self.u = blas.dsymv(1.0, self.Ainv, self.v)

    def _A(self) -> np.ndarray:
        if self.C is not None:
            C = np.triu(self.C) + np.triu(self.C, 1).T
        else:
            Xm = self.X[self.support]
            Xm = Xm.toarray() if sp.issparse(Xm) else Xm
            C = Xm.T @ Xm
        full: np.ndarray = C + self.a * np.eye(self.X.shape[1])
        return full

    def _drift(self) -> float:
        """max |A^{-1} (A p) - p| / max |p|: how far the kept inverse has drifted (A p =
        a p + C p, C p kept as the mistakes arrive)."""
        r = blas.dsymv(1.0, self.Ainv, self.a * self.probe + self.Cp) - self.probe
        return float(np.max(np.abs(r)) / np.max(np.abs(self.probe)))

    def _refactor(self) -> None:
        A = self._A()
        inv = sla.cho_solve(_cholesky(A), np.eye(A.shape[0]))
        self.Ainv = np.asfortranarray(0.5 * (inv + inv.T))
        self.Cp = A @ self.probe - self.a * self.probe
        self._full = None
        self.refactors += 1

    def compiled_step(self, t: int, end: int) -> tuple[int, np.ndarray, bool]:
        """Trials t .. up to the next drift check in the compiled loop."""
        if not hasattr(self, "_buffers"):
            self._buffers = (np.ascontiguousarray(self.X, dtype=np.float64),
                             np.ascontiguousarray(self.y, dtype=np.float64),
                             np.zeros(DRIFT_EVERY, dtype=np.int64), np.zeros(self.v.shape[0]))
            self.u = np.array(self.u)
        X, y, out, z = self._buffers
        limit = DRIFT_EVERY - (self.k % DRIFT_EVERY) if not self.adaptive else 1
        u = np.array(self.u)
        ptr = blas_pointers()
        t, count, bad = compiled().sop_primal(X, y, t, end, limit, self.Ainv, self.v, u, z,
                                              self.probe, self.Cp, out, ptr["dsymv"],
                                              ptr["dsyr"])
        self.u = u
        trials = out[:count].copy()
        if count:
            T = X.shape[0]
            self.support.extend((trials % T).tolist())
            if self.C is not None:
                for m in trials:
                    blas.dsyr(1.0, X[m % T], a=self.C, overwrite_a=1)
            try:
                self._after(count)
            except UPDATE_FAILURES as exc:
                raise update_failed(int(trials[-1]), int(trials[-1]) % T, exc) from None
        return t, trials, bool(bad)

    def final(self, support: np.ndarray) -> dict[str, Any]:
        return {"support": support, "w": blas.dsymv(1.0, self.Ainv, self.v),
                "v": self.v.copy()}


def _cholesky(A: np.ndarray) -> Any:
    """scipy's Cholesky factor of A, with a matrix that holds an infinity or NaN (entries
    beyond float64's range) refused as a failed factorisation (``driver.UPDATE_FAILURES``)
    rather than scipy's ValueError."""
    if not np.isfinite(A).all():
        raise np.linalg.LinAlgError("the matrix holds an infinity or NaN")
    return sla.cho_factor(A, check_finite=False)


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
    """Kernel rows k(x_m, X) of the pseudoinverse form's basis examples, one per basis
    example (at most rank(X) of them)."""

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
        row: np.ndarray = self.data[self.k - 1]
        return row

    def block(self, start: int, stop: int) -> np.ndarray:
        return self.data[:self.k, start:stop]


class _Window:
    """Kernel values k(x_s, x_t) of the support examples s against a window of upcoming
    trials t in [lo, hi): one kernel block (support x window) when the window opens, then one
    row per mistake against the trials after it (the window's trials before a mistake are
    never scored again).  A block inside the window is scored from it without any kernel
    work, so that the run computes about the T x |S| kernel block and no more; the window
    holds at most ``KERNEL_CACHE_BYTES``."""

    def __init__(self, X: Any, kernel: Kernel):
        self.X, self.kernel = X, kernel
        self.lo = self.hi = self.front = 0
        self.data = np.zeros((0, 0))

    def covers(self, start: int, stop: int) -> bool:
        """Whether [start, stop) lies in the window after its last mistake (a later epoch
        comes back to earlier trials: the rows added since do not hold them)."""
        return self.front <= start and stop <= self.hi

    def open(self, support: list[int], start: int, stop: int) -> bool:
        """A window from ``start`` over at least the block [start, stop); False when the
        block's kernel values would exceed the cache cap (the caller computes them)."""
        k = len(support)
        width = min(self.X.shape[0] - start, max(stop - start, WINDOW))
        rows = k + max(16, k // 4)
        width = min(width, max(1, KERNEL_CACHE_BYTES // (8 * rows)))
        if width < stop - start:
            self.lo = self.hi = self.front = 0
            return False
        self.lo = self.front = start
        self.hi = start + width
        self.data = np.empty((rows, width))
        if k:
            self.data[:k] = self.kernel.matrix(self.X[support], self.X[start:start + width])
        return True

    def add(self, row: int, j: int) -> None:
        """Row ``row`` (a new support example, example j) against the trials after j."""
        if not self.covers(j, j + 1) or (row == self.data.shape[0] and 16 * row
                                         * self.data.shape[1] > KERNEL_CACHE_BYTES):
            self.lo = self.hi = self.front = 0    # the next block opens a window afresh
            return
        self.front = j + 1
        if row == self.data.shape[0]:
            bigger = np.empty((2 * row, self.data.shape[1]))
            bigger[:row] = self.data
            self.data = bigger
        if j + 1 < self.hi:
            self.data[row, j + 1 - self.lo:] = self.kernel.matrix(
                self.X[j:j + 1], self.X[j + 1:self.hi])[0]

    def block(self, k: int, start: int, stop: int) -> np.ndarray:
        return self.data[:k, start - self.lo:stop - self.lo]


class _Dual:
    """Theorem 3.3: H = (a_k I + G)^{-1} over the mistakes, bordered per mistake.

    H is packed (``fast.higher_order.Packed``): a mistake costs h = H b (dspmv),
    H += h h^T / delta (dspr, in place) and the appended column (-h / delta; 1 / delta),
    O(k^2) with no k x k temporary, the run's floor beside the kernel block (the decision
    needs only the coefficients H y, O(k) per trial; the recorded score also b^T H b).
    The coefficients are updated with it (O(k)) and recomputed at every drift check.  Kernel
    values come from a ``_Window`` of upcoming trials.  G is not stored: the drift check keeps
    G p for a fixed probe p (bordering adds b_i p_k to entry i and b.p + c p_k as entry k,
    O(k)), so the residual H (a p + G p) - p costs one dspmv every DRIFT_EVERY mistakes; a
    refactor computes G from the support examples."""

    def __init__(self, X: Any, y: np.ndarray, par: SecondOrderParams, kernel: Kernel,
                 record: bool):
        self.X, self.y, self.par, self.record = X, y, par, record
        self.kernel = kernel
        self.kdiag = kernel.diagonal(X)
        self.window = _Window(X, kernel)
        self.H = Packed()
        self.buf = np.zeros((4, 16))          # labels, G p, H y, the probe p (by row)
        self.buf[3] = self._probe(16)
        self.support: list[int] = []
        self.k = 1
        self.a = float(a_k(par, 1))
        self.adaptive = par.a_growth != "constant"
        self.refactors = 0
        self._full: np.ndarray | None = None

    @property
    def coef(self) -> np.ndarray:
        """H y over the mistakes so far."""
        return self.buf[2, :self.H.k]

    def _probe(self, k: int) -> np.ndarray:
        probe: np.ndarray = np.cos(np.arange(k) + 1.0)
        return probe

    def _kernel_block(self, start: int, stop: int) -> np.ndarray:
        k = self.H.k
        if not self.window.covers(start, stop) and not self.window.open(
                self.support, start, stop):
            return self.kernel.matrix(self.X[self.support], self.X[start:stop]) if k \
                else np.zeros((0, stop - start))
        return self.window.block(k, start, stop)

    def scores(self, start: int, stop: int) -> np.ndarray:
        Kb = self._kernel_block(start, stop)
        s: np.ndarray = self.coef @ Kb
        if not self.record:
            return s
        if self._full is None:
            self._full = self.H.full()
        bhb = np.einsum("ij,ij->j", Kb, self._full @ Kb)
        scores: np.ndarray = self.a * s / (self.a + self.kdiag[start:stop] - bhb)
        return scores

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        return margins <= 0

    def _column(self, j: int) -> np.ndarray:
        """b = k(x_s, x_j) over the support (from the window when it holds trial j)."""
        if self.window.covers(j, j + 1):
            column: np.ndarray = self.window.block(self.H.k, j, j + 1)[:, 0].copy()
            return column
        if not self.support:
            return np.zeros(0)
        return np.asarray(self.kernel.matrix(self.X[self.support], self.X[j:j + 1]))[:, 0]

    def update(self, j: int) -> None:
        k = self.H.k
        b = self._column(j)
        c = float(self.kdiag[j])
        h = self.H.matvec(b)
        delta = self.a + c - float(b @ h)
        label = float(self.y[j])
        if k + 1 > self.buf.shape[1]:
            grown = np.zeros((4, 2 * self.buf.shape[1]))
            grown[:, :k] = self.buf[:, :k]
            grown[3] = self._probe(grown.shape[1])
            self.buf = grown
        labels, Gp, coef, probe = self.buf
        hy = float(h @ labels[:k])
        self.window.add(k, j)
        self.support.append(j)
        self._full = None
        self.H.rank_one(1.0 / delta, h)
        self.H.border(-h / delta, 1.0 / delta)
        labels[k] = label
        Gp[k] = float(b @ probe[:k]) + c * probe[k]
        Gp[:k] += probe[k] * b
        # H y after the border: [coef + h (h.y - y_k) / delta ; (y_k - h.y) / delta]
        step = (hy - label) / delta
        coef[:k] += step * h
        coef[k] = -step
        self._after(delta < BORDER_CANCELLATION * (self.a + c))

    def _after(self, cancelled: bool) -> None:
        """a_k for the next mistake, and the refactor or drift check it calls for."""
        self.k += 1
        new_a = float(a_k(self.par, self.k)) if self.adaptive else self.a
        if new_a != self.a or cancelled:
            # a changed, or x lay nearly in the span of the support (delta lost digits to
            # cancellation, and the bordered H with them): H afresh by Cholesky, O(k^3)
            self.a = new_a
            self._refactor()
        elif self.k % DRIFT_EVERY == 0:
            if self._drift() > DRIFT_TOL:
                self._refactor()
            self.buf[2, :self.H.k] = self.H.matvec(self.buf[0, :self.H.k])

    def _drift(self) -> float:
        k = self.H.k
        probe = self.buf[3, :k]
        r = self.H.matvec(self.a * probe + self.buf[1, :k]) - probe
        return float(np.max(np.abs(r)))

    def _refactor(self) -> None:
        k = self.H.k
        Xs = self.X[self.support]
        G = np.asarray(self.kernel.matrix(Xs, Xs))
        A = G + self.a * np.eye(k)
        self.H.set_full(sla.cho_solve(_cholesky(A), np.eye(k)))
        self._full = None
        self.buf[1, :k] = G @ self.buf[3, :k]
        self.buf[2, :k] = self.H.matvec(self.buf[0, :k])
        self.refactors += 1

    def final(self, support: np.ndarray, kern: Kernel) -> dict[str, Any]:
        out: dict[str, Any] = {"support": support}
        coef = self.coef.copy() if self.support else np.zeros(0)
        if kern.is_linear:
            Xs = self.X[self.support] if self.support else None
            out["w"] = (np.asarray(Xs.T @ coef).ravel() if Xs is not None
                        else np.zeros(self.X.shape[1]))
            out["v"] = _v(self.X, self.y, self.support)
        else:
            out["alpha"] = coef
        return out


def _v(X: Any, y: np.ndarray, support: list[int]) -> np.ndarray:
    if not support:
        return np.zeros(X.shape[1])
    return np.asarray(X[support].T @ y[support].astype(np.float64)).ravel()


class _Pinv:
    """The pseudoinverse form: basis B of span(X) among the mistakes, G_B^{-1}, Bm^{-1}, gamma
    (reference.second_order_engines.Pinv, in float64)."""

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

    def final(self, support: np.ndarray, kern: Kernel) -> dict[str, Any]:
        coef: np.ndarray | list[float] = ((self.GBinv.view @ (self.Bminv.view @ self.gamma))
                                          if self.basis else [])
        at = dict(zip(self.basis, np.asarray(coef).tolist()))
        alpha, seen = [], set()
        for j in self.support:
            alpha.append(at[j] if j in at and j not in seen else 0.0)
            seen.add(j)
        out: dict[str, Any] = {"support": support}
        if kern.is_linear:
            Xs = self.X[self.support] if self.support else None
            out["w"] = (np.asarray(Xs.T @ np.asarray(alpha)).ravel() if Xs is not None
                        else np.zeros(self.X.shape[1]))
            out["v"] = _v(self.X, self.y, self.support)
        else:
            out["alpha"] = np.array(alpha, dtype=np.float64)
        return out


def _run(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
         record_scores: bool, engine: str = "auto") -> Trace:
    check_engine(engine)
    kern = parse_kernel(kernel)
    par = resolve_params(given)
    if form == "primal" and not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    X, y = validate(X, y)
    epochs = check_epochs(epochs)
    if par.pseudoinverse:
        model: Any = _Pinv(X, y, kern, record_scores)
    elif form == "primal":
        model = _Primal(X, y, par, record_scores)
    else:
        model = _Dual(X, y, par, kern, record_scores)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"), OneBlasThread():
        if isinstance(model, _Primal) and use_compiled(
                engine, y.shape[0] * epochs, not sp.issparse(X), record_scores):
            result = run_compiled(model, y.shape[0], epochs)
        else:
            result = run_blocks(model, y, epochs, record_scores)
    T = y.shape[0]
    support = np.array(result.updates, dtype=np.int64) % T
    final = model.final(support) if isinstance(model, _Primal) else model.final(support, kern)
    return Trace(algorithm="second_order", form=form, kernel=kern.spec,
                 params=PARAMS.as_dict(par), n_examples=T, epochs=epochs, mistakes=result.mistakes,
                 updates=result.updates, final=finite_final(final, result.updates, T),
                 scores=result.scores)


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", a: Any = 1,
           a_growth: Any = "constant", pseudoinverse: Any = False,
           record_scores: bool = False, engine: str = "auto") -> Trace:
    """Primal form: (a_k I + X X^T)^{-1} by rank-one updates; linear kernel only.
    ``engine``: "auto", "numpy" or "numba" (the module docstring)."""
    return _run("primal", X, y, epochs, kernel,
                dict(a=a, a_growth=a_growth, pseudoinverse=pseudoinverse), record_scores,
                engine)


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", a: Any = 1,
         a_growth: Any = "constant", pseudoinverse: Any = False,
         record_scores: bool = False) -> Trace:
    """Dual (kernel) form, Theorem 3.3: (a_k I + G)^{-1} grown by bordered updates."""
    return _run("dual", X, y, epochs, kernel,
                dict(a=a, a_growth=a_growth, pseudoinverse=pseudoinverse), record_scores)
