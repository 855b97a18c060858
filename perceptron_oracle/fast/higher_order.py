"""The Higher-Order Perceptron HO_p(c) (Brotto, Gentile, Vitale 2007) in float64.

Three forms, as section 2 of the paper describes them, all following ``reference.
higher_order`` trial for trial (SPEC.md, "higher_order") and sharing the block-ahead driver
(the state changes only at mistakes, so a block of trials is scored with one product):

- ``primal`` (p = 2, linear kernel, X dense or CSR): A_k = B_k^T B_k kept explicitly,
  A_k = A - rho a x^T - rho x a^T + rho^2 (x^T a) x x^T with a = A x (item 1), done in place
  as one BLAS ``dsyr2`` on the upper triangle; w_k = A_k v_k by ``dsymv``.  O(n^2) per
  mistake.  With numba installed, runs of at least ``COMPILED_MIN_TRIALS`` trials (dense X,
  no recorded scores, not a shadow run) take a compiled per-trial loop making the same BLAS
  calls through scipy's ``cython_blas`` (keyword ``engine``: "auto", "numpy", "numba").
- ``dual`` (p = 2, any kernel): A_k = I + X_k D_k X_k^T, w_k = X_k g_k with g_k = y_k + D_k h_k,
  h_k = X_k^T X_k y_k, D_k (packed, ``Packed``) grown by the row/column -rho b,
  d_kk = rho^2 c^T b - 2 rho + rho^2 k(x, x) (item 2, derived for non-unit x).  D is
  stored only over the mistakes with rho > 0, so a mistake with rho = 0 adds nothing to D.
  D_+ is only bordered, never updated, but b = D_+ c_+ (one dspmv over k_+^2 / 2 entries)
  is needed at every mistake: that O(k_+^2) pass is the form's floor beside the kernel
  block, and on long runs most of its time.
  Kernel rows k(x_s, X) are computed once per support example; with the linear kernel the
  form keeps w = X_S^T G instead.
- ``implicit`` (any p >= 2, linear kernel, X dense or CSR): B_k = F_1 ... F_k with
  F_i = I - rho_i x_i g(x_i)^T never formed; w_k = B_k^T g(B_k v_k) unwrapped through the
  stored (rho_i, x_i, g(x_i)) in O(n k) (item 3), up to 32 factors at a time.  When every
  factor contracts (rho g(x).x = rho ||x||_p^2 <= 1), the form replays its factors into an explicit
  representation once 4 k_+ >= n: at p = 2 the primal A_k (or from the start under the
  compiled engine, n <= 1000), going on as the primal form; at p != 2 B_k itself, O(n^2)
  per mistake by BLAS (the compiled engine: a per-trial loop making the same BLAS calls,
  from the first trial up to n = 300).

The derivations are in SPEC.md (HO section, "fast forms").
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from ..data import check_finite_rows, validate
from ..errors import ParamError
from ..kernels import KERNEL_CACHE_BYTES, Kernel, parse_kernel
from ..pnorm_float import link_inverse
from ..reference.common import check_epochs
from ..reference.higher_order import PARAMS, HigherOrderParams, resolve_params
from ..trace import Trace
from . import _compiled
from .blas_threads import OneBlasThread
from .driver import (
    MAX_BLOCK,
    MIN_BLOCK,
    DriverResult,
    finite_final,
    float_range_error,
    in_forced_run,
    run_blocks,
)

# -- the compiled per-trial engine (numba, optional) -------------------------------------------
#: The keyword ``engine`` of the primal and implicit forms (and of SOP's primal): "auto" (numba
#: when it is installed and the run is long enough), "numpy" or "numba".
ENGINES = _compiled.ENGINES
#: "auto" compiles only for runs of at least this many trials (epochs x T): without a
#: writable numba cache every process pays the JIT at its first call (about half a second
#: per loop), which a short run does not recover.
COMPILED_MIN_TRIALS = 5000


def numba_available() -> bool:
    return _compiled.available()


def check_engine(engine: str) -> str:
    """``engine`` if it is one of ``ENGINES`` (and numba is installed for "numba"), else a
    ParamError; checked before any data work, whichever path the run then takes."""
    if engine not in ENGINES:
        raise ParamError(f"engine: one of {', '.join(ENGINES)} (got {engine!r})")
    if engine == "numba" and not numba_available():
        raise ParamError("engine numba: numba is not installed (pip install numba)")
    return engine


def use_compiled(engine: str, trials: int, dense: bool, record: bool) -> bool:
    """Whether a run takes the compiled per-trial loop.  Shadow runs (``forced_updates``),
    recorded scores and CSR input keep the numpy path."""
    check_engine(engine)
    if engine == "numpy" or record or not dense or in_forced_run():
        return False
    if engine == "numba":
        return True
    return trials >= COMPILED_MIN_TRIALS and numba_available()


@functools.cache
def compiled() -> Any:
    """The module of the numba loops (``fast._numba_higher_order``: ``ho_primal`` and
    ``ho_explicit_b`` here, ``sop_primal`` in ``fast.second_order``), imported at first
    use.  Level-2 BLAS (dsymv, dsyr, dsyr2) is called through scipy's ``cython_blas``
    function pointers (``blas_pointers``, passed to the loops), on the same column-major
    upper-triangle storage as the numpy path's ``scipy.linalg.blas`` calls."""
    from . import _numba_higher_order
    return _numba_higher_order


