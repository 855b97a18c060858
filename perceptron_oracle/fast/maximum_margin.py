"""What ROMMA and PUMMA share: the float64 machinery of both fast forms.  SPEC.md 14.7.

``fast.romma`` and ``fast.pumma`` follow ``reference.romma`` / ``reference.pumma`` trial for
trial (their shared exact machinery is ``reference.maximum_margin``, SPEC.md 14.4) and share
the block-ahead driver (``fast.driver``) and what this module holds:

- :func:`step2`: the closed-form solution of the relaxed problem for p = 2 (paper eqs. (15)
  and (19), in the form of ROMMA's problem (2)): minimise ||w||^2 subject to w.z >= c and
  w.v >= ||v||^2, where v is the current weight vector.  Case (i): w = (c / ||z||^2) z when
  that already satisfies the second constraint (c v.z >= ||z||^2 ||v||^2, or v = 0); case
  (ii): w = lambda z + eta v with both constraints active, a 2 x 2 linear system.
  ROMMA calls it with z = y x, c = 1; PUMMA with z = x_pos - x_neg, c = 2 (Theorem 2's
  reduction: ROMMA on (x_pos - x_neg) / 2).  ``SINGULAR`` and ``RESIDUAL_SINGULAR`` are its
  float64 tests of a singular system.
- the *spaces* that hold w and give the inner products the step needs:
  :class:`PrimalSpace` (w itself) and :class:`DualSpace` (w = sum_e a_e phi(x_e), one
  coefficient per example: section 4.1's recurrence w_t = lambda_t z_t + eta_t w_{t-1}
  expanded, so a score costs one kernel value per stored example, at most two per stored
  pair), made by :func:`make_space`; :func:`pair_products` gives the step's products.  Both
  carry section 4.2's 2-norm soft margin as the augmented space
  x~_e = (x_e, y_e e_e / sqrt(C)): the kernel gains delta_ef / C, by example identity across
  epochs, and the update test of example e gains its slack xi_e = y_e a_e / C (the score,
  the prediction, stays w.x on the original x); :func:`slack_root` sums ||a||^2 / C where
  its plain squares underflow (SPEC.md 14.7, "Spaces").
- :class:`Guarded`: the driver's update test plus feasibility and Lemma 4's tight examples.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ParamError
from ..kernels import KERNEL_CACHE_BYTES, Kernel
from ._compiled import TINY_SQUARES

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


def _sqnorms(X: Any) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    sq: np.ndarray = np.einsum("ij,ij->i", X, X)
    return sq


def _gram_pair(X: Any, e: int, f: int) -> float:
    if sp.issparse(X):
        return float(X[e].multiply(X[f]).sum())
    return float(X[e] @ X[f])


def slack_root(inv_c: float) -> tuple[float, float]:
    """(r, c): r = 2^floor(e/2) for 1/C = m 2^e (m in [1/2, 1)), about 1/sqrt(C), and
    c = (1/C) / r^2 in [1/2, 2), so that the soft margin's ||a||^2 / C (section 4.2:
    a_e = C y_e xi_e, the augmented coordinates) is ||r a||^2 c, whose terms have the
    result's size: a is of C's size, and below C ~ 1e-154 its squares underflow where
    ||a||^2 / C does not (C = 1e-170: ||v~||^2 = 0, case (i) at every update).  r a and c
    are exact (powers of two)."""
    r = math.ldexp(1.0, math.frexp(inv_c)[1] // 2)
    return r, inv_c / (r * r)


class PrimalSpace:
    """w in R^n (linear kernel); with a soft margin also a_e, the augmented coordinates.

    Scores are w.x (the original space); the soft margin's part a_e / C of the augmented
    score is :meth:`slack` (it enters the update test, not the prediction)."""

    def __init__(self, X: Any, T: int, C: float | None):
        self.X = X
        self.w = np.zeros(X.shape[1])
        self.inv_c = 0.0 if C is None else 1.0 / C
        self.a = np.zeros(T) if C is not None else None

    def slack_norm2(self, a: np.ndarray) -> float:
        """||a||^2 / C for augmented coordinates a; a plain sum below ``TINY_SQUARES`` may
        hold underflowed squares, and is summed again as :func:`slack_root` says."""
        plain = float(a @ a)
        if plain >= TINY_SQUARES:
            return plain * self.inv_c
        r, c = slack_root(self.inv_c)
        ra = a * r
        return float(ra @ ra) * c

    def block_scores(self, start: int, stop: int) -> np.ndarray:
        scores: np.ndarray = self.X[start:stop] @ self.w  # X finite: validate() checked it
        return scores

    def slack(self, start: int, stop: int) -> np.ndarray | None:
        """a_j / C for the block's examples (y_j times the slack xi_j), or None."""
        return None if self.a is None else self.a[start:stop] * self.inv_c

    def coefficients(self) -> np.ndarray:
        """The soft margin's a (asked only with C given)."""
        assert self.a is not None
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
                out += self.slack_norm2(extra)
            return out
        return r

    def norm2(self) -> float:
        """||v~||^2 = ||w||^2 + ||a||^2 / C."""
        out = float(self.w @ self.w)
        return out + self.slack_norm2(self.a) if self.a is not None else out

    def apply(self, lam: float, eta: float, zc: list[tuple[int, float]],
              after: int | None = None) -> None:
        """w~ <- eta w~ + lam z~ with z~ = sum_e coef_e x~_e (``after``, the update's trial,
        matters to the dual space only).  With more than one term (PUMMA's
        z = x_pos - x_neg) z is formed first and added once: adding lam x_pos and then
        -lam x_neg loses eta w wherever lam |x| dwarfs it (found: x_pos and x_neg equal up to
        5e-118 in one coordinate, lam = 1.7e235, eta w = 4e117 in that coordinate: the form
        kept 0, the exact w 4e117)."""
        if eta != 1.0:
            self.w *= eta
            if self.a is not None:
                self.a *= eta
        if len(zc) == 1:
            _row_add(self.X, zc[0][0], lam * zc[0][1], self.w)
        else:
            z = np.zeros(self.X.shape[1])
            for e, coef in zc:
                _row_add(self.X, e, coef, z)
            self.w += lam * z
        if self.a is not None:
            for e, coef in zc:
                self.a[e] += lam * coef

    def final(self) -> dict[str, Any]:
        return {"w": self.w.copy()}


