"""PUMMA's compiled loops (numba): the primal per-trial loop for p = 2 (hard and soft
margin), the damped Newton on the dual (18) for p > 2 (``fast.pumma.PNormSpace``'s compiled
solver) and the per-trial loop for p > 2.  The front is ``fast._compiled_pumma`` (the caller
``fast.pumma``); the shared helpers are ``fast._numba``'s, the state slots ``fast._slots``'
``PUMMA_*`` and ``PUMMA_PNORM_*``, the constants the p > 2 loop reads ``PUMMA_CONST_*``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._flags import TINY_SQUARES
from ._numba import (
    case_two,
    dense_dot,
    jit,
    link_inverse,
    norm2,
    row_dot,
    sparse_dot,
    sparse_residual,
    step_case,
    whole_power,
)
from ._slots import (
    PUMMA_ALPHA,
    PUMMA_B,
    PUMMA_BAD_SCORE,
    PUMMA_BETA,
    PUMMA_CONST_CASE_TIE,
    PUMMA_CONST_NEWTON_MAX_STEPS,
    PUMMA_CONST_NEWTON_STOP,
    PUMMA_CONST_NEWTON_TOLERANCE,
    PUMMA_CONST_RESIDUAL_SINGULAR,
    PUMMA_CONST_SINGULAR,
    PUMMA_HELD,
    PUMMA_LAST0,
    PUMMA_LAST1,
    PUMMA_MISTAKES,
    PUMMA_NEG,
    PUMMA_PENDING_NEG,
    PUMMA_PENDING_POS,
    PUMMA_PENDING_TRIAL,
    PUMMA_POS,
    PUMMA_SS,
    PUMMA_TARGET,
    PUMMA_TT,
    PUMMA_UPDATES,
    PUMMA_VS,
    PUMMA_ZS,
)

# -- p = 2: the pair's passes, the slack parts and the primal loop --------------------------------

@jit(reassoc=True)
def dense_pair(X: Any, pos: int, neg: int, w: Any, z: Any) -> tuple[float, float]:
    """z = x_pos - x_neg in place for dense X, and ||z||^2 and w.z: one loop (see
    ``pumma_primal`` for why its update calls single-loop helpers)."""
    zz = 0.0
    wz = 0.0
    for k in range(w.shape[0]):
        zk = X[pos, k] - X[neg, k]
        z[k] = zk
        zz += zk * zk
        wz += w[k] * zk
    return zz, wz


@jit(reassoc=True)
def dense_move(X: Any, pos: int, neg: int, w: Any, z: Any, eta: float,
               lam: float) -> tuple[float, float, float]:
    """w <- eta w + lam z in place for dense X; returns the new ||w||^2, x_pos.w and
    x_neg.w: one loop, as ``dense_pair``."""
    ww = 0.0
    wp = 0.0
    wn = 0.0
    for k in range(w.shape[0]):
        wk = eta * w[k] + lam * z[k]
        w[k] = wk
        ww += wk * wk
        wp += X[pos, k] * wk
        wn += X[neg, k] * wk
    return ww, wp, wn


@jit(reassoc=True)
def pair_products(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, pos: int,
                  neg: int, w: Any, z: Any) -> tuple[float, float]:
    """z = x_pos - x_neg in place (CSR: both rows scattered into zeros, as
    ``fast.maximum_margin.PrimalSpace.pair`` forms it), and ||z||^2 and w.z."""
    if not sparse:
        return dense_pair(X, pos, neg, w, z)
    n = z.shape[0]
    zz = 0.0
    wz = 0.0
    for k in range(n):
        z[k] = 0.0
    for k in range(indptr[pos], indptr[pos + 1]):
        z[np.uintp(indices[k])] += data[k]
    for k in range(indptr[neg], indptr[neg + 1]):
        z[np.uintp(indices[k])] -= data[k]
    for k in range(n):
        zk = z[k]
        zz += zk * zk
        wz += w[k] * zk
    return zz, wz


@jit(reassoc=True)
def pair_move(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, pos: int, neg: int,
              w: Any, z: Any, eta: float, lam: float) -> tuple[float, float, float]:
    """w <- eta w + lam z in place; returns the new ||w||^2, x_pos.w and x_neg.w."""
    if not sparse:
        return dense_move(X, pos, neg, w, z, eta, lam)
    ww = 0.0
    for k in range(w.shape[0]):
        wk = eta * w[k] + lam * z[k]
        w[k] = wk
        ww += wk * wk
    return (ww, sparse_dot(data, indices, indptr[pos], indptr[pos + 1], w),
            sparse_dot(data, indices, indptr[neg], indptr[neg + 1], w))


@jit
def slack_norm(a: Any, held: Any, count: int, pos: int, neg: int, r: float) -> float:
    """||a - r (e_pos - e_neg)||^2 over the examples ``held[:count]`` (a is 0 elsewhere; the
    pair among them); r = 0: ||a||^2.  ``slack_scaled`` with k = 1 (the same floats; soft
    margin runs time alike)."""
    return slack_scaled(a, held, count, pos, neg, r, 1.0)


@jit
def slack_move(a: Any, held: Any, count: int, pos: int, neg: int, eta: float,
               lam: float) -> float:
    """a <- eta a + lam (e_pos - e_neg) over the held examples (the pair among them), in
    place; returns the new ||a||^2."""
    total = 0.0
    for i in range(count):
        e = held[i]
        v = a[e] * eta
        if e == pos:
            v += lam
        elif e == neg:
            v -= lam
        a[e] = v
        total += v * v
    return total


@jit
def slack_scaled(a: Any, held: Any, count: int, pos: int, neg: int, r: float,
                 k: float) -> float:
    """||k a - r (e_pos - e_neg)||^2 over the held examples, k a power of two (exact); no
    reassociation, which could fold k a into k^2 a^2 and underflow again."""
    total = 0.0
    for i in range(count):
        e = held[i]
        v = k * a[e]
        if e == pos:
            v -= r
        elif e == neg:
            v += r
        total += v * v
    return total


@jit
def slack_over_c(a: Any, held: Any, count: int, pos: int, neg: int, r: float,
                 inv_c: float, plain: float) -> float:
    """||a - r (e_pos - e_neg)||^2 / C from ``plain``, that sum of squares as summed
    (``slack_norm``, ``slack_move``): plain / C, or below ``TINY_SQUARES`` summed again as
    ||s (a - r E)||^2 c, (s, c) = ``fast.maximum_margin.slack_root(1/C)`` (s ~ 1/sqrt(C) a
    power of two, exact): a = C y xi is of C's size, and below C ~ 1e-154 its squares underflow
    where the result does not (C = 1e-170: ||v~||^2 = 0, case (i) at every update)."""
    if plain >= TINY_SQUARES:
        return plain * inv_c
    s = math.ldexp(1.0, math.frexp(inv_c)[1] // 2)
    return slack_scaled(a, held, count, pos, neg, s * r, s) * (inv_c / (s * s))


@jit(inline=True)
def hold(e: int, held: Any, mark: Any, count: int) -> int:
    """Example e among the held examples (those whose a_e may be nonzero); the new count."""
    if not mark[e]:
        mark[e] = True
        held[count] = e
        return count + 1
    return count


@jit(inline=True)
def pumma_step(zz: float, vz: float, vv: float, w: Any, z: Any, a: Any, held: Any,
               count: int, pos: int, neg: int, inv_c: float, soft: bool,
               singular: float) -> tuple[bool, float, float]:
    """Problem (3) (or (24)) for p = 2 (``fast.maximum_margin.step2`` with c = 2, D in the
    residual form of the augmented vectors): (feasible, lambda, eta)."""
    case = step_case(2.0, zz, vz, vv)
    if case < 2:
        return case == 1, 2.0 / zz if case == 1 else 0.0, 0.0
    r = vz / zz
    res = sparse_residual(w, z, r)
    if soft:
        plain = slack_norm(a, held, count, pos, neg, r)
        res += slack_over_c(a, held, count, pos, neg, r, inv_c, plain)
    return case_two(2.0, zz, vz, vv, res, singular)


@jit
def pumma_pair_update(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, pos: int,
                      neg: int, inv_c: float, soft: bool, singular: float, w: Any, z: Any,
                      a: Any, held: Any, mark: Any, count: int, vv: float
                      ) -> tuple[bool, float, float, int]:
    """The update for the pair (pos, neg) from the current w~ (||w~||^2 = vv): problem (3)
    solved, w (and a) moved in place, the bias (20).  Returns (feasible, b, the new
    ||w~||^2, the held count); nothing moves when infeasible."""
    zz, vz = pair_products(X, indptr, indices, data, sparse, pos, neg, w, z)
    if soft:
        count = hold(pos, held, mark, count)
        count = hold(neg, held, mark, count)
        zz += 2.0 * inv_c
        vz += (a[pos] - a[neg]) * inv_c
    feasible, lam, eta = pumma_step(zz, vz, vv, w, z, a, held, count, pos, neg, inv_c, soft,
                                    singular)
    if not feasible:
        return False, 0.0, vv, count
    vv, bp, bn = pair_move(X, indptr, indices, data, sparse, pos, neg, w, z, eta, lam)
    if soft:
        plain = slack_move(a, held, count, pos, neg, eta, lam)
        vv += slack_over_c(a, held, count, -1, -1, 0.0, inv_c, plain)
        bp += a[pos] * inv_c
        bn += a[neg] * inv_c
    return True, -0.5 * (bp + bn), vv, count


@jit
def hard_step(zz: float, vz: float, vv: float, w: Any, z: Any,
              singular: float) -> tuple[bool, float, float]:
    """``pumma_step`` for the hard margin, without the slack arrays (which would keep their
    reference counts, as ``pumma_primal`` says)."""
    case = step_case(2.0, zz, vz, vv)
    if case < 2:
        return case == 1, 2.0 / zz if case == 1 else 0.0, 0.0
    return case_two(2.0, zz, vz, vv, sparse_residual(w, z, vz / zz), singular)


@jit
def updates_at(j: int, label: float, margin: float, pos: int, neg: int,
               threshold: float) -> bool:
    """Whether trial j (label y_j, ``margin`` its y score + xi_j) updates, feasibility
    aside: with a pair stored iff margin < 1 - delta and j is not a pair member (Lemma 4:
    their test is exactly 1, skipped); at start-up iff it is its class's first example."""
    if pos >= 0 and neg >= 0:
        return margin < threshold and j != pos and j != neg
    return (label > 0 and pos < 0) or (label < 0 and neg < 0)