@functools.cache
def blas_pointers() -> dict[str, Any]:
    """ctypes views of scipy's ``cython_blas`` level-2 routines (Fortran interface: every
    argument by pointer), callable from numba-compiled code."""
    import ctypes

    from numba.extending import get_cython_function_address
    nargs = {"dsymv": 10, "dsyr": 7, "dsyr2": 9, "dspmv": 9, "dspr": 6, "dgemv": 11,
             "dger": 9}
    return {name: ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * count)(
        get_cython_function_address("scipy.linalg.cython_blas", name))
        for name, count in nargs.items()}


def run_compiled(model: Any, T: int, epochs: int) -> DriverResult:
    """Run a model's compiled loop (``model.compiled_step(t, end)`` -> (next trial, the
    update trials it made, whether the score at the next trial was not finite)) over all
    trials; every mistake of these forms is an update.  A score that is not finite stops
    the run with the driver's ``FloatRangeError``."""
    end = T * epochs
    t = 0
    done: list[np.ndarray] = []
    while t < end:
        t, trials, bad = model.compiled_step(t, end)
        done.append(trials)
        if bad:
            j = t % T
            score = float(np.asarray(model.scores(j, j + 1)).ravel()[0])
            raise float_range_error(t, j, score)
    updates = np.concatenate(done).tolist() if done else []
    return DriverResult(mistakes=updates, updates=list(updates))