class DualSpace:
    """w = sum_e a_e phi(x_e) over the examples that took part in an update (the support).

    Kept (T examples, S support examples):

    - the coefficients a and, for dense X, the support's rows as one contiguous array ``XS``
      (by support position), so that a kernel block against the support is one product;
    - a *window* of scores: the current state's scores of the trials ws .. we-1, computed
      ahead of the driver's block (at least ``WINDOW`` trials) by one kernel block
      K(X[ws:we], X_S) @ a.  An update w~' = eta w~ + lam z~ inside the window is folded into
      the scores of the trials after it, s' = eta s + lam k(z, x) (one short kernel row per
      term of z over the rest of the window), so an update never restarts the scoring;
      after ``MAX_FOLDS`` folds the window is scored afresh (it bounds the folds' rounding);
      the linear kernel's window is X[ws:we] (X_S^T a) instead, O((W + S) n)
      (``COLLAPSE_LINEAR``);
    - what the step needs in O(1) per update, no Gram column (G~ is the support's Gram
      matrix with 1/C on its diagonal for the soft margin): ||v~||^2 carried as
      lam w~.z~ + eta w~.v~; w~.x~_e carried for z's examples (eta v~.x~_e +
      lam sum_f c_f G~[e, f]), else read from the window (an example about to update is
      in it); G~'s entries from kernel values k(x_e, x_f).  Their rounding is bounded by
      recomputing ||v~||^2 and those dots from G~ a every max(REFRESH, S) updates
      (``Ga``: O(S^2 n) by kernel blocks, amortised O(S n) per update);
    - from the second pass over the data on (where it pays: a row serves every later
      epoch), the kernel cache: the kernel rows k(x_s, X) of the first support examples
      (T values each), in chunks that are allocated as the support grows and never copied,
      within ``KERNEL_CACHE_BYTES`` in all.  A window's scores are then ``a @ rows[:, win]``
      over the chunks plus the kernel block against the support beyond the cache.  A run
      of one epoch computes no row against all T examples.
    """

    #: the kernel cache grows by chunks of at most this many bytes (each a fresh array)
    CHUNK_BYTES = 64 * 2**20
    #: ||v~||^2 and the carried dots are recomputed after at most max(REFRESH, S) updates
    REFRESH = 64
    #: trials scored ahead at least (the driver's block when that is longer)
    WINDOW = 128
    #: a window is scored afresh after this many folded updates
    MAX_FOLDS = 64
    #: kernel blocks are formed in pieces of at most this many bytes
    BLOCK_BYTES = 8 * 2**20
    #: the linear kernel's window as X_w (X_S^T a) (False: the kernel block, as any kernel)
    COLLAPSE_LINEAR = True

    def __init__(self, X: Any, T: int, C: float | None, kernel: Kernel):
        self.X, self.kernel, self.T = X, kernel, T
        self.inv_c = 0.0 if C is None else 1.0 / C
        self.sparse = sp.issparse(X)
        self.support: list[int] = []
        self.sup = np.zeros(16, dtype=np.int64)   # the support as an array (gathers)
        self.slot = np.full(T, -1, dtype=np.int64)
        self.coef = np.zeros(16)
        self.XS = None if self.sparse else np.zeros((16, X.shape[1]))
        self.sq = _sqnorms(X) if kernel.needs_sqnorms else None
        self.vv = 0.0                             # ||v~||^2
        self.vx: dict[int, float] = {}            # w~.x~_e known for the current state
        self.grams: dict[tuple[int, int], float] = {}
        self.last_pair: tuple[tuple[Any, ...], tuple[float, float]] = ((), (0.0, 0.0))
        self.z = np.zeros(0)                      # z formed by pair() (linear, two terms)
        self.stale = 0                            # updates since Ga was recomputed
        self.win, self.ws, self.we, self.folds = np.zeros(0), 0, 0, 0
        self.last_start = -1
        self.max_cached = max(1, min(T, KERNEL_CACHE_BYTES // (8 * T)))
        self.chunks: list[np.ndarray] = []        # (k, T) arrays: row s = k(x_s, X)
        self.capacity = 0                         # rows allocated over the chunks
        self.cached = 0                           # rows filled: support positions < cached
        self.caching = False                      # from the second pass on

    # -- kernel values ------------------------------------------------------------------
    def _rows(self, lo: int, hi: int) -> Any:
        """The support examples at positions lo .. hi-1, as rows."""
        if self.XS is not None:
            return self.XS[lo:hi]
        return self.X[self.sup[lo:hi]]

    def _finish(self, dots: np.ndarray, sq_a: Any, sq_b: Any) -> np.ndarray:
        """The kernel from inner products (``Kernel.from_dots``: with the squared norms sq_a,
        sq_b of the two sides, broadcast against ``dots``, where it reads them)."""
        out: np.ndarray = self.kernel.from_dots(dots, sq_a, sq_b)
        return out

    def _block(self, A: Any, B: Any, sq_a: Any, sq_b: Any) -> np.ndarray:
        """k(A_i, B_j) for row sets A and B with squared norms sq_a, sq_b (1-D or None)."""
        dots = A @ B.T
        dots = dots.toarray() if sp.issparse(dots) else np.asarray(dots)
        if self.sq is None:
            return self._finish(dots, None, None)
        return self._finish(dots, sq_a[:, None], sq_b[None, :])

    def _row(self, A: Any, sq_a: Any, e: int) -> np.ndarray:
        """k(A_i, x_e) for the rows A (squared norms sq_a): one matrix-vector product."""
        if self.sparse:
            dots = np.asarray((A @ self.X[e].T).todense()).ravel()
        else:
            dots = A @ self.X[e]
        return self._finish(dots, sq_a, None if self.sq is None else self.sq[e])

    def _against(self, A: Any, sq_a: Any, idx: Any) -> np.ndarray:
        """k(A_i, x_e) for the rows A and the examples e of ``idx``: (len(A), len(idx))."""
        return self._block(A, self.X[idx], sq_a, None if self.sq is None else self.sq[idx])

    def _sq_sup(self, lo: int, hi: int) -> Any:
        return None if self.sq is None else self.sq[self.sup[lo:hi]]

    def _sq_x(self, lo: int, hi: int) -> Any:
        return None if self.sq is None else self.sq[lo:hi]

    # -- the window of scores -----------------------------------------------------------
    def block_scores(self, start: int, stop: int) -> np.ndarray:
        if start <= self.last_start:  # a new pass over the data: rows pay from here on
            self._start_cache()
        self.last_start = start
        if not (self.ws <= start and stop <= self.we):
            self._score_window(start, stop)
        return self.win[start - self.ws:stop - self.ws]

    def _score_window(self, start: int, stop: int) -> None:
        """Score trials start .. start + max(WINDOW, stop - start) - 1 from the support."""
        ws, we = start, min(self.T, start + max(self.WINDOW, stop - start))
        S = len(self.support)
        s = np.zeros(we - ws)
        pos = 0
        for chunk in self.chunks:
            k = min(self.cached - pos, chunk.shape[0])
            if k <= 0:
                break
            s += self.coef[pos:pos + k] @ chunk[:k, ws:we]
            pos += k
        Xw, sq_w = self.X[ws:we], self._sq_x(ws, we)
        if self.kernel.is_linear and self.COLLAPSE_LINEAR:
            if S:   # K(X_w, X_S) a = X_w (X_S^T a): O((W + S) n), not O(W S n)
                s += Xw @ np.asarray(self._rows(0, S).T @ self.coef[:S]).ravel()
            self.win, self.ws, self.we, self.folds = s, ws, we, 0
            return
        piece = max(1, self.BLOCK_BYTES // (8 * (we - ws)))
        for lo in range(self.cached, S, piece):
            hi = min(S, lo + piece)
            s += self._block(Xw, self._rows(lo, hi), sq_w, self._sq_sup(lo, hi)) \
                @ self.coef[lo:hi]
        self.win, self.ws, self.we, self.folds = s, ws, we, 0

    def _fold(self, lam: float, eta: float, zc: list[tuple[int, float]],
              after: int | None) -> None:
        """The window after the update at trial ``after``: s <- eta s + lam k(z, x) for the
        trials after it (unknown position or too many folds: scored afresh when asked)."""
        if after is None or not self.ws <= after < self.we or self.folds >= self.MAX_FOLDS:
            self.ws = self.we = 0
            return
        lo = after + 1
        rest = self.win[lo - self.ws:]
        if rest.size:
            if eta != 1.0:
                rest *= eta
            Xr, sq_r = self.X[lo:self.we], self._sq_x(lo, self.we)
            if len(zc) == 1:
                rest += (lam * zc[0][1]) * self._row(Xr, sq_r, zc[0][0])
            elif self.kernel.is_linear and not self.sparse:  # k(z, x) = z.x: one product
                rest += lam * (Xr @ self.z)   # z as pair() formed it for this update
            else:
                K = self._against(Xr, sq_r, [e for e, _ in zc])
                rest += K @ np.array([lam * c for _, c in zc])
        self.win, self.ws = rest, lo
        self.folds += 1

    # -- the kernel cache (second pass on) ----------------------------------------------
    def _start_cache(self) -> None:
        """Cache the kernel rows of the support so far (up to the cap), block by block
        (not for the linear kernel when it collapses: its window costs O((W + S) n))."""
        if self.kernel.is_linear and self.COLLAPSE_LINEAR:
            return
        self.caching = True
        S = min(len(self.support), self.max_cached)
        while self.cached < S:
            if self.cached == self.capacity:
                self._grow(S - self.cached)
            chunk, at = self._chunk_of(self.cached)
            piece = max(1, self.BLOCK_BYTES // (8 * self.T))
            hi = min(S, self.cached + piece, self.cached + chunk.shape[0] - at)
            chunk[at:at + hi - self.cached] = self._block(
                self._rows(self.cached, hi), self.X, self._sq_sup(self.cached, hi), self.sq)
            self.cached = hi
        self.ws = self.we = 0  # rescore from the cache

    def _grow(self, need: int = 1) -> None:
        """A new chunk of at least ``need`` rows, sized to double the cache (within the cap
        and CHUNK_BYTES)."""
        s = self.capacity
        k = min(self.max_cached - s, max(16, s, need),
                max(1, self.CHUNK_BYTES // (8 * self.T)))
        self.chunks.append(np.zeros((k, self.T)))
        self.capacity += k

    def _chunk_of(self, s: int) -> tuple[np.ndarray, int]:
        for chunk in self.chunks:
            if s < chunk.shape[0]:
                return chunk, s
            s -= chunk.shape[0]
        raise IndexError(s)

    def _cached_row(self, s: int) -> np.ndarray:
        chunk, at = self._chunk_of(s)
        row: np.ndarray = chunk[at]
        return row

    def _cache_row(self, e: int) -> None:
        """Cache k(x_e, X) for the newest support example e (while the cache has room)."""
        if self.cached == self.capacity:
            self._grow()
        self._cached_row(self.cached)[:] = self._row(self.X, self.sq, e)
        self.cached += 1

    # -- the support and its Gram matrix ------------------------------------------------
    # -- the support, ||v||^2 and the pair's products -----------------------------------
    def slack(self, start: int, stop: int) -> np.ndarray | None:
        """a_j / C for the block's examples (y_j times the slack xi_j), or None."""
        if not self.inv_c:
            return None
        slots = self.slot[start:stop]
        out = np.zeros(stop - start)
        inside = slots >= 0
        out[inside] = self.coef[slots[inside]] * self.inv_c
        return out

    def _column(self, e: int) -> np.ndarray:
        """G~[:, e] over the support: k(x_s, x_e) (+ 1/C at e's own position)."""
        S, s = len(self.support), int(self.slot[e])
        if s < self.cached:
            col = self._cached_row(s)[self.sup[:S]]
        else:
            col = self._row(self._rows(0, S), self._sq_sup(0, S), e)
        if self.inv_c:
            col[s] += self.inv_c
        return col

    def ensure(self, e: int) -> None:
        """Make example e a support example (coefficient 0; in a later pass, while the
        cache has room, with its kernel row)."""
        if self.slot[e] >= 0:
            return
        S = len(self.support)
        if S == self.coef.shape[0]:
            self.coef = np.concatenate([self.coef, np.zeros(S)])
            self.sup = np.concatenate([self.sup, np.zeros(S, dtype=np.int64)])
            if self.XS is not None:
                self.XS = np.concatenate([self.XS, np.zeros_like(self.XS)])
        if self.XS is not None:
            self.XS[S] = self.X[e]
        self.slot[e] = S
        self.support.append(e)
        self.sup[S] = e
        if self.caching and self.cached == S < self.max_cached:
            self._cache_row(e)

    @property
    def Ga(self) -> np.ndarray:
        """G~ a over the support (w~.x~_s for every support example s), computed afresh
        from the cache and the kernel beyond it: O(S^2 n)."""
        S = len(self.support)
        sup, c = self.sup[:S], self.cached
        Ga = self.coef[:c] @ self._cached_block(sup, c) if c else np.zeros(S)
        piece = max(1, self.BLOCK_BYTES // (8 * max(S, 1)))
        for lo in range(c, S, piece):
            hi = min(S, lo + piece)
            Ga += self._block(self._rows(0, S), self._rows(lo, hi), self._sq_sup(0, S),
                              self._sq_sup(lo, hi)) @ self.coef[lo:hi]
        out: np.ndarray = Ga + self.inv_c * self.coef[:S]
        return out

    def _refresh(self) -> None:
        """||v~||^2 and the known w~.x~_e recomputed from G~ a (bounds their rounding)."""
        S = len(self.support)
        Ga = self.Ga
        self.vv = float(self.coef[:S] @ Ga)
        self.vx = {e: float(Ga[self.slot[e]]) for e in self.vx}
        self.stale = 0

    def _cached_block(self, idx: Any, cached: int) -> np.ndarray:
        """k(x_s, x_i) for the first ``cached`` support examples s and the examples ``idx``,
        from the cache: (cached, len(idx))."""
        parts, left = [], cached
        for chunk in self.chunks:
            if left <= 0:
                break
            k = min(left, chunk.shape[0])
            parts.append(chunk[:k, idx])
            left -= k
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def dot(self, e: int) -> float:
        """w~.x~_e for a support example e: carried for the last update's examples, else the
        window's score (plus the slack part), else G~[:, e] . a."""
        out = self.vx.get(e)
        if out is None:
            s = int(self.slot[e])
            if self.ws <= e < self.we:
                out = float(self.win[e - self.ws]) + self.inv_c * float(self.coef[s])
            else:
                out = float(self._column(e) @ self.coef[:len(self.support)])
            self.vx[e] = out
        return out

    def gram(self, e: int, f: int) -> float:
        """G~[e, f] = k(x_e, x_f) (+ 1/C when e = f), kept until the next update."""
        key = (e, f) if e <= f else (f, e)
        out = self.grams.get(key)
        if out is None:
            d = _gram_pair(self.X, e, f)
            if not self.kernel.is_linear:  # k(x, z) = x.z as it is; else the kernel's value
                sq_e, sq_f = ((float(self.sq[e]), float(self.sq[f])) if self.sq is not None
                              else (0.0, 0.0))
                d = self.kernel.value(d, sq_e, sq_f)
            out = d + (self.inv_c if e == f else 0.0)
            self.grams[key] = out
        return out

    def residual(self, zc: list[tuple[int, float]]) -> Any:
        return None  # no vectors: step2 uses ||z||^2 ||v||^2 - (v.z)^2

    def pair(self, zc: list[tuple[int, float]]) -> tuple[float, float]:
        """||z~||^2 and v~.z~ from kernel values: k(p,p) + k(n,n) - 2 k(p,n) cancels when
        x_pos is close to x_neg (see :func:`step2`'s zz_scale)."""
        key = tuple(zc)
        if self.last_pair[0] == key:
            return self.last_pair[1]
        vz = sum(ce * self.dot(e) for e, ce in zc)
        if self.kernel.is_linear and len(zc) > 1:  # form z itself: no cancellation
            z = np.zeros(self.X.shape[1])
            for e, coef in zc:
                _row_add(self.X, e, coef, z)
            self.z = z   # the fold's k(z, x) = z.x
            zz = float(z @ z) + sum(ce * ce for _, ce in zc) * self.inv_c
        else:
            zz = sum(ce * cf * self.gram(e, f) for e, ce in zc for f, cf in zc)
        self.last_pair = (key, (zz, vz))
        return zz, vz

    def norm2(self) -> float:
        """||v~||^2, carried through the updates (and recomputed every max(REFRESH, S))."""
        return self.vv

    def apply(self, lam: float, eta: float, zc: list[tuple[int, float]],
              after: int | None = None) -> None:
        """w~ <- eta w~ + lam z~, z~ = sum_e c_e x~_e: a, ||w~||^2 = lam w~.z~ + eta w~.v~
        (expanded in ||z~||^2, v~.z~, ||v~||^2), w~.x~_e for z's examples, the window's scores
        after trial ``after`` (the update's) follow, each in O(S + n) and one kernel row
        over the rest of the window."""
        S = len(self.support)
        zz, vz = self.pair(zc)   # kept from the step's pair(): also self.z (linear)
        dots = {e: eta * self.dot(e) + lam * sum(cf * self.gram(e, f) for f, cf in zc)
                for e, _ in zc}
        if eta != 1.0:
            self.coef[:S] *= eta
        for e, c in zc:
            self.coef[self.slot[e]] += lam * c
        # lam (w~.z~) + eta (w~.v~): no lam^2 (lam ~ 1e235 when z~ ~ 1e-118 is fine)
        self.vv = lam * (lam * zz + eta * vz) + eta * (lam * vz + eta * self.vv)
        self.vx, self.grams, self.last_pair = dots, {}, ((), (0.0, 0.0))
        self._fold(lam, eta, zc, after)
        self.stale += 1
        if self.stale >= max(self.REFRESH, S):
            self._refresh()

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
            with np.errstate(over="ignore", invalid="ignore"):   # finite_final reports it
                w = rows.T @ self.coef[:S] if S else np.zeros(self.X.shape[1])
            return {"w": np.array(w, dtype=np.float64).ravel()}
        return {"alpha": self.coefficients()}


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


class Guarded:
    """The driver's update test plus feasibility: a trial whose problem is infeasible is not
    an update (the state stays, so the block's scores stay valid); the first feasible
    candidate's solution is kept for :meth:`update`."""

    threshold: float

    def solve(self, j: int, margin: float) -> Any:
        """The update's solution at example j (its margin given), or None (infeasible)."""
        raise NotImplementedError

    def apply(self, j: int, solution: Any) -> None:
        """Make the update at example j with ``solve``'s solution."""
        raise NotImplementedError

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
