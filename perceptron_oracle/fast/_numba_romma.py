"""ROMMA's compiled loops (numba): the primal per-trial loop and the walk over a block of
kernel values of the kernel dual.  The front is ``fast._compiled_romma`` (the caller
``fast.romma``); the closed forms (15)/(19) and the kernel blocks are ``fast._numba``'s, the
state slots ``fast._slots``' ``ROMMA_*`` and ``ROMMA_DUAL_*``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._flags import MISTAKE, UPDATE
from ._numba import (
    case_two,
    dual_block_base,
    dual_block_column,
    jit,
    kernel_value,
    norm2,
    row_dot,
    scale,
    sparse_dot,
    sparse_residual,
    step_case,
)
from ._slots import (
    KERNEL_COEF0,
    KERNEL_DEGREE,
    KERNEL_GAMMA,
    KERNEL_KIND,
    ROMMA_BAD_SCORE,
    ROMMA_DUAL_BAD_SCORE,
    ROMMA_DUAL_LAST,
    ROMMA_DUAL_MAX_FOLDS,
    ROMMA_DUAL_NEXT,
    ROMMA_DUAL_REFRESH,
    ROMMA_DUAL_STALE,
    ROMMA_DUAL_SUPPORTS,
    ROMMA_DUAL_VV,
    ROMMA_LAST,
    ROMMA_MISTAKES,
    ROMMA_UPDATES,
)

# -- the primal loop ------------------------------------------------------------------------------

@jit
def romma_sparse_update(indptr: Any, indices: Any, data: Any, j: int, label: float,
                        vz: float, vv: float, w: Any, zbuf: Any,
                        singular: float) -> tuple[bool, float]:
    """``romma_dense_update`` for CSR X: ||z||^2 over the stored entries; the residual
    with z scattered into zbuf (cleared after); w rescaled, the row added, ||w||^2."""
    lo, hi = indptr[j], indptr[j + 1]
    zz = 0.0
    for k in range(lo, hi):
        zz += data[k] * data[k]
    case = step_case(1.0, zz, vz, vv)
    if case == 0:
        return False, vv
    lam, eta = 1.0 / zz, 0.0
    if case == 2:
        r = vz / zz
        for k in range(lo, hi):
            zbuf[np.uintp(indices[k])] = data[k]
        res = sparse_residual(w, zbuf, r * label)
        for k in range(lo, hi):
            zbuf[np.uintp(indices[k])] = 0.0
        feasible, lam, eta = case_two(1.0, zz, vz, vv, res, singular)
        if not feasible:
            return False, vv
    if eta != 1.0:
        scale(w, eta)
    step = lam * label
    for k in range(lo, hi):
        w[np.uintp(indices[k])] += step * data[k]
    return True, norm2(w)


@jit(reassoc=True)
def romma_dense_update(X: Any, j: int, label: float, vz: float, vv: float, w: Any,
                       singular: float) -> tuple[bool, float]:
    """Problem (2) with z = y x_j, c = 1 (``fast.maximum_margin.step2``; vz the margin
    y w.x_j, D in the residual form ||z||^2 ||v - (v.z/||z||^2) z||^2) and, when feasible,
    w <- eta w + lambda z, for dense X: the passes (||z||^2, the residual in case (ii), the
    move with the new ||w||^2) written out in one function with its sums reassociated
    (measured faster than the same passes as separate helpers).  Returns (feasible, the new
    ||w||^2)."""
    n = w.shape[0]
    zz = 0.0
    for k in range(n):
        zz += X[j, k] * X[j, k]
    case = step_case(1.0, zz, vz, vv)
    if case == 0:
        return False, vv
    lam, eta = 1.0 / zz, 0.0
    if case == 2:
        r = vz / zz * label
        res = 0.0
        for k in range(n):
            d = w[k] - r * X[j, k]
            res += d * d
        feasible, lam, eta = case_two(1.0, zz, vz, vv, res, singular)
        if not feasible:
            return False, vv
    step = lam * label
    ww = 0.0
    for k in range(n):
        wk = eta * w[k] + step * X[j, k]
        w[k] = wk
        ww += wk * wk
    return True, ww


@jit
def romma_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                 epochs: int, threshold: float, singular: float, w: Any, zbuf: Any,
                 state: Any, mistakes: Any, updates: Any, scores: Any, record: bool) -> int:
    """state: ``fast._slots``' ROMMA_LAST, _BAD_SCORE, _MISTAKES, _UPDATES; w the start (0 for a
    run), zbuf n zeros (CSR: the dense z of the residual); ``singular`` is
    ``fast.maximum_margin.RESIDUAL_SINGULAR``.  The trials of the mistakes and updates are
    written to the front of ``mistakes`` and ``updates``.  Returns the first trial with a
    score that is not finite, or -1.  A dense row's score is ``row_dot`` (a vectorised sum).
    The trial's record is written here: an inlined helper taking the arrays kept their
    locked reference counts, four a trial (``pumma_primal``)."""
    T = y.shape[0]
    last = int(state[ROMMA_LAST])
    vv = norm2(w)
    nm = 0
    nu = 0
    t = -1
    for _ in range(epochs):
        for j in range(T):
            t += 1
            if sparse:  # a gather: in order (no vector form to gain)
                s = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
            else:
                s = row_dot(X, j, w)
            if not math.isfinite(s):
                state[ROMMA_LAST], state[ROMMA_BAD_SCORE] = last, s
                state[ROMMA_MISTAKES], state[ROMMA_UPDATES] = nm, nu
                return t
            if record:
                scores[t] = s
            label = y[j]
            margin = label * s
            mistakes[nm] = t             # kept only when counted: no branch to mispredict
            nm += margin <= 0
            if margin < threshold and j != last:
                if sparse:
                    feasible, vv = romma_sparse_update(indptr, indices, data, j, label,
                                                       margin, vv, w, zbuf, singular)
                else:
                    feasible, vv = romma_dense_update(X, j, label, margin, vv, w, singular)
                if feasible:
                    updates[nu] = t
                    nu += 1
                    last = j
    state[ROMMA_LAST], state[ROMMA_MISTAKES], state[ROMMA_UPDATES] = last, nm, nu
    return -1


# -- the kernel dual's block walk -----------------------------------------------------------------

@jit
def romma_dual_step(zz: float, vz: float, vv: float, singular: float
                    ) -> tuple[int, float, float]:
    """Problem (2) with z = y x_j, c = 1 from kernel values (``fast.maximum_margin.step2``
    without the residual, as ``DualSpace`` calls it): (0 infeasible / 1 case (i), eq. (15) /
    2 case (ii), eq. (19), lambda, eta).  Infeasible: ||z||^2 = k(x_j, x_j) <= 0, or in case
    (ii) D = ||z||^2 ||v||^2 - (v.z)^2 <= ``singular`` ||z||^2 ||v||^2
    (``fast.maximum_margin.SINGULAR``).  Evaluated as written (no reassociation)."""
    case = step_case(1.0, zz, vz, vv)
    if case == 0:
        return 0, 0.0, 0.0
    if case == 1:
        return 1, 1.0 / zz, 0.0
    det = zz * vv - vz * vz
    if det <= singular * zz * vv:
        return 0, 0.0, 0.0
    return 2, vv * (1.0 - vz) / det, (zz * vv - vz) / det


@jit
def romma_dual_enter(X: Any, sq: Any, j: int, drop: bool, slot: Any, rows: Any, sq_rows: Any,
                     coef: Any, sup: Any, S: int) -> int:
    """Example j into the support (row, squared norm, coefficient 0, its position in
    ``slot``) unless it is in it; ``drop``: the support is emptied first (case (i):
    eta = 0 sets every old coefficient to 0, so the old examples leave it).  ``sup`` holds
    the examples by position.  Returns the support's size."""
    if drop:
        for s in range(S):
            slot[sup[s]] = -1
        S = 0
    if slot[j] < 0:
        slot[j] = S
        rows[S] = X[j]
        sq_rows[S] = sq[j]
        sup[S] = j
        coef[S] = 0.0
        S += 1
    return S