@jit
def pumma_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                 epochs: int, threshold: float, singular: float, inv_c: float, soft: bool,
                 w: Any, z: Any, a: Any, held: Any, mark: Any, state: Any, mistakes: Any,
                 updates: Any, scores: Any, record: bool) -> int:
    """state: ``fast._slots``' PUMMA_POS, _NEG, _B, _BAD_SCORE, _MISTAKES, _UPDATES, _HELD (pos,
    neg = -1: not stored); w, a (T entries, soft margin; else 1), held/mark the start (zeros, False
    for a run); z n scratch entries; ``singular``: ``fast.maximum_margin.RESIDUAL_SINGULAR``.
    Mistakes and updates (trials) go to the front of ``mistakes``, ``updates``.  Returns the first
    trial whose score (at start-up: row product with w = 0) is not finite, or -1. Arrays are used
    here or by one-loop helpers: numba keeps its locked reference counts on the arrays of an
    inlined helper (four a trial for one that wrote the trial's record) or of a function with
    several loops (``pumma_pair_update``: six a call) and prunes them elsewhere."""
    pos, neg = int(state[PUMMA_POS]), int(state[PUMMA_NEG])
    b, count = state[PUMMA_B], int(state[PUMMA_HELD])
    vv = norm2(w) + (slack_over_c(a, held, count, -1, -1, 0.0, inv_c, 0.0) if soft else 0.0)
    nm, nu, bad, t = 0, 0, -1, -1
    for _ in range(epochs):
        for j in range(y.shape[0]):
            t += 1
            label = y[j]
            started = pos >= 0 and neg >= 0
            if sparse:
                d = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
            else:
                d = row_dot(X, j, w)
            s = d + b if started else b  # start-up: the score is b (w = 0)
            if not math.isfinite(s if started else d):
                bad, state[PUMMA_BAD_SCORE] = t, (s if started else d)
                break
            if record:
                scores[t] = s
            margin = label * s
            mistakes[nm] = t             # kept only when counted: no branch to mispredict
            nm += margin <= 0
            if soft:
                margin = margin + label * (a[j] * inv_c)
            if not updates_at(j, label, margin, pos, neg, threshold):
                continue
            p, q = (j, neg) if label > 0 else (pos, j)
            feasible, b_new = True, 1.0 if p >= 0 else -1.0  # start-up: half a pair stored
            if p >= 0 and q >= 0 and (sparse or soft):
                feasible, b_new, vv, count = pumma_pair_update(
                    X, indptr, indices, data, sparse, p, q, inv_c, soft, singular, w, z, a,
                    held, mark, count, vv)
            elif p >= 0 and q >= 0:
                zz, vz = dense_pair(X, p, q, w, z)
                feasible, lam, eta = hard_step(zz, vz, vv, w, z, singular)
                if feasible:
                    vv, bp, bn = dense_move(X, p, q, w, z, eta, lam)
                    b_new = -0.5 * (bp + bn)
            if not feasible:
                continue
            b, pos, neg = b_new, p, q
            updates[nu] = t
            nu += 1
        if bad >= 0:
            break
    state[PUMMA_POS], state[PUMMA_NEG], state[PUMMA_B] = pos, neg, b
    state[PUMMA_MISTAKES], state[PUMMA_UPDATES], state[PUMMA_HELD] = nm, nu, count
    return bad


