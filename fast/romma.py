"""ROMMA (Li & Long 2002; the base of PUMMA, Ishibashi, Hatano & Takeda 2008) in float64.

Forms ``primal`` (w in float64; linear kernel; dense or CSR X) and ``dual`` (any kernel).
Both follow ``reference.romma`` trial for trial (SPEC.md, "romma / pumma") and share the
block-ahead driver: the state changes only at an update, so a block of upcoming trials is
scored with one product.  The primal form also runs as a compiled per-trial loop
(``fast._compiled_romma``; ``engine=``), the default when numba is installed.

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
from . import _compiled
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


def _sqnorms(X: Any) -> np.ndarray:
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X)


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
        """w~ <- eta w~ + lam z~ with z~ = sum_e coef_e x~_e.  With more than one term (PUMMA's
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
        return {"w": self.w.tolist()}


class DualSpace:
    """w = sum_e a_e phi(x_e) over the examples that took part in an update (the support).

    Kept (T examples, S support examples):

    - the coefficients a, by support position;
    - the kernel cache: for the first support examples, their kernel rows k(x_s, X) (T
      values each, computed once when the example joins the support), in chunks that are
      allocated as the support grows and never copied, within ``KERNEL_CACHE_BYTES`` in
      all; a block's scores are ``a @ rows[:, block]`` over the chunks, plus, beyond the
      cache, the block's kernel values against the remaining support computed per block;
    - ``Ga`` = G~ a, G~ the support's Gram matrix with 1/C on its diagonal for the soft
      margin: (G~ a)_s = w~.x~_s.  It gives v.x_e (``dot``) in O(1) and ||v||^2 = a.G~a
      in O(S), and is carried through an update in O(S) (a <- eta a + lam sum_e c_e 1_e:
      Ga <- eta Ga + lam sum_e c_e G~[:, e], gathered from e's cached row), so no
      update costs O(S^2) and G~ itself is never stored.  The recurrence's rounding is
      bounded by recomputing Ga from the cache every max(REFRESH, S) updates (O(S^2),
      amortised O(S) per update).
    """

    #: the kernel cache grows by chunks of at most this many bytes (each a fresh array)
    CHUNK_BYTES = 64 * 2**20
    #: Ga is recomputed after at most max(REFRESH, S) updates
    REFRESH = 64

    def __init__(self, X: Any, T: int, C: float | None, kernel: Kernel):
        self.X, self.kernel, self.T = X, kernel, T
        self.inv_c = 0.0 if C is None else 1.0 / C
        self.support: list[int] = []
        self.sup = np.zeros(16, dtype=np.int64)   # the support as an array (gathers)
        self.slot = np.full(T, -1, dtype=np.int64)
        self.coef = np.zeros(16)
        self.Ga = np.zeros(16)
        self.max_cached = max(1, min(T, KERNEL_CACHE_BYTES // (8 * T)))
        self.chunks: list[np.ndarray] = []        # (k, T) arrays: row s = k(x_s, X)
        self.capacity = 0                         # rows allocated over the chunks
        self.sq = _sqnorms(X) if kernel.name == "rbf" else None
        self.stale = 0                            # updates since Ga was recomputed

    # -- the kernel cache -----------------------------------------------------------------
    def _kernel_row(self, e: int) -> np.ndarray:
        """k(x_e, X): one X x_e product (the squared norms of the Gaussian kernel are
        computed once per run)."""
        if sp.issparse(self.X):
            dots = np.asarray((self.X @ self.X[e].T).todense()).ravel()
        else:
            dots = self.X @ self.X[e]
        kern = self.kernel
        if kern.name == "linear":
            return dots
        if kern.name == "poly":
            return (float(kern.gamma) * dots + float(kern.coef0)) ** kern.degree
        assert self.sq is not None
        d2 = self.sq + self.sq[e] - 2.0 * dots
        np.maximum(d2, 0.0, out=d2)  # cancellation can leave tiny negatives
        return np.exp(-float(kern.gamma) * d2)

    def _store(self, s: int, row: np.ndarray) -> None:
        """Cache row s (the next one): a new chunk, sized to double the cache, when full."""
        if s == self.capacity:
            k = min(self.max_cached - s, max(16, s), max(1, self.CHUNK_BYTES // (8 * self.T)))
            self.chunks.append(np.zeros((k, self.T)))
            self.capacity += k
        self._cached_row(s)[:] = row

    def _cached_row(self, s: int) -> np.ndarray:
        for chunk in self.chunks:
            if s < chunk.shape[0]:
                return chunk[s]
            s -= chunk.shape[0]
        raise IndexError(s)

    def _cached_block(self, idx: Any, cached: int) -> np.ndarray:
        """k(x_s, x_i) for the first ``cached`` support examples s and the examples ``idx``
        (a slice or an index array), from the cache: (cached, len(idx))."""
        parts, left = [], cached
        for chunk in self.chunks:
            if left <= 0:
                break
            k = min(left, chunk.shape[0])
            parts.append(chunk[:k, idx])
            left -= k
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def block_scores(self, start: int, stop: int) -> np.ndarray:
        S = len(self.support)
        cached = min(S, self.max_cached)
        s = np.zeros(stop - start)
        pos = 0
        for chunk in self.chunks:
            k = min(cached - pos, chunk.shape[0])
            if k <= 0:
                break
            s += self.coef[pos:pos + k] @ chunk[:k, start:stop]
            pos += k
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

    def _gram_column(self, e: int) -> np.ndarray:
        """G~[:, e] over the support: k(x_s, x_e) (+ 1/C at e's own position)."""
        S, s = len(self.support), int(self.slot[e])
        if s < self.max_cached:
            out = self._cached_row(s)[self.sup[:S]]
        else:
            out = self.kernel.matrix(self.X[self.support], self.X[e:e + 1])[:, 0]
        if self.inv_c:
            out[s] += self.inv_c
        return out

    def ensure(self, e: int) -> None:
        """Make example e a support example (coefficient 0), computing its kernel row
        (against every example while the cache has room, else against the support)."""
        if self.slot[e] >= 0:
            return
        S = len(self.support)
        if S == self.coef.shape[0]:
            self.coef = np.concatenate([self.coef, np.zeros(S)])
            self.Ga = np.concatenate([self.Ga, np.zeros(S)])
            self.sup = np.concatenate([self.sup, np.zeros(S, dtype=np.int64)])
        if S < self.max_cached:
            row = self._kernel_row(e)
            self._store(S, row)
            k = row[self.sup[:S]]
        else:
            k = self.kernel.matrix(self.X[self.support], self.X[e:e + 1])[:, 0]
        self.slot[e] = S
        self.support.append(e)
        self.sup[S] = e
        self.Ga[S] = float(k @ self.coef[:S])  # a_e = 0: no other entry of G~a changes

    def _refresh(self) -> None:
        """Ga = G~ a recomputed from the cache (and the kernel beyond it)."""
        S = len(self.support)
        cached = min(S, self.max_cached)
        sup = self.sup[:S]
        Ga = self.coef[:cached] @ self._cached_block(sup, cached)
        if S > cached:
            Ga += self.kernel.matrix(self.X[self.support], self.X[self.support[cached:]]) \
                @ self.coef[cached:S]
        self.Ga[:S] = Ga + self.inv_c * self.coef[:S]
        self.stale = 0

    def dot(self, e: int) -> float:
        """w~.x~_e for a support example e."""
        return float(self.Ga[self.slot[e]])

    def gram(self, e: int, f: int) -> float:
        """G~[e, f] for support examples e and f."""
        (hi, lo_example), (lo, hi_example) = sorted(
            [(int(self.slot[e]), f), (int(self.slot[f]), e)], reverse=True)
        if hi < self.max_cached:      # the later row (it was computed with the other in X)
            out = float(self._cached_row(hi)[lo_example])
        elif lo < self.max_cached:
            out = float(self._cached_row(lo)[hi_example])
        else:
            out = float(self.kernel.matrix(self.X[e:e + 1], self.X[f:f + 1])[0, 0])
        return out + (self.inv_c if e == f else 0.0)

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
        return float(self.coef[:S] @ self.Ga[:S])

    def apply(self, lam: float, eta: float, zc: list[tuple[int, float]]) -> None:
        S = len(self.support)
        if eta != 1.0:
            self.coef[:S] *= eta
            self.Ga[:S] *= eta
        for e, coef in zc:
            self.coef[self.slot[e]] += lam * coef
            self.Ga[:S] += (lam * coef) * self._gram_column(e)
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
               record_scores: bool, engine: str = "numpy") -> Trace:
    chosen = _compiled.choose(engine)
    if form == "primal" and chosen == "numba":
        return _primal_compiled(X, y, epochs, kernel, given, record_scores)
    model, p, X, y, epochs = setup(form, X, y, epochs, kernel, given)
    result = run_blocks(model, y, epochs, record_scores)
    return Trace(algorithm="romma", form=form, kernel=parse_kernel(kernel).spec, params=p,
                 n_examples=y.shape[0], epochs=epochs, mistakes=result.mistakes,
                 updates=result.updates, final=model.final(), scores=result.scores)


def _primal_compiled(X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
                     record_scores: bool) -> Trace:
    """The primal run by the compiled per-trial loop (``fast._compiled_romma``).  Dense X
    is not checked for NaN or infinity beforehand: the loop's scores are that check (a row
    holding one scores NaN or infinity), reported as validate() reports it."""
    from . import _compiled_romma

    kern = parse_kernel(kernel)
    p = PARAMS.resolve(given)
    if not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    X, y = validate(X, y, check_finite=sp.issparse(X))  # dense: the first pass checks
    epochs = check_epochs(epochs)
    T, n = X.shape
    dense, indptr, indices, data, sparse = _compiled.csr_parts(X)
    w = np.zeros(n)
    state = np.array([-1.0, 0.0, 0.0, 0.0])
    trials = epochs * T
    mistakes, updates = np.empty(trials, dtype=np.int64), np.empty(trials, dtype=np.int64)
    scores = np.zeros(trials if record_scores else 1)
    bad = _compiled_romma.loops().romma_primal(
        dense, indptr, indices, data, sparse, y.astype(np.float64), epochs,
        1.0 - float(p["delta"]), RESIDUAL_SINGULAR, w, np.zeros(n if sparse else 1), state,
        mistakes, updates, scores, record_scores)
    _compiled.raise_if_bad(bad, T, state[1], X)  # dense X: a NaN or infinity named first
    return Trace(algorithm="romma", form="primal", kernel=kern.spec, params=p,
                 n_examples=T, epochs=epochs, mistakes=mistakes[:int(state[2])].tolist(),
                 updates=updates[:int(state[3])].tolist(), final={"w": w.tolist()},
                 scores=scores.tolist() if record_scores else None)


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", delta: Any = 0,
           numbers: Any = "auto", record_scores: bool = False, engine: str = "auto") -> Trace:
    """Primal form: w in float64.  ``numbers`` is the reference's arithmetic; it is checked
    and recorded, and does not change a float64 run.

    ``engine``: "numba" runs the compiled per-trial loop (``fast._compiled_romma``), "numpy"
    the block-ahead driver scoring a block with X[block] @ w, "auto" (the default) the
    compiled loop when numba is installed (``fast._compiled`` says how numba is found).
    Under ``forced_updates`` (shadow runs) the numpy path runs whatever was asked."""
    return _romma_run("primal", X, y, epochs, kernel, dict(delta=delta, numbers=numbers),
                      record_scores, engine)


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", delta: Any = 0,
         numbers: Any = "auto", record_scores: bool = False) -> Trace:
    """Dual (kernel) form: one coefficient per support example, cached kernel rows."""
    return _romma_run("dual", X, y, epochs, kernel, dict(delta=delta, numbers=numbers),
                      record_scores)