@jit
def romma_dual_fold(X: Any, sq: Any, j: int, lo: int, hi: int, Kt: Any, row: int, kind: int,
                    degree: int, gamma: float, coef0: float, step: float, eta: float,
                    base: Any) -> None:
    """The scores of the block's trials after j under w' = eta w + step phi(x_j):
    base[i - lo] <- eta base[i - lo] + step k(x_j, x_i), i = j+1 .. hi-1; the kernel values
    are Kt's row ``row`` when x_j was a support at the block's start, else computed here
    (``dual_block_column``)."""
    if eta != 1.0:
        for i in range(j + 1 - lo, hi - lo):
            base[i] *= eta
    if row >= 0:
        column = Kt[row]
        for i in range(j + 1 - lo, hi - lo):
            base[i] += step * column[i]
    else:
        dual_block_column(X, sq, j, lo, hi, kind, degree, gamma, coef0, step, base)


@jit
def romma_dual_update(X: Any, sq: Any, j: int, label: float, margin: float, vv: float,
                      kernel: Any, singular: float, slot: Any, rows: Any, sq_rows: Any,
                      coef: Any, sup: Any, S: int) -> tuple[int, int, float, float, float]:
    """The update test's problem at trial j (v.z = the margin y s, ||v||^2 = vv) and, when
    feasible, the coefficients a <- eta a + lambda y_j e_j (``DualSpace.apply``) and
    ||w'||^2 = lambda (lambda ||z||^2 + eta v.z) + eta (lambda v.z + eta ||v||^2).
    ``kernel`` = (kind, degree, gamma, coef0) as floats.  Returns (case, S, the new ||w||^2,
    lambda, eta); case 0 leaves everything as it was."""
    kind, degree = int(kernel[KERNEL_KIND]), int(kernel[KERNEL_DEGREE])
    zz = kernel_value(kind, degree, kernel[KERNEL_GAMMA], kernel[KERNEL_COEF0], sq[j], sq[j],
                      sq[j])
    case, lam, eta = romma_dual_step(zz, margin, vv, singular)
    if case == 0:
        return 0, S, vv, 0.0, 0.0
    S = romma_dual_enter(X, sq, j, case == 1, slot, rows, sq_rows, coef, sup, S)
    if case == 2:
        for s in range(S):
            coef[s] *= eta
    coef[slot[j]] += lam * label
    vv = lam * (lam * zz + eta * margin) + eta * (lam * margin + eta * vv)
    return case, S, vv, lam, eta