# -- p > 2: the damped Newton on the dual (18) (fast.pumma.PNormSpace) ----------------------------

@jit(reassoc=True)
def pumma_phi_sums(x0: float, x1: float, z: Any, theta: Any, p: float, sums: Any) -> float:
    """The sums over i of phi = x0 z + x1 theta that the dual (18), its gradient and its
    Hessian read, on s = phi / m, m = max|phi_i| (returned; NaN if a phi_i is): with
    a = |s|, sums = [sum a^p, z.F, theta.F, sum a^(p-2) z z, sum a^(p-2) z theta,
    sum a^(p-2) theta theta, |z|.|F|, |theta|.|F|], F_i = sign(s_i) a_i^(p-1) (f^{-1}(s)
    times ||s||_p^(p-2), Lemma 3).  An integer p - 2 up to 6 takes its power by products
    (``whole_power``: no inner loop, the sums vectorise)."""
    n = z.shape[0]
    m = 0.0
    for i in range(n):
        a = abs(x0 * z[i] + x1 * theta[i])
        if a > m or math.isnan(a):
            m = a
    e = p - 2.0
    whole = int(e) if e == math.floor(e) and e <= 6.0 else 0
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    if m != 0.0:
        for i in range(n):
            s = (x0 * z[i] + x1 * theta[i]) / m
            a = abs(s)
            pw = whole_power(a, whole) if whole else a ** e
            g = pw * a
            f = math.copysign(g, s)
            zi, ti = z[i], theta[i]
            s0 += g * a
            s1 += zi * f
            s2 += ti * f
            s3 += pw * zi * zi
            s4 += pw * zi * ti
            s5 += pw * ti * ti
            s6 += abs(zi) * g
            s7 += abs(ti) * g
    sums[0], sums[1], sums[2], sums[3] = s0, s1, s2, s3
    sums[4], sums[5], sums[6], sums[7] = s4, s5, s6, s7
    return m


