"""The compiled loops (numba) around in-place level-2 BLAS of HO_2's primal (``ho_primal``),
HO_p's implicit form with B_k explicit for p != 2 (``ho_explicit_b``) and SOP's primal
(``sop_primal``).  The callers are ``fast.higher_order`` and ``fast.second_order``; the loops
return their state as tuples (no state array).  g is ``fast._numba.link_inverse``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._numba import jit, link_inverse

# -- shared pieces --------------------------------------------------------------------------------
# Level-2 BLAS through scipy's ``cython_blas`` (``fast.higher_order.blas_pointers``), passed in
# as arguments: a ctypes routine read as a global would be a constant address, which numba
# does not cache (it differs from process to process); an argument is read at each call.

@jit(inline=True)
def blas_layout(n: int, lda: int) -> tuple[Any, Any]:
    """The integer arguments (n, inc = 1, lda) and uplo = 'U' of the level-2 calls."""
    return np.array([n, 1, lda], dtype=np.int32), np.array([85], dtype=np.uint8)


@jit(inline=True)
def example_score(X: Any, y: Any, t: int, w: Any) -> tuple[Any, float, float]:
    """Trial t's example (cycling through X), its label and its score x . w."""
    j = t % X.shape[0]
    x = X[j]
    return x, y[j], np.dot(x, w)


@jit
def ho_mistake(t: int, k: int, count: int, x: Any, label: float, v: Any, out: Any, rhos: Any,
               mode: int, c: float, sparse: bool) -> tuple[int, int, float]:
    """The k-th mistake (k counted here) at trial t: rho_k (SPEC.md 12.2: mode 0 c/k, 1
    (1 - c)/(1 + |v.x|) (Theorem 1), 2 the constant c; 0 under the sparse variant when
    y v.x < 0) from v before the update, the trial and rho recorded, v += y x.  Returns
    (k, mistakes recorded, rho)."""
    k += 1
    vx = np.dot(v, x)
    if sparse and label * vx < 0:
        rho = 0.0
    elif mode == 0:
        rho = c / k
    elif mode == 1:
        rho = (1.0 - c) / (1.0 + abs(vx))
    else:
        rho = c
    out[count] = t
    rhos[count] = rho
    for i in range(v.shape[0]):
        v[i] += label * x[i]
    return k, count + 1, rho


# -- HO_2's and SOP's primal forms (fast.higher_order, fast.second_order) -------------------------

@jit
def ho_primal(X: Any, y: Any, t: int, t_end: int, limit: int, k: int, mode: int, c: float,
              sparse: bool, A: Any, v: Any, w: Any, a: Any, out: Any, rhos: Any, dsymv: Any,
              dsyr2: Any) -> tuple[int, int, int]:
    """Trials t .. t_end-1 of HO_2 primal (section 12.7.1), stopping after ``limit``
    mistakes.  Returns (next trial, mistakes recorded, 1 if a score was not finite)."""
    n = X.shape[1]
    ints, uplo = blas_layout(n, A.shape[0])
    count = 0
    scal = np.zeros(2)                                        # alpha, beta
    while t < t_end:
        x, label, s = example_score(X, y, t, w)
        if not np.isfinite(s):
            return t, count, 1
        if label * s <= 0.0:
            k, count, rho = ho_mistake(t, k, count, x, label, v, out, rhos, mode, c, sparse)
            if rho != 0.0:
                scal[0] = 1.0
                dsymv(uplo.ctypes, ints.ctypes, scal.ctypes, A.ctypes, ints[2:].ctypes,
                      x.ctypes, ints[1:].ctypes, scal[1:].ctypes, a.ctypes,
                      ints[1:].ctypes)
                half = 0.5 * rho * np.dot(x, a)
                for i in range(n):
                    a[i] -= half * x[i]
                scal[0] = -rho
                dsyr2(uplo.ctypes, ints.ctypes, scal.ctypes, x.ctypes, ints[1:].ctypes,
                      a.ctypes, ints[1:].ctypes, A.ctypes, ints[2:].ctypes)
            scal[0] = 1.0
            dsymv(uplo.ctypes, ints.ctypes, scal.ctypes, A.ctypes, ints[2:].ctypes,
                  v.ctypes, ints[1:].ctypes, scal[1:].ctypes, w.ctypes, ints[1:].ctypes)
            if count == limit:
                return t + 1, count, 0
        t += 1
    return t, count, 0