@jit
def romma_dual_block(X: Any, sq: Any, y: Any, lo: int, hi: int, t0: int, Kt: Any, krow: Any,
                     base: Any, kernel: Any, threshold: float, singular: float,
                     limits: Any, slot: Any, rows: Any, sq_rows: Any, coef: Any, sup: Any,
                     state: Any, flags: Any, scores: Any, record: bool) -> int:
    """ROMMA's dual over the examples lo .. hi-1 of one epoch (trial t0 + j for example j): the
    score of example i starts as sum_s coef_s Kt[s, i - lo] over the S0 =
    state[ROMMA_DUAL_SUPPORTS] supports of the block's start (Kt[s] = k(x_s, X[lo:hi]); krow[i -
    lo] is example i's row of Kt or -1), and each update folds into the later trials' scores
    (``romma_dual_fold``).  Mistake iff y s <= 0; update iff y s < threshold, j is not the last
    updated example (Lemma 4) and the problem is feasible (``romma_dual_update``).  The walk stops
    after the update that makes limits[ROMMA_DUAL_MAX_FOLDS] updates in this block, or
    limits[ROMMA_DUAL_REFRESH] and S updates since ||v||^2 was last fresh (the caller recomputes
    it; case (i) computes it afresh).  state: ``fast._slots``' ROMMA_DUAL_LAST (the last updated
    example), _BAD_SCORE, _SUPPORTS (S), _VV (||v||^2), _NEXT (the example after the walk's last),
    _STALE (updates since ||v||^2 was fresh).  Returns the first trial with a score that is not
    finite, or -1."""
    last, S = int(state[ROMMA_DUAL_LAST]), int(state[ROMMA_DUAL_SUPPORTS])
    vv, stale = state[ROMMA_DUAL_VV], int(state[ROMMA_DUAL_STALE])
    kind, degree = int(kernel[KERNEL_KIND]), int(kernel[KERNEL_DEGREE])
    gamma, coef0 = kernel[KERNEL_GAMMA], kernel[KERNEL_COEF0]
    dual_block_base(Kt, coef, S, base)
    folds = 0
    for j in range(lo, hi):
        t = t0 + j
        s = base[j - lo]
        if not math.isfinite(s):
            state[ROMMA_DUAL_LAST], state[ROMMA_DUAL_BAD_SCORE] = last, s
            state[ROMMA_DUAL_SUPPORTS], state[ROMMA_DUAL_VV] = S, vv
            state[ROMMA_DUAL_STALE] = stale
            return t
        if record:
            scores[t] = s
        label = y[j]
        margin = label * s
        f = MISTAKE if margin <= 0.0 else 0
        if margin < threshold and j != last:
            case, S, vv, lam, eta = romma_dual_update(X, sq, j, label, margin, vv, kernel,
                                                      singular, slot, rows, sq_rows, coef,
                                                      sup, S)
            if case > 0:
                romma_dual_fold(X, sq, j, lo, hi, Kt, krow[j - lo], kind, degree, gamma,
                                coef0, lam * label, eta, base)
                f |= UPDATE
                last, folds = j, folds + 1
                stale = 0 if case == 1 else stale + 1
                if (folds >= limits[ROMMA_DUAL_MAX_FOLDS]
                        or stale >= max(limits[ROMMA_DUAL_REFRESH], S)):
                    flags[t] = f
                    hi = j + 1
                    break
        flags[t] = f
    state[ROMMA_DUAL_LAST], state[ROMMA_DUAL_SUPPORTS] = last, S
    state[ROMMA_DUAL_VV], state[ROMMA_DUAL_NEXT] = vv, hi
    state[ROMMA_DUAL_STALE] = stale
    return -1