class Packed:
    """A symmetric k x k matrix as its upper triangle packed by columns (BLAS ``dspmv`` /
    ``dspr`` storage: entry (i, j), i <= j, at i + j (j + 1) / 2), in a buffer whose
    capacity doubles when full.  Bordering (one more row and column) appends k + 1 entries;
    nothing k x k is allocated per mistake."""

    def __init__(self) -> None:
        self.data = np.zeros(16 * 17 // 2)
        self.k = 0

    @property
    def used(self) -> np.ndarray:
        return self.data[:self.k * (self.k + 1) // 2]

    def border(self, column: np.ndarray, corner: float) -> None:
        k = self.k
        need = (k + 1) * (k + 2) // 2
        if need > self.data.shape[0]:
            cap = 2 * (k + 1)
            bigger = np.zeros(cap * (cap + 1) // 2)
            bigger[:k * (k + 1) // 2] = self.used
            self.data = bigger
        base = k * (k + 1) // 2
        self.data[base:base + k] = column
        self.data[base + k] = corner
        self.k = k + 1

    def matvec(self, x: np.ndarray) -> np.ndarray:
        if self.k == 0:
            return np.zeros(0)
        product: np.ndarray = blas.dspmv(self.k, 1.0, self.data, x)
        return product

    def rank_one(self, alpha: float, x: np.ndarray) -> None:
        """M += alpha x x^T, in place."""
        if self.k:
            blas.dspr(self.k, alpha, x, self.data, overwrite_ap=1)

    def full(self) -> np.ndarray:
        out = np.zeros((self.k, self.k))
        rows, cols = np.triu_indices(self.k)
        order = np.lexsort((rows, cols))          # column by column, as packed
        out[rows[order], cols[order]] = self.used
        full: np.ndarray = np.triu(out) + np.triu(out, 1).T
        return full

    def set_full(self, M: np.ndarray) -> None:
        rows, cols = np.triu_indices(self.k)
        order = np.lexsort((rows, cols))
        self.data[:self.k * (self.k + 1) // 2] = M[rows[order], cols[order]]


class _Rule:
    """rho_k as the reference defines it (SPEC.md): ``c/k``, ``theorem1`` or ``constant``;
    the sparse variant sets rho_k = 0 on a mistake with y v_{k-1}.x < 0."""

    def __init__(self, par: HigherOrderParams):
        self.c = float(par.c)
        self.mode = par.rho
        self.sparse = bool(par.sparse)
        self.p = float(par.p)

    def rho(self, k: int, vx: float, label: int) -> float:
        """rho for the k-th mistake (k 1-based), given v_{k-1}.x_t and y_t."""
        if self.sparse and label * vx < 0:
            return 0.0
        if self.mode == "c/k":
            return self.c / k
        if self.mode == "theorem1":
            return (1.0 - self.c) / (1.0 + abs(vx))
        return self.c


def _dense_row(X: Any, j: int) -> np.ndarray:
    if sp.issparse(X):
        out = np.zeros(X.shape[1])
        lo, hi = X.indptr[j], X.indptr[j + 1]
        out[X.indices[lo:hi]] = X.data[lo:hi]
        return out
    row: np.ndarray = X[j]
    return row


class _Model:
    """What every form shares: the rule for rho, the mistake count, the mistake test."""

    def __init__(self, X: Any, y: np.ndarray, par: HigherOrderParams, kernel: Kernel):
        self.X, self.y, self.kernel = X, y, kernel
        self.rule = _Rule(par)
        self.k = 0                 # mistakes so far
        self.rhos: list[float] = []  # rho_k of every mistake, in order
        self.d_updates = 0         # mistakes that changed B (rho > 0): matrix work done

    def scores(self, start: int, stop: int) -> np.ndarray:
        """The scores of trials start .. stop-1 (each form's own)."""
        raise NotImplementedError

    def update(self, j: int) -> None:
        """The update at a mistake on example j (each form's own)."""
        raise NotImplementedError

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        return margins <= 0  # mistake-driven: a zero score is a mistake

    def next_rho(self, vx: float, label: int) -> float:
        self.k += 1
        rho = self.rule.rho(self.k, vx, label)
        self.rhos.append(rho)
        if rho != 0.0:
            self.d_updates += 1
        return rho

    def block_scores(self, start: int, stop: int, w: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            s = self.X[start:stop] @ w
        s = np.asarray(s, dtype=np.float64).ravel()
        if not np.isfinite(s).all() and not sp.issparse(self.X):
            check_finite_rows(self.X[start:stop])
        return s


def _primal_update(A: np.ndarray, x: np.ndarray, rho: float) -> None:
    """A <- (I - rho x x^T) A (I - rho x x^T) in place (SPEC.md 12.7.1): one dsymv, one dsyr2
    on the upper triangle of the Fortran-ordered A."""
    a = blas.dsymv(1.0, A, x)                      # a = A_{k-1} x
    a -= (0.5 * rho * float(x @ a)) * x            # a' = a - rho (x.a)/2 x
    blas.dsyr2(-rho, x, a, a=A, overwrite_a=1)     # A -= rho (a' x^T + x a'^T)


_MODES = {"c/k": 0, "theorem1": 1, "constant": 2}
_OUT = 4096   # mistakes per compiled call (the buffer the loop records them in)


def _compiled_step(model: Any, t: int, end: int) -> tuple[int, np.ndarray, bool]:
    """The compiled loop on a model's explicit matrix: A (the primal representation,
    ``ho_primal``) or, on an implicit model at p != 2, B_k (``ho_explicit_b``); with the
    model's v, w, k and rho rule."""
    explicit_b = getattr(model, "B", None) is not None
    n = model.X.shape[1]
    if not hasattr(model, "_buffers"):
        model._buffers = (np.ascontiguousarray(model.X, dtype=np.float64),
                          np.ascontiguousarray(model.y, dtype=np.float64),
                          np.zeros(_OUT, dtype=np.int64), np.zeros(_OUT),
                          np.zeros((4, n)) if explicit_b else np.zeros(n))
        model.v, model.w = np.array(model.v), np.array(model.w)
    X, y, out, rhos, work = model._buffers
    ptr = blas_pointers()
    head = (X, y, t, end, _OUT, model.k, _MODES[model.rule.mode], model.rule.c,
            model.rule.sparse)
    if explicit_b:
        t, count, bad = compiled().ho_explicit_b(
            *head, model.p, model.B, model.v, model.w, work, out, rhos, ptr["dgemv"],
            ptr["dger"])
    else:
        t, count, bad = compiled().ho_primal(
            *head, model.A, model.v, model.w, work, out, rhos, ptr["dsymv"], ptr["dsyr2"])
    made = rhos[:count]
    model.k += count
    model.rhos.extend(made.tolist())
    model.d_updates += int(np.count_nonzero(made))
    return t, out[:count].copy(), bool(bad)


class _Primal(_Model):
    """A_k (upper triangle, Fortran order for in-place BLAS), v_k and w_k = A_k v_k.

    Compiled engine: the per-trial loop (``compiled().ho_primal``) makes the same BLAS
    calls on the same arrays, a mistake at a time, with no Python between trials."""

    def __init__(self, X: Any, y: np.ndarray, par: HigherOrderParams, kernel: Kernel):
        super().__init__(X, y, par, kernel)
        n = X.shape[1]
        self.A = np.asfortranarray(np.eye(n))
        self.v = np.zeros(n)
        self.w = np.zeros(n)

    def scores(self, start: int, stop: int) -> np.ndarray:
        return self.block_scores(start, stop, self.w)

    def update(self, j: int) -> None:
        x, label = _dense_row(self.X, j), int(self.y[j])
        rho = self.next_rho(float(self.v @ x), label)
        self.v += label * x
        if rho != 0.0:
            _primal_update(self.A, x, rho)
        self.w = blas.dsymv(1.0, self.A, self.v)

    def compiled_step(self, t: int, end: int) -> tuple[int, np.ndarray, bool]:
        return _compiled_step(self, t, end)

    def matrix(self) -> np.ndarray:
        """A_k as a full symmetric matrix (the run keeps its upper triangle only)."""
        upper = np.triu(self.A)
        full: np.ndarray = upper + np.triu(self.A, 1).T
        return full


class _Dual(_Model):
    """D_+ over the mistakes with rho > 0, h_k, g_k; per-support-example sums G of g.

    g is updated by the recursion (g_i += b_i (y - rho h_kk) for the earlier mistakes with
    rho > 0; g_k = y - rho b.h + d_kk h_kk), so that a mistake costs one product with D_+
    (b = D_+ c_+), and recomputed from scratch as y + D_+ h_+ every REFRESH mistakes, which
    bounds the accumulation of rounding errors in g.
    """

    REFRESH = 32

    def __init__(self, X: Any, y: np.ndarray, par: HigherOrderParams, kernel: Kernel):
        super().__init__(X, y, par, kernel)
        T = y.shape[0]
        self.diag = np.asarray(kernel.diagonal(X), dtype=np.float64)   # k(x_j, x_j)
        self.support: list[int] = []                 # support examples, by first mistake
        self.slot = np.full(T, -1, dtype=np.int64)   # example -> position in support
        cap = 16
        self.mslot = np.zeros(cap, dtype=np.int64)   # the support position of each mistake
        self.my = np.zeros(cap)                      # the label of each mistake
        self.h = np.zeros(cap)                       # h_k = K_k y_k
        self.g = np.zeros(cap)                       # g_k = y_k + D_k h_k
        self.plus = np.zeros(cap, dtype=np.int64)    # the mistakes with rho > 0
        self.kp = 0
        self.D = Packed()                            # D_+ (k_+ x k_+, symmetric, packed)
        self.G = np.zeros(cap)                       # sum of g_i over each support example
        self.d_work = 0                              # multiply-adds spent on D (tests)
        self.linear = kernel.is_linear
        self.dense_support = self.linear and not sp.issparse(X)
        if self.linear:
            self.w = np.zeros(X.shape[1])
            if self.dense_support:                   # the support rows, copied once each
                self.XS = np.zeros((cap, X.shape[1]))
        else:
            self.max_cached = max(1, KERNEL_CACHE_BYTES // (8 * T))
            self.rows = np.zeros((min(16, self.max_cached), T))

    # -- scoring ---------------------------------------------------------------------------
    def scores(self, start: int, stop: int) -> np.ndarray:
        if self.linear:
            return self.block_scores(start, stop, self.w)
        S = len(self.support)
        cached = min(S, self.max_cached)
        s = self.G[:cached] @ self.rows[:cached, start:stop]
        if S > cached:
            extra = self.kernel.matrix(self.X[start:stop], self.X[self.support[cached:]])
            s = s + extra @ self.G[cached:S]
        if not np.isfinite(s).all() and not sp.issparse(self.X):
            check_finite_rows(self.X[start:stop])
        return s

    def _support_values(self, j: int) -> np.ndarray:
        """k(x_s, x_j) for every support example s."""
        S = len(self.support)
        if S == 0:
            return np.zeros(0)
        if self.dense_support:
            dots: np.ndarray = self.XS[:S] @ self.X[j]
            return dots
        if self.linear:  # CSR
            values = self.X[self.support] @ self.X[j].T
            dots = values.toarray().ravel()
            return dots
        cached = min(S, self.max_cached)
        out: np.ndarray = self.rows[:cached, j].copy()
        if S > cached:
            extra = self.kernel.matrix(self.X[self.support[cached:]], self.X[j:j + 1])[:, 0]
            out = np.concatenate([out, extra])
        return out

    def _grow(self) -> None:
        cap = self.mslot.shape[0]
        if self.k < cap:
            return
        for name in ("mslot", "my", "h", "g", "plus"):
            old = getattr(self, name)
            new = np.zeros(2 * cap, dtype=old.dtype)
            new[:cap] = old
            setattr(self, name, new)

    def _add_support(self, j: int) -> None:
        S = len(self.support)
        self.slot[j] = S
        self.support.append(j)
        if S == self.G.shape[0]:
            self.G = np.concatenate([self.G, np.zeros(S)])
        if self.dense_support:
            if S == self.XS.shape[0]:
                self.XS = np.concatenate([self.XS, np.zeros_like(self.XS)])
            self.XS[S] = self.X[j]
        elif not self.linear and S < self.max_cached:
            if S == self.rows.shape[0]:
                grown = np.zeros((min(2 * S, self.max_cached), self.rows.shape[1]))
                grown[:S] = self.rows
                self.rows = grown
            self.rows[S] = self.kernel.matrix(self.X[j:j + 1], self.X)[0]

    # -- the update (section 2 item 2) --------------------------------------------------------
    def update(self, j: int) -> None:
        label = int(self.y[j])
        k, kp = self.k, self.kp                      # mistakes (with rho > 0) before this one
        # while every mistake so far has rho > 0 (D_+ over all of them) and a support
        # example of its own (mistake i at support position i), the index maps are the
        # identity and slices replace the gathers and scatters
        plain = kp == k and (k == 0 or self.mslot[k - 1] == k - 1)
        sv = self._support_values(j)
        c = sv[:k] if plain else sv[self.mslot[:k]]  # c_i = k(x_i, x_j), i < k
        vx = float(self.my[:k] @ c)                  # v_{k-1}.x = y_{k-1}^T c
        rho = self.next_rho(vx, label)
        self._grow()
        kxx = float(self.diag[j])
        self.h[:k] += label * c                      # h_k[i] = h_{k-1}[i] + y c_i
        h_kk = vx + label * kxx                      # h_k[k] = y_{k-1}^T c + y k(x, x)
        self.h[k] = h_kk
        idx = slice(0, k) if plain else self.plus[:kp]
        g_new = float(label)
        if kp:
            cp = c[idx]
            b = self.D.matvec(cp)                    # b_k = D_{k-1} X_{k-1}^T x (dspmv)
            self.d_work += kp * kp
            self.g[idx] += b * (label - rho * h_kk)  # (D_k h_k)_i for the earlier mistakes
            g_new -= rho * float(b @ self.h[idx])
        if rho != 0.0:
            d_kk = (rho * rho * float(cp @ b) if kp else 0.0) - 2.0 * rho + rho * rho * kxx
            self.D.border(-rho * b if kp else np.zeros(0), d_kk)   # one column appended
            g_new += d_kk * h_kk
            self.plus[kp] = k
            self.kp = kp + 1
        self.g[k] = g_new
        if self.slot[j] < 0:
            self._add_support(j)
        self.mslot[k] = self.slot[j]
        self.my[k] = label
        if self.kp and (k + 1) % self.REFRESH == 0:  # g_k = y_k + D_k h_k afresh
            self.g[:k + 1] = self.g_vector()
            self.d_work += self.kp * self.kp
        self._weights(plain and self.mslot[k] == k)

    def _weights(self, plain: bool) -> None:
        """G (the sum of g_i over each support example) and, with the linear kernel, w."""
        S = len(self.support)
        if plain:                                    # mistake i at support position i
            self.G[:S] = self.g[:S]
        else:
            self.G[:S] = np.bincount(self.mslot[:self.k], weights=self.g[:self.k],
                                     minlength=S)
        if self.dense_support:
            self.w = self.G[:S] @ self.XS[:S]
        elif self.linear:
            self.w = np.asarray(self.X[self.support].T @ self.G[:S], dtype=np.float64).ravel()

    def d_matrix(self) -> np.ndarray:
        """D_k over all k mistakes (zero rows/columns for the mistakes with rho = 0)."""
        full = np.zeros((self.k, self.k))
        idx = self.plus[:self.kp]
        full[np.ix_(idx, idx)] = self.D.full()
        return full

    def g_vector(self) -> np.ndarray:
        """g_k = y_k + D_k h_k, computed from D and h (not from the recursion)."""
        g: np.ndarray = self.my[:self.k].copy()
        if self.kp:
            idx = self.plus[:self.kp]
            g[idx] += self.D.matvec(self.h[idx])
        return g


class _Implicit(_Model):
    """v_k and the factors (rho_i, x_i, g(x_i)) of the mistakes with rho_i > 0.

    B_k = F_1 F_2 ... F_k is applied to a vector factor by factor, as section 2 item 3
    unwraps it, but up to CHUNK consecutive factors at a time: their product is
    I - X_c R_c G_c^T (X_c, G_c the chunk's x_i and g(x_i) as rows, R_c upper triangular,
    grown as the factors arrive by the column (-rho R_c G_c^T x ; rho)), so a chunk costs two
    (size x n) products instead of 2 size Python-level vector operations.  B is never formed;
    the cost stays O(n k) per product.  R_c can grow like a product of (1 + rho |g.x|) on
    low-dimensional, non-normalised data, and large entries of R_c cost accuracy (cancellation
    in z - X_c R_c G_c^T z): a chunk takes only factors with 0 < rho g(x).x <= 1 (contracting
    along x), and is closed early when a new column of R_c would exceed GROWTH in absolute
    value.  Measured on low-dimensional, non-normalised runs against a long-double
    recomputation: CHUNK = 32, GROWTH = 1 is within a factor 2 of the one-factor-at-a-time
    unwrapping's error; CHUNK = 128 lost two orders of magnitude more.
    """

    CHUNK = 32
    GROWTH = 1.0
    #: An explicit representation takes over once SWITCH k_+ >= n (the implicit cost
    #: O(n k_+) per mistake then exceeds O(n^2) BLAS passes): p = 2 the primal's
    #: A_k = B_k^T B_k, p != 2 B_k itself (``to_explicit``).
    SWITCH = 4
    #: p = 2 with the compiled engine: up to this n the primal representation runs from the
    #: first trial.
    COMPILED_PRIMAL_MAX_N = 1000
    #: p != 2 with the compiled engine: up to this n B_k is kept explicitly from the first
    #: trial (measured at p = 4: faster than the implicit form's first n / 4 factors up to
    #: n = 300, slower from n = 400 on a run with fewer mistakes than that).
    COMPILED_EXPLICIT_MAX_N = 300

    def __init__(self, X: Any, y: np.ndarray, par: HigherOrderParams, kernel: Kernel):
        super().__init__(X, y, par, kernel)
        n = X.shape[1]
        self.p = self.rule.p
        self.v = np.zeros(n)
        self.w = np.zeros(n)
        self.fx = np.zeros((16, n))           # x_i of the factors, as rows
        self.fg = np.zeros((16, n))           # g(x_i)
        self.frho: list[float] = []           # rho_i
        self.starts: list[int] = []           # the first factor of each chunk
        self.R: list[np.ndarray] = []         # R_c of each chunk (CHUNK x CHUNK, used part)
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # views, per chunk
        self.open = False                     # may the last chunk take another factor?
        self.A: np.ndarray | None = None      # p = 2 after the switch: A_k (as _Primal's)
        self.B: np.ndarray | None = None      # p != 2 after the switch: B_k explicitly
        self.may_switch = self._all_contracting()

    def _all_contracting(self) -> bool:
        """Every factor of the run will be a contraction along its x (rho g(x).x =
        rho ||x||_p^2 <= 1, from the largest rho the rule can give and the longest instance
        in p-norm, as ``_contracting`` asks of each factor): only then does the switch to an
        explicit A_k or B_k keep the implicit form's accuracy (a test measures it on
        non-contracting data, where the form stays implicit)."""
        c = self.rule.c
        rho_max = 1.0 - c if self.rule.mode == "theorem1" else c
        if self.X.shape[0] == 0:
            return True
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow: not contracting
            if sp.issparse(self.X):
                sums = np.asarray(abs(self.X).power(self.p).sum(axis=1))
            else:
                sums = _row_power_sums(self.X, self.p)
        longest = float(sums.max())
        if not math.isfinite(longest) and not sp.issparse(self.X):
            # Dense X's finiteness check (run_model): a NaN or infinity in a row makes its
            # sum one; finite entries may overflow it, and then the form stays implicit.
            check_finite_rows(self.X)
        contracting: bool = rho_max * longest ** (2.0 / self.p) <= 1.0
        return contracting

    def scores(self, start: int, stop: int) -> np.ndarray:
        return self.block_scores(start, stop, self.w)

    def apply_b(self, z: np.ndarray) -> np.ndarray:
        """B_k z = F_1 (F_2 ( ... (F_k z))): the last chunk first, z -= X_c R_c G_c^T z."""
        z = z.copy()
        for fx, fg, R in reversed(self.chunks):
            z -= (R @ (fg @ z)) @ fx
        return z

    def apply_bt(self, u: np.ndarray) -> np.ndarray:
        """B_k^T u = F_k^T ( ... (F_1^T u)): the first chunk first, u -= G_c R_c^T X_c^T u."""
        u = u.copy()
        for fx, fg, R in self.chunks:
            u -= ((fx @ u) @ R) @ fg
        return u

    def _add_factor(self, rho: float, x: np.ndarray) -> None:
        K = len(self.frho)
        if K == self.fx.shape[0]:
            self.fx = np.concatenate([self.fx, np.zeros_like(self.fx)])
            self.fg = np.concatenate([self.fg, np.zeros_like(self.fg)])
        self.fx[K], self.fg[K] = x, link_inverse(x, self.p)
        self.frho.append(rho)
        column = None
        # rho g(x).x in (0, 1]: the factor is a contraction along x (|1 - rho g.x| < 1); only
        # such factors share a chunk (others stand alone: the chunk form cancels badly there)
        contracting = _contracting(rho, self.fg[K], x)
        if self.starts and self.open and contracting:
            lo = self.starts[-1]
            i = K - lo
            if i < self.CHUNK:
                R = self.R[-1]
                column = -rho * (R[:i, :i] @ (self.fg[lo:K] @ x))
                if not np.all(np.abs(column) <= self.GROWTH):  # (NaN closes the chunk too)
                    column = None
        self.open = contracting
        if column is None:  # open a new chunk with this factor
            self.starts.append(K)
            self.R.append(np.zeros((self.CHUNK, self.CHUNK)))
            lo, i = K, 0
        R = self.R[-1]
        if i:
            R[:i, i] = column
        R[i, i] = rho
        # views into the (possibly reallocated) factor arrays, for every chunk
        bounds = self.starts + [K + 1]
        self.chunks = [(self.fx[a:b], self.fg[a:b], Rc[:b - a, :b - a])
                       for a, b, Rc in zip(bounds[:-1], bounds[1:], self.R)]

    def update(self, j: int) -> None:
        x, label = _dense_row(self.X, j).copy(), int(self.y[j])
        rho = self.next_rho(float(self.v @ x), label)
        self.v += label * x
        if self.A is not None:                         # p = 2, primal representation
            if rho != 0.0:
                _primal_update(self.A, x, rho)
            self.w = blas.dsymv(1.0, self.A, self.v)
            return
        if self.B is not None:                         # p != 2, B_k explicit
            if rho != 0.0:   # B_k = B_{k-1} F_k = B_{k-1} - rho (B_{k-1} x) g(x)^T
                blas.dger(-rho, blas.dgemv(1.0, self.B, x), link_inverse(x, self.p),
                          a=self.B, overwrite_a=1)
            self.w = blas.dgemv(1.0, self.B, link_inverse(blas.dgemv(1.0, self.B, self.v),
                                                            self.p), trans=1)
            return
        if rho != 0.0:
            self._add_factor(rho, x)
            if self.may_switch and self.SWITCH * len(self.frho) >= self.X.shape[1]:
                self.to_explicit()
                self.update_weights()
                return
        self.w = self.apply_bt(link_inverse(self.apply_b(self.v), self.p))

    def update_weights(self) -> None:
        """w = B^T g(B v) from the explicit representation the form switched to."""
        if self.A is not None:
            self.w = blas.dsymv(1.0, self.A, self.v)
        else:
            assert self.B is not None
            self.w = blas.dgemv(1.0, self.B, link_inverse(blas.dgemv(1.0, self.B, self.v),
                                                            self.p), trans=1)

    def to_explicit(self) -> None:
        """Once the implicit cost O(n k_+) per mistake exceeds O(n^2): p = 2 continues as the
        primal (``to_primal``), p != 2 with B_k formed by replaying the factors
        (B <- B - rho (B x) g(x)^T, one dgemv and one dger each) and the factors dropped."""
        if self.p == 2.0:
            self.to_primal()
            return
        self.B = np.asfortranarray(np.eye(self.X.shape[1]))
        for i, rho in enumerate(self.frho):
            blas.dger(-rho, blas.dgemv(1.0, self.B, self.fx[i]), self.fg[i], a=self.B,
                      overwrite_a=1)
        self.fx = self.fg = np.zeros((0, self.X.shape[1]))
        self.frho, self.starts, self.R, self.chunks = [], [], [], []

    def to_primal(self) -> None:
        """p = 2: B_k^T g(B_k v) = A_k v with A_k = B_k^T B_k; form A_k by replaying the
        factors as the primal form's updates (the same BLAS calls in the same order, so the
        same A_k) and drop them."""
        self.A = np.asfortranarray(np.eye(self.X.shape[1]))
        for i, rho in enumerate(self.frho):
            _primal_update(self.A, self.fx[i], rho)
        self.fx = self.fg = np.zeros((0, self.X.shape[1]))
        self.frho, self.starts, self.R, self.chunks = [], [], [], []

    def compiled_step(self, t: int, end: int) -> tuple[int, np.ndarray, bool]:
        """p = 2: the primal's compiled loop from the first trial.  p != 2: B_k's compiled
        loop (``fast._numba_higher_order.ho_explicit_b``), from the first trial (B_0 = I) up to
        COMPILED_EXPLICIT_MAX_N features, else after the implicit form's switch (before it
        ``implicit_step``)."""
        if self.p != 2.0:
            if self.B is None and self.X.shape[1] <= self.COMPILED_EXPLICIT_MAX_N:
                self.to_explicit()
            if self.B is None:
                return self.implicit_step(t, end)
            return _compiled_step(self, t, end)
        if self.A is None:
            self.to_primal()
        return _compiled_step(self, t, end)

    def implicit_step(self, t: int, end: int) -> tuple[int, np.ndarray, bool]:
        """The trials from t on as the driver takes them (blocks X[block] @ w, doubling from
        MIN_BLOCK, within one epoch), up to and including the next mistake and its update."""
        T = self.X.shape[0]
        block = MIN_BLOCK
        while t < end:
            j = t % T
            stop = min(T, j + block, j + end - t)
            s = self.scores(j, stop)
            hit = np.flatnonzero(~(self.y[j:stop] * s > 0))   # a mistake, or not finite
            if hit.size:
                t += int(hit[0])
                if not np.isfinite(s[hit[0]]):
                    return t, np.zeros(0, dtype=np.int64), True
                self.update(t % T)
                return t + 1, np.array([t]), False
            t += stop - j
            block = min(MAX_BLOCK, 2 * block)
        return t, np.zeros(0, dtype=np.int64), False


def _row_power_sums(X: np.ndarray, p: float) -> np.ndarray:
    """sum_i |x_i|^p of each row; p = 2 by ``einsum`` (no temporary), another integer p up
    to 8 by repeated products (``**`` with a float exponent took 20 ms on 5,000 x 200, a
    third of a p = 4 run; the products take 3)."""
    sums: np.ndarray
    if p == 2.0:
        sums = np.einsum("ij,ij->i", X, X)
        return sums
    absx = np.abs(X)
    if p != int(p) or p > 8:
        sums = (absx ** p).sum(axis=1)
        return sums
    out = absx * absx
    for _ in range(int(p) - 2):
        out *= absx
    sums = out.sum(axis=1)
    return sums


def _contracting(rho: float, gx: np.ndarray, x: np.ndarray) -> bool:
    """0 < rho g(x).x <= 1: the factor I - rho x g(x)^T contracts along x."""
    return 0.0 < rho * float(gx @ x) <= 1.0


FORMS = {"primal": _Primal, "dual": _Dual, "implicit": _Implicit}


def run_model(form: str, X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
              record_scores: bool = False, engine: str = "auto",
              **given: Any) -> tuple[Trace, _Model]:
    """Run one form; returns the trace and the model (its state, for tests).  ``engine``:
    the compiled loop or the numpy driver for the primal form and the implicit one once it
    keeps A_k or B_k explicitly (``ENGINES``; the dual form has the driver only)."""
    check_engine(engine)
    kern = parse_kernel(kernel)
    par = resolve_params(given)
    if form != "dual" and not kern.is_linear:
        raise ParamError(f"the {form} form takes the linear kernel only, not {kern.spec}")
    if form in ("primal", "dual") and par.p != 2:
        raise ParamError(f"parameter p: the {form} form takes p = 2 only "
                         f"(got {par.p}); use the implicit form")
    # The implicit form's row sums of |x_i|^p (``_all_contracting``) are dense X's
    # finiteness check: one pass over X saved.
    X, y = validate(X, y, check_finite=form != "implicit" or sp.issparse(X))
    epochs = check_epochs(epochs)
    model = FORMS[form](X, y, par, kern)
    fast = form == "primal" or (isinstance(model, _Implicit) and model.may_switch
                                and (model.p != 2.0
                                     or X.shape[1] <= _Implicit.COMPILED_PRIMAL_MAX_N))
    with OneBlasThread():
        if fast and use_compiled(engine, y.shape[0] * epochs, not sp.issparse(X),
                                 record_scores):
            result = run_compiled(model, y.shape[0], epochs)
        else:
            result = run_blocks(model, y, epochs, record_scores)
    trace = Trace(algorithm="higher_order", form=form, kernel=kern.spec,
                  params=PARAMS.as_dict(par), n_examples=y.shape[0], epochs=epochs,
                  mistakes=result.mistakes, updates=result.updates,
                  final=finite_final(_final(model, form), result.updates, y.shape[0]),
                  scores=result.scores)
    return trace, model


def _final(model: _Model, form: str) -> dict[str, Any]:
    """The reference's ``final``: linear kernel ``w``, ``v``, ``rho``; other kernels
    ``support`` (the example of each mistake), ``g`` (its dual coefficient), ``rho``."""
    if isinstance(model, _Dual):
        support = np.array([model.support[s] for s in model.mslot[:model.k]], dtype=np.int64)
        if not model.linear:
            return {"support": support, "g": model.g[:model.k].copy(),
                    "rho": np.array(model.rhos)}
        v = np.zeros(model.X.shape[1])
        if support.size:
            labels = np.bincount(model.mslot[:model.k], weights=model.my[:model.k],
                                 minlength=len(model.support))
            v = np.asarray(model.X[model.support].T @ labels, dtype=np.float64).ravel()
        return {"w": model.w.copy(), "v": v, "rho": np.array(model.rhos)}
    assert isinstance(model, (_Primal, _Implicit))  # FORMS: the other two forms
    return {"w": model.w.copy(), "v": model.v.copy(), "rho": np.array(model.rhos)}


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
           c: Any = Fraction(2, 5), rho: Any = "c/k", sparse: Any = False,
           record_scores: bool = False, engine: str = "auto") -> Trace:
    """Primal form (p = 2): A_k explicit, O(n^2) per mistake (section 2 item 1).
    ``engine``: "auto", "numpy" or "numba" (the module docstring)."""
    return run_model("primal", X, y, epochs=epochs, kernel=kernel, p=p, c=c, rho=rho,
                     sparse=sparse, record_scores=record_scores, engine=engine)[0]


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
         c: Any = Fraction(2, 5), rho: Any = "c/k", sparse: Any = False,
         record_scores: bool = False) -> Trace:
    """Dual form (p = 2, any kernel): D_k, H_k, g_k (section 2 item 2)."""
    return run_model("dual", X, y, epochs=epochs, kernel=kernel, p=p, c=c, rho=rho,
                     sparse=sparse, record_scores=record_scores)[0]


def implicit(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
             c: Any = Fraction(2, 5), rho: Any = "c/k", sparse: Any = False,
             record_scores: bool = False, engine: str = "auto") -> Trace:
    """Implicit primal form (any p): B unwrapped factor by factor (section 2 item 3).
    ``engine``: as the primal form's, once the form keeps A_k (p = 2) or B_k explicitly."""
    return run_model("implicit", X, y, epochs=epochs, kernel=kernel, p=p, c=c, rho=rho,
                     sparse=sparse, record_scores=record_scores, engine=engine)[0]
