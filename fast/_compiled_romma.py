"""The compiled per-trial loop (numba, optional) of ROMMA's primal form (``fast.romma``).

One trial at a time in machine code: a dot product per trial (an unrolled loop over a dense
row, a gather over the stored entries of a CSR row) and, at an update, problem (2) solved by
the closed forms (15)/(19) exactly as ``fast.romma.step2`` does (the residual form of D), w
rescaled and moved in place.  The block-ahead driver pays a Python round trip and a dozen
small numpy calls per update (about 5 us at 100 features); the loop pays three passes over
w (||z||^2, the residual, the new w with its norm), so its cost hardly depends on the
update rate.  ``tests/benchmarks/test_romma_pumma_bench.py`` measures both against one
``X @ w`` pass.

Semantics are ``fast.romma``'s numpy path trial for trial (SPEC.md 12.7): score w.x; a
mistake iff y score <= 0; an update iff y score < 1 - delta, the example is not the last
updated one (Lemma 4: its margin is exactly 1), and problem (2) is feasible.  v.z is the
trial's margin y (w.x) (the same number in exact arithmetic; the numpy path forms w.z
anew).  A score that is not finite stops the loop and the caller raises the driver's
``FloatRangeError`` naming the trial, or the DataError naming a NaN or infinity in X: a
row holding one scores NaN or infinity whatever w is, so the loop is the finiteness check
of dense X.  Float64 rounding may differ from the numpy engine (another summation order),
never the decisions outside the reference's fragile trials.

Compiled as ``fast._compiled``'s loops are (``cache=True`` where numba can write its cache;
IEEE division, ``error_model="numpy"``), at the first compiled run.
"""

from __future__ import annotations

import math
from typing import Any

from ._compiled import _jit

_LOOPS: Any = None


def loops() -> Any:
    """The compiled loop (compiled at its first call)."""
    global _LOOPS
    if _LOOPS is None:
        _LOOPS = _build()
    return _LOOPS


def _build() -> Any:  # noqa: C901 - one closure so that numba compiles the helpers lazily
    import numba

    from .romma import RESIDUAL_SINGULAR

    def jit(fn: Any) -> Any:
        return _jit(numba, fn)

    def vec(fn: Any) -> Any:
        """Reductions compiled with reassociation allowed (LLVM vectorises them; the result
        is another rounding of the same sum).  Only ``reassoc``: NaN and infinity keep
        their IEEE meaning, so the loop's finiteness test stays valid."""
        try:
            return numba.njit(cache=True, nogil=True, error_model="numpy",
                              fastmath={"reassoc"})(fn)
        except RuntimeError:  # no writable cache location (fast._compiled._jit)
            return numba.njit(nogil=True, error_model="numpy", fastmath={"reassoc"})(fn)

    @vec
    def dense_dot(X: Any, j: int, w: Any, n: int) -> tuple[float, float]:
        """X[j].w and ||X[j]||^2 in one pass (the loop waits on memory: the norm is free)."""
        s = 0.0
        q = 0.0
        for k in range(n):
            x = X[j, k]
            s += x * w[k]
            q += x * x
        return s, q

    @vec
    def residual(X: Any, j: int, w: Any, n: int, r: float) -> float:
        """||w - r z||^2 with z = X[j] times the label folded into r."""
        s = 0.0
        for k in range(n):
            d = w[k] - r * X[j, k]
            s += d * d
        return s

    @vec
    def move(X: Any, j: int, w: Any, n: int, eta: float, step: float) -> float:
        """w <- eta w + step X[j]; returns the new ||w||^2."""
        s = 0.0
        for k in range(n):
            wk = eta * w[k] + step * X[j, k]
            w[k] = wk
            s += wk * wk
        return s

    @vec
    def norm2(w: Any) -> float:
        s = 0.0
        for k in range(w.shape[0]):
            s += w[k] * w[k]
        return s

    @jit
    def scale(w: Any, eta: float) -> None:
        for k in range(w.shape[0]):
            w[k] *= eta

    @vec
    def sparse_residual(w: Any, zbuf: Any, r: float) -> float:
        s = 0.0
        for k in range(w.shape[0]):
            d = w[k] - r * zbuf[k]
            s += d * d
        return s

    @jit
    def romma_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                     epochs: int, threshold: float, w: Any, zbuf: Any, state: Any,
                     mistakes: Any, updates: Any, scores: Any, record: bool) -> int:
        """state = [last updated example, bad score, mistakes, updates]; w the start (0
        for a run), zbuf n zeros (CSR: the dense z of the residual); the trials of the
        mistakes and updates are written to the front of ``mistakes`` and ``updates``.
        Returns the first trial with a score that is not finite, or -1."""
        T = y.shape[0]
        n = w.shape[0]
        last = int(state[0])
        vv = norm2(w)
        nm = 0
        nu = 0
        for e in range(epochs):
            base = e * T
            for j in range(T):
                t = base + j
                zz = 0.0
                if sparse:
                    s = 0.0  # a gather: in order (no vector form to gain)
                    for k in range(indptr[j], indptr[j + 1]):
                        s += data[k] * w[indices[k]]
                else:
                    s, zz = dense_dot(X, j, w, n)
                if not math.isfinite(s):
                    state[0] = last
                    state[1] = s
                    state[2] = nm
                    state[3] = nu
                    return t
                if record:
                    scores[t] = s
                label = y[j]
                margin = label * s
                if margin <= 0:
                    mistakes[nm] = t
                    nm += 1
                if margin < threshold and j != last:
                    # problem (2) with z = y x, c = 1 (fast.romma.step2)
                    if sparse:
                        for k in range(indptr[j], indptr[j + 1]):
                            zz += data[k] * data[k]
                    vz = margin
                    feasible = zz > 0.0
                    lam = 0.0
                    eta = 0.0
                    if feasible:
                        if vv == 0.0 or vz >= zz * vv:  # case (i), eq. (15)
                            lam = 1.0 / zz
                        else:                            # case (ii), eq. (19)
                            r = vz / zz
                            if sparse:
                                for k in range(indptr[j], indptr[j + 1]):
                                    zbuf[indices[k]] = data[k]
                                res = sparse_residual(w, zbuf, r * label)
                                for k in range(indptr[j], indptr[j + 1]):
                                    zbuf[indices[k]] = 0.0
                            else:
                                res = residual(X, j, w, n, r * label)
                            det = zz * res
                            if det <= RESIDUAL_SINGULAR * zz * vv:
                                feasible = False
                            else:
                                lam = vv * (1.0 - vz) / det
                                eta = (zz * vv - vz) / det
                    if feasible:
                        updates[nu] = t
                        nu += 1
                        step = lam * label
                        if sparse:
                            if eta != 1.0:
                                scale(w, eta)
                            for k in range(indptr[j], indptr[j + 1]):
                                w[indices[k]] += step * data[k]
                            vv = norm2(w)
                        else:
                            vv = move(X, j, w, n, eta, step)
                        last = j
        state[0] = last
        state[2] = nm
        state[3] = nu
        return -1

    class Loops:
        pass

    out = Loops()
    out.romma_primal = romma_primal  # type: ignore[attr-defined]
    return out