@jit
def sop_primal(X: Any, y: Any, t: int, t_end: int, limit: int, Ainv: Any, v: Any, u: Any,
               z: Any, probe: Any, Cp: Any, out: Any, dsymv: Any, dsyr: Any
               ) -> tuple[int, int, int]:
    """Trials t .. t_end-1, stopping after ``limit`` mistakes: score x.u, and at a mistake
    the primal update (dsymv, dsyr, v, C p, dsymv).  Returns (next trial, mistakes, 1 if a
    score was not finite)."""
    n = X.shape[1]
    ints, uplo = blas_layout(n, Ainv.shape[0])
    scal = np.array([1.0, 0.0, 0.0])                          # 1, beta = 0, alpha
    count = 0
    while t < t_end:
        x, label, s = example_score(X, y, t, u)
        if not np.isfinite(s):
            return t, count, 1
        if label * s <= 0.0:
            out[count] = t
            count += 1
            dsymv(uplo.ctypes, ints.ctypes, scal.ctypes, Ainv.ctypes,
                  ints[2:].ctypes, x.ctypes, ints[1:].ctypes, scal[1:].ctypes,
                  z.ctypes, ints[1:].ctypes)
            scal[2] = -1.0 / (1.0 + np.dot(x, z))
            dsyr(uplo.ctypes, ints.ctypes, scal[2:].ctypes, z.ctypes,
                 ints[1:].ctypes, Ainv.ctypes, ints[2:].ctypes)
            xp = np.dot(x, probe)
            for i in range(n):
                v[i] += label * x[i]
                Cp[i] += xp * x[i]
            if count == limit:
                return t + 1, count, 0
            dsymv(uplo.ctypes, ints.ctypes, scal.ctypes, Ainv.ctypes,
                  ints[2:].ctypes, v.ctypes, ints[1:].ctypes, scal[1:].ctypes,
                  u.ctypes, ints[1:].ctypes)
        t += 1
    return t, count, 0


# -- HO_p's explicit B_k for p != 2 (fast.higher_order, the implicit form) ------------------------

@jit
def ho_explicit_b(X: Any, y: Any, t: int, t_end: int, limit: int, k: int, mode: int, c: float,
                  sparse: bool, p: float, B: Any, v: Any, w: Any, work: Any, out: Any,
                  rhos: Any, dgemv: Any, dger: Any) -> tuple[int, int, int]:
    """Trials t .. t_end-1 of HO_p with B_k kept explicitly (p != 2: the implicit form's
    explicit representation, section 12.7.3), stopping after ``limit`` mistakes: score
    x . w; at a mistake rho (as ``ho_primal``), v += y x, B <- B - rho (B x) g(x)^T
    (dgemv, dger) if rho != 0, and w = B^T g(B v) (two dgemv); g is the p-norm
    Perceptron's ``link_inverse`` (its powers by products: SPEC.md 12.7.3).  B is n x n in
    Fortran order; ``work`` (4 x n) is scratch.
    Returns (next trial, mistakes recorded, 1 if a score was not finite)."""
    n = X.shape[1]
    ints = np.array([n, 1, B.shape[0]], dtype=np.int32)      # n, inc = 1, lda
    trans = np.array([78, 84], dtype=np.uint8)                # 'N', 'T'
    scal = np.array([1.0, 0.0, 0.0])                          # 1, beta = 0, -rho
    bx, gx, theta, gt = work[0], work[1], work[2], work[3]
    count = 0
    while t < t_end:
        x, label, s = example_score(X, y, t, w)
        if not np.isfinite(s):
            return t, count, 1
        if label * s <= 0.0:
            k, count, rho = ho_mistake(t, k, count, x, label, v, out, rhos, mode, c, sparse)
            if rho != 0.0:
                dgemv(trans.ctypes, ints.ctypes, ints.ctypes, scal.ctypes, B.ctypes,
                      ints[2:].ctypes, x.ctypes, ints[1:].ctypes, scal[1:].ctypes,
                      bx.ctypes, ints[1:].ctypes)
                link_inverse(x, p, gx)
                scal[2] = -rho
                dger(ints.ctypes, ints.ctypes, scal[2:].ctypes, bx.ctypes, ints[1:].ctypes,
                     gx.ctypes, ints[1:].ctypes, B.ctypes, ints[2:].ctypes)
            dgemv(trans.ctypes, ints.ctypes, ints.ctypes, scal.ctypes, B.ctypes,
                  ints[2:].ctypes, v.ctypes, ints[1:].ctypes, scal[1:].ctypes,
                  theta.ctypes, ints[1:].ctypes)
            link_inverse(theta, p, gt)
            dgemv(trans[1:].ctypes, ints.ctypes, ints.ctypes, scal.ctypes, B.ctypes,
                  ints[2:].ctypes, gt.ctypes, ints[1:].ctypes, scal[1:].ctypes,
                  w.ctypes, ints[1:].ctypes)
            if count == limit:
                return t + 1, count, 0
        t += 1
    return t, count, 0