@jit
def pumma_dual_value(x0: float, x1: float, z: Any, theta: Any, p: float, zs: float,
                     vs: float, ss: float, target: float, sums: Any) -> float:
    """L*(x0, x1) = -||phi||_p^2 / 2 - x S x / 2 + 2 x0 + target x1 (eq. (18) with the soft
    margin's slack part, S = [[zs, vs], [vs, ss]]); ``fast.pumma.PNormSpace._dual_value``."""
    m = pumma_phi_sums(x0, x1, z, theta, p, sums)
    norm = m * sums[0] ** (1.0 / p) if m > 0.0 else 0.0
    quad = (x0 * zs + x1 * vs) * x0 + (x0 * vs + x1 * ss) * x1
    return -0.5 * norm * norm - 0.5 * quad + (2.0 * x0 + target * x1)


@jit
def pumma_newton_step(x0: float, x1: float, z: Any, theta: Any, p: float, zs: float,
                      vs: float, ss: float, target: float, singular: float, sums: Any
                      ) -> tuple[bool, float, float]:
    """Newton's step at (x0, x1) with the exact 2 x 2 Hessian of the dual, (True, step), or
    (False, 0, 0) where the Hessian is singular (or not finite): ``PNormSpace._direction``
    (gradient rhs - A f^{-1}(phi) - S x; Hessian A diag((p-1) a^(p-2) / N^(p-2)) A^T
    - (p-2) (A F)(A F)^T / N^2 + S, N = ||s||_p, A F over N^(p-2))."""
    m = pumma_phi_sums(x0, x1, z, theta, p, sums)
    norm = sums[0] ** (1.0 / p) if m > 0.0 else 1.0
    lift = norm ** (p - 2.0)
    af0, af1 = sums[1] / lift, sums[2] / lift
    g0 = 2.0 - m * af0 - (zs * x0 + vs * x1)
    g1 = target - m * af1 - (vs * x0 + ss * x1)
    c = (p - 1.0) / lift
    k = (p - 2.0) / (norm * norm)
    h00 = c * sums[3] - k * af0 * af0 + zs
    h01 = c * sums[4] - k * af0 * af1 + vs
    h11 = c * sums[5] - k * af1 * af1 + ss
    det = h00 * h11 - h01 * h01
    if not det > singular * abs(h00 * h11) or not math.isfinite(det):
        return False, 0.0, 0.0
    return True, (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det


@jit
def pumma_line_search(x0: float, x1: float, value: float, d0: float, d1: float, z: Any,
                      theta: Any, p: float, zs: float, vs: float, ss: float, target: float,
                      sums: Any) -> tuple[float, float, float]:
    """Backtracking from the full step: the candidate and its dual value
    (``PNormSpace._line_search``: accepted when it loses no more than 1e-14 relative, or
    once t < 1e-6)."""
    t = 1.0
    while True:
        c0, c1 = x0 + t * d0, x1 + t * d1
        value_c = pumma_dual_value(c0, c1, z, theta, p, zs, vs, ss, target, sums)
        if value_c >= value - 1e-14 * abs(value) or t < 1e-6:
            return c0, c1, value_c
        t *= 0.5


@jit
def pumma_residual(x0: float, x1: float, z: Any, theta: Any, p: float, zs: float, vs: float,
                   ss: float, target: float, sums: Any) -> float:
    """The KKT residual of (17) relative to the magnitude of its terms
    (``PNormSpace._residual``): w = f^{-1}(phi) = (m / N^(p-2)) F."""
    m = pumma_phi_sums(x0, x1, z, theta, p, sums)
    lift = 0.0 if m == 0.0 else m / sums[0] ** ((p - 2.0) / p)
    g0 = 2.0 - lift * sums[1] - (zs * x0 + vs * x1)
    g1 = target - lift * sums[2] - (vs * x0 + ss * x1)
    mag0 = lift * sums[6] + (abs(zs) * abs(x0) + abs(vs) * abs(x1))
    mag1 = lift * sums[7] + (abs(vs) * abs(x0) + abs(ss) * abs(x1))
    scale = max(1.0, mag0 / 2.0, mag1 / target)
    ratio: float = (abs(g0) / 2.0 + abs(g1) / target) / scale
    return ratio


@jit
def pumma_newton(z: Any, theta: Any, zs: float, vs: float, ss: float, target: float,
                 alpha_i: float, p: float, last0: float, last1: float, max_steps: int,
                 stop: float, singular: float, phi: Any) -> tuple[float, float, float]:
    """``PNormSpace._newton`` up to its finishing pass: the damped Newton on the dual (18)
    from (0, 1) or the warm start (last0, last1) when its dual value is larger; halfway to
    case (i)'s point (alpha_i, 0) where the Hessian is singular; stops after a failed line
    search, a relative move within ``stop``, or ``max_steps``.  Writes phi = x0 z + x1 theta
    and returns (x0, x1, KKT residual); the caller finishes when the residual is too large."""
    sums = np.empty(8)
    x0, x1 = 0.0, 1.0
    value = pumma_dual_value(x0, x1, z, theta, p, zs, vs, ss, target, sums)
    if last1 > 0.0:
        warm = pumma_dual_value(last0, last1, z, theta, p, zs, vs, ss, target, sums)
        if warm > value:
            x0, x1, value = last0, last1, warm
    for _ in range(max_steps):
        ok, d0, d1 = pumma_newton_step(x0, x1, z, theta, p, zs, vs, ss, target, singular,
                                       sums)
        if not ok:
            x0, x1 = 0.5 * (x0 + alpha_i), 0.5 * x1
            value = pumma_dual_value(x0, x1, z, theta, p, zs, vs, ss, target, sums)
            continue
        c0, c1, value_c = pumma_line_search(x0, x1, value, d0, d1, z, theta, p, zs, vs, ss,
                                            target, sums)
        if value_c < value - 1e-14 * abs(value):
            break
        moved0, moved1 = abs(c0 - x0), abs(c1 - x1)
        x0, x1, value = c0, c1, value_c
        if moved0 <= stop * abs(x0) and moved1 <= stop * max(abs(x1), 1.0):
            break
    for i in range(z.shape[0]):
        phi[i] = x0 * z[i] + x1 * theta[i]
    return x0, x1, pumma_residual(x0, x1, z, theta, p, zs, vs, ss, target, sums)


# -- p > 2: the per-trial loop (fast.pumma._pnorm_compiled) ---------------------------------------

@jit(reassoc=True)
def pnorm_pair_dots(Fz: Any, z: Any, theta: Any) -> tuple[float, float]:
    """f^{-1}(z).z = ||z||_p^2 and f^{-1}(z).theta (one loop)."""
    nz = 0.0
    ft = 0.0
    for i in range(z.shape[0]):
        nz += Fz[i] * z[i]
        ft += Fz[i] * theta[i]
    return nz, ft


@jit
def pnorm_parallel(z: Any, theta: Any, a: Any, held: Any, count: int, pos: int, neg: int,
                   soft: bool, zz: float, zt: float, singular: float) -> bool:
    """``pnorm_pair_solve``'s infeasibility test where ||theta||^2 + ||a||^2 is below
    ``TINY_SQUARES`` (zz, zt: ||z~||^2 and z~.th~ with the slack parts): the residual form
    of the 2-norm Gram determinant on (theta, a) times k, the power of two that brings
    their largest entry into [1/2, 1) (exact; the test is homogeneous in them, whose
    squares underflow where a tiny C makes them of its size: 0 <= 0, infeasible).  No
    reassociation (k theta is not folded into k^2 theta^2)."""
    m = 0.0
    for i in range(theta.shape[0]):
        m = max(m, abs(theta[i]))
    for i in range(count if soft else 0):
        m = max(m, abs(a[held[i]]))
    k = math.ldexp(1.0, -math.frexp(m)[1])
    s = k * zt / zz
    res = 0.0
    tt = 0.0
    for i in range(theta.shape[0]):
        t = k * theta[i]
        d = t - s * z[i]
        res += d * d
        tt += t * t
    if soft:
        res += slack_scaled(a, held, count, pos, neg, s, k)
        tt += slack_scaled(a, held, count, -1, -1, 0.0, k)
    return zz * res <= singular * zz * tt


@jit
def pnorm_pair_solve(z: Any, Fz: Any, theta: Any, a: Any, held: Any, count: int, pos: int,
                     neg: int, p: float, inv_c: float, soft: bool, zz: float, zt: float,
                     consts: Any, state: Any, phi: Any) -> int:
    """``fast.pumma.PNormSpace.pair_solve`` for z = x_pos - x_neg (formed, with
    zz = ||z||^2 and zt = z.theta): 0 infeasible; 1 solved, phi written and (alpha, beta)
    in state's PUMMA_ALPHA, PUMMA_BETA; 2 the Newton's residual exceeds its tolerance (the
    caller finishes; PUMMA_ALPHA .. PUMMA_TARGET = alpha, beta, zs, vs, ss, target).
    consts: the PUMMA_CONST_* slots; state's PUMMA_TT = tt, PUMMA_LAST0 and PUMMA_LAST1
    the warm start ``last``."""
    a2 = slack_norm(a, held, count, -1, -1, 0.0) if soft else 0.0      # ||a||^2
    zs = 2.0 * inv_c if soft else 0.0                                   # ||E||^2 / C
    vs = (a[pos] - a[neg]) * inv_c if soft else 0.0                     # xi'_pos + xi'_neg
    ss = slack_over_c(a, held, count, -1, -1, 0.0, inv_c, a2) if soft else 0.0  # C||xi'||^2
    target = state[PUMMA_TT] + ss                                              # ||v~||^2
    state[PUMMA_ZS], state[PUMMA_VS], state[PUMMA_SS], state[PUMMA_TARGET] = zs, vs, ss, target
    link_inverse(z, p, Fz)                                              # f^{-1}(z)
    nz, ft = pnorm_pair_dots(Fz, z, theta)
    if nz + zs <= 0.0:
        return 0
    alpha = 2.0 / (nz + zs)
    tie = consts[PUMMA_CONST_CASE_TIE]
    if target == 0.0 or alpha * (ft + vs) >= target * (1.0 - tie):   # case (i)
        for i in range(z.shape[0]):
            phi[i] = alpha * z[i]
        state[PUMMA_ALPHA], state[PUMMA_BETA] = alpha, 0.0
        return 1
    if soft:
        zz += 2.0
        zt += a[pos] - a[neg]
    s = zt / zz      # infeasible iff (z, E) is a nonpositive multiple of (theta, a)
    tt = norm2(theta) + a2
    if tt < TINY_SQUARES:    # squares of a tiny C's size: the same test, scaled
        if pnorm_parallel(z, theta, a, held, count, pos, neg, soft, zz, zt,
                          consts[PUMMA_CONST_RESIDUAL_SINGULAR]):
            return 0
    else:
        res = sparse_residual(theta, z, s)
        if soft:
            res += slack_norm(a, held, count, pos, neg, s)
        if zz * res <= consts[PUMMA_CONST_RESIDUAL_SINGULAR] * zz * tt:
            return 0
    x0, x1, residual = pumma_newton(z, theta, zs, vs, ss, target, alpha, p, state[PUMMA_LAST0],
                                    state[PUMMA_LAST1], int(consts[PUMMA_CONST_NEWTON_MAX_STEPS]),
                                    consts[PUMMA_CONST_NEWTON_STOP], consts[PUMMA_CONST_SINGULAR],
                                    phi)
    state[PUMMA_ALPHA], state[PUMMA_BETA] = x0, x1
    return 2 if residual > consts[PUMMA_CONST_NEWTON_TOLERANCE] else 1


@jit
def pnorm_pair_apply(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, pos: int,
                     neg: int, p: float, inv_c: float, soft: bool, alpha: float, beta: float,
                     phi: Any, theta: Any, w: Any, a: Any, held: Any, state: Any) -> None:
    """``fast.pumma.PNormSpace.pair_apply`` and the bias (20), in place: theta = phi,
    w = f^{-1}(phi), tt = w.phi, the warm start (alpha, beta) kept when beta != 0, a <- beta
    a + alpha (e_pos - e_neg) over the held examples, b = -(w~.x~_pos + w~.x~_neg) / 2;
    state's pos, neg, b, tt and warm start written."""
    n = phi.shape[0]
    for i in range(n):
        theta[i] = phi[i]
    link_inverse(theta, p, w)
    state[PUMMA_TT] = dense_dot(w, theta, n)
    if beta != 0.0:
        state[PUMMA_LAST0], state[PUMMA_LAST1] = alpha, beta
    if soft:
        slack_move(a, held, int(state[PUMMA_HELD]), pos, neg, beta, alpha)
    if sparse:
        bp = sparse_dot(data, indices, indptr[pos], indptr[pos + 1], w)
        bn = sparse_dot(data, indices, indptr[neg], indptr[neg + 1], w)
    else:
        bp, bn = row_dot(X, pos, w), row_dot(X, neg, w)
    if soft:
        bp += a[pos] * inv_c
        bn += a[neg] * inv_c
    state[PUMMA_POS], state[PUMMA_NEG], state[PUMMA_B] = pos, neg, -0.5 * (bp + bn)


@jit
def pnorm_update(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, pos: int,
                 neg: int, p: float, inv_c: float, soft: bool, consts: Any, w: Any,
                 theta: Any, z: Any, Fz: Any, phi: Any, a: Any, held: Any, mark: Any,
                 state: Any) -> int:
    """The update for the pair (pos, neg): z formed, the pair held (soft margin), problem
    (3) / (24) solved (``pnorm_pair_solve``) and, when solved, applied
    (``pnorm_pair_apply``).  Returns ``pnorm_pair_solve``'s status."""
    zz, zt = pair_products(X, indptr, indices, data, sparse, pos, neg, theta, z)
    if soft:
        count = hold(pos, held, mark, int(state[PUMMA_HELD]))
        state[PUMMA_HELD] = hold(neg, held, mark, count)
    status = pnorm_pair_solve(z, Fz, theta, a, held, int(state[PUMMA_HELD]), pos, neg, p, inv_c,
                              soft, zz, zt, consts, state, phi)
    if status == 1:
        pnorm_pair_apply(X, indptr, indices, data, sparse, pos, neg, p, inv_c, soft,
                         state[PUMMA_ALPHA], state[PUMMA_BETA], phi, theta, w, a, held, state)
    return status


@jit
def pumma_pnorm_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                       epochs: int, start: int, threshold: float, p: float, inv_c: float,
                       soft: bool, consts: Any, w: Any, theta: Any, z: Any, Fz: Any,
                       phi: Any, a: Any, held: Any, mark: Any, state: Any, mistakes: Any,
                       updates: Any, scores: Any, record: bool) -> int:
    """``pumma_primal`` for p > 2 from trial ``start``: state: every PUMMA_* slot of
    ``fast._slots`` (pos, neg, b, bad score, mistakes, updates, held count, tt, last0, last1,
    pending trial, pending pos, pending neg, alpha, beta, zs, vs, ss, target;
    ``pnorm_pair_solve``); w, theta = f(w), z, Fz and phi n entries (z, Fz, phi scratch).  Returns
    the first trial whose score is not finite, or -1; a Newton left unfinished stops the loop
    before its update with PUMMA_PENDING_TRIAL, _POS, _NEG = (trial, pos, neg) (else
    PUMMA_PENDING_TRIAL = -1): the caller finishes it, applies it (``pnorm_pair_apply``), counts
    the update and resumes at the next trial."""
    pos, neg, b = int(state[PUMMA_POS]), int(state[PUMMA_NEG]), state[PUMMA_B]
    nm, nu = int(state[PUMMA_MISTAKES]), int(state[PUMMA_UPDATES])
    bad, T, stop = -1, y.shape[0], False
    state[PUMMA_PENDING_TRIAL] = -1.0
    for epoch in range(start // T, epochs):
        for j in range(start % T if epoch == start // T else 0, T):
            t = epoch * T + j
            label = y[j]
            started = pos >= 0 and neg >= 0
            if sparse:
                d = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
            else:
                d = row_dot(X, j, w)
            s = d + b if started else b  # start-up: the score is b (w = 0)
            if not math.isfinite(s if started else d):
                bad, state[PUMMA_BAD_SCORE], stop = t, (s if started else d), True
                break
            if record:
                scores[t] = s
            margin = label * s
            mistakes[nm] = t             # kept only when counted
            nm += margin <= 0
            if soft:
                margin = margin + label * (a[j] * inv_c)
            if not updates_at(j, label, margin, pos, neg, threshold):
                continue
            pp, qq = (j, neg) if label > 0 else (pos, j)
            status = 1
            if pp >= 0 and qq >= 0:
                status = pnorm_update(X, indptr, indices, data, sparse, pp, qq, p, inv_c,
                                      soft, consts, w, theta, z, Fz, phi, a, held, mark,
                                      state)
            else:                        # start-up: half a pair stored
                state[PUMMA_POS], state[PUMMA_NEG] = pp, qq
                state[PUMMA_B] = 1.0 if pp >= 0 else -1.0
            if status == 2:
                state[PUMMA_PENDING_TRIAL], state[PUMMA_PENDING_POS] = t, pp
                state[PUMMA_PENDING_NEG], stop = qq, True
                break
            if status == 1:
                pos, neg, b = int(state[PUMMA_POS]), int(state[PUMMA_NEG]), state[PUMMA_B]
                updates[nu] = t
                nu += 1
        if stop:
            break
    state[PUMMA_MISTAKES], state[PUMMA_UPDATES] = nm, nu
    return bad
