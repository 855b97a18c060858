"""The compiled per-trial loops (numba) of the Perceptron, the p-norm Perceptron, ROMMA and the
Perceptron's one-vs-rest learners, with the jitted pieces they share.

What each loop computes, and why, is said by its family's front module: ``fast._compiled``
(Perceptron, p-norm Perceptron; engine choice and the flags), ``fast._compiled_romma``,
``fast._compiled_multiclass``.  This module imports numba, so it is imported only by those
fronts, at the first compiled run (``fast._compiled.kernels``).

Every function here is a module-level numba dispatcher, and a loop calls its helpers as module
globals.  A helper passed in as a closure variable would make numba key its on-disk cache on
the pickled dispatcher, which differs in every process: each new process would compile the
loop again and save it again.  As globals, the second process loads each loop from the cache.
numba keys that cache on the time stamp of the loop's own source file only, not on the files
of the functions and constants it uses; the loops and every helper they call are therefore in
this one file, and the tunable constants of other modules (ROMMA's ``RESIDUAL_SINGULAR``)
arrive as arguments.  The flags and return codes imported below are fixed parts of the
protocol between a loop and its caller.

Compilation (``jit``): ``nogil``, IEEE arithmetic (``error_model="numpy"``: a division by zero
gives inf or NaN as in numpy, and the overflow report follows), ``cache=True`` when numba can
write its cache (next to this file, or its user-wide cache directory); without one (a
read-only install and a read-only home) the functions are compiled without a cache, in each
process, and nothing fails.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from ._compiled import BLOCKED, MISTAKE, UPDATE
from ._compiled_multiclass import DONE, FULL_BASE


def jit(fn: Any = None, *, reassoc: bool = False, inline: bool = False) -> Any:
    """``numba.njit`` with this module's options (module docstring).  ``reassoc``: reductions
    compiled with reassociation allowed (LLVM vectorises them; the result is another rounding
    of the same sum); only ``reassoc``, so NaN and infinity keep their IEEE meaning and a
    loop's finiteness test stays valid.  ``inline``: inlined into its callers (numba's IR
    inlining)."""
    options: dict[str, Any] = {"nogil": True, "error_model": "numpy"}
    if reassoc:
        options["fastmath"] = {"reassoc"}
    if inline:
        options["inline"] = "always"

    def compile_(f: Any) -> Any:
        try:
            return numba.njit(cache=True, **options)(f)
        except RuntimeError:  # no writable cache location: compile in each process
            return numba.njit(**options)(f)

    return compile_ if fn is None else compile_(fn)


# -- shared products and per-trial steps --------------------------------------------------------

@jit
def sparse_dot(data: Any, indices: Any, lo: int, hi: int, w: Any) -> float:
    """The CSR entries lo .. hi-1 against w: a gather, in order."""
    s = 0.0
    for k in range(lo, hi):
        s += data[k] * w[indices[k]]
    return s


@jit
def dense_dot(a: Any, b: Any, n: int) -> float:
    """a . b over n entries: four running sums, then the tail."""
    a0 = a1 = a2 = a3 = 0.0
    k = 0
    while k + 4 <= n:
        a0 += a[k] * b[k]
        a1 += a[k + 1] * b[k + 1]
        a2 += a[k + 2] * b[k + 2]
        a3 += a[k + 3] * b[k + 3]
        k += 4
    s = (a0 + a1) + (a2 + a3)
    while k < n:
        s += a[k] * b[k]
        k += 1
    return s


@jit
def kernel_value(kind: int, degree: int, gamma: float, coef0: float, dot: float,
                 sq_a: float, sq_b: float) -> float:
    """k(a, b) from a . b and the squared norms: 0 linear, 1 poly, 2 rbf."""
    if kind == 0:
        return dot
    if kind == 1:
        base = gamma * dot + coef0
        out = base
        for _ in range(degree - 1):
            out *= base
        return out
    sq = sq_a + sq_b - 2.0 * dot
    if sq < 0.0:
        sq = 0.0
    return math.exp(-gamma * sq)


@jit(inline=True)
def row_score(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, j: int,
              w: Any) -> float:
    """Row j of X (dense: BLAS ``ddot``; CSR: the gather) against w."""
    if sparse:
        return sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
    return np.dot(X[j], w)


@jit(inline=True)
def add_row(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, j: int,
            step: float, w: Any) -> None:
    """w += step X[j], in place."""
    if sparse:
        for k in range(indptr[j], indptr[j + 1]):
            w[indices[k]] += step * data[k]
    else:
        row = X[j]
        for i in range(w.shape[0]):
            w[i] += step * row[i]


@jit(inline=True)
def plus_lambda(s: float, count: int, term: float) -> float:
    """s plus the lambda term of an example updated ``count`` times (the numpy path adds
    0.0 when it has not been: -0.0 becomes 0.0 there too)."""
    if count > 0:
        return s + term
    return s + 0.0


@jit(inline=True)
def perceptron_flag(score: float, label: float, tau: float, count: int, bound: int) -> int:
    """The Perceptron's test of one trial (SPEC.md section 7): MISTAKE when y s <= 0; at
    y s <= tau UPDATE, or BLOCKED when the example has ``bound`` updates already."""
    margin = label * score
    f = MISTAKE if margin <= 0 else 0
    if margin <= tau:
        if bound < 0 or count < bound:
            f |= UPDATE
        else:
            f |= BLOCKED
    return f


# -- the Perceptron and the p-norm Perceptron (fast._compiled) ----------------------------------

@jit(inline=True)
def perceptron_test(t: int, j: int, s: float, y: Any, tau: float, lam_terms: Any,
                    use_lam: bool, bound: int, alpha: Any, scores: Any,
                    record: bool) -> tuple[float, int]:
    """Trial t on example j, with s the score plus b: the lambda term added, then (score,
    flags), the score recorded when ``record``; flags -1 when the score is not finite."""
    if use_lam:
        s = plus_lambda(s, alpha[j], lam_terms[j])
    if not math.isfinite(s):
        return s, -1
    if record:
        scores[t] = s
    return s, perceptron_flag(s, y[j], tau, alpha[j], bound)


@jit
def perceptron_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                      epochs: int, eta: float, C: float, tau: float, lam_terms: Any,
                      use_lam: bool, bound: int, w: Any, alpha: Any, state: Any, flags: Any,
                      scores: Any, record: bool) -> int:
    """state = [b, bad score]; returns the first trial with a non-finite score, or -1."""
    T = y.shape[0]
    b = state[0]
    etaC = eta * C
    t = -1
    for _ in range(epochs):
        for j in range(T):
            t += 1
            if sparse:
                s = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
            else:
                s = np.dot(X[j], w)
            s += b
            if use_lam:
                s = plus_lambda(s, alpha[j], lam_terms[j])
            if not math.isfinite(s):
                state[0] = b
                state[1] = s
                return t
            if record:
                scores[t] = s
            label = y[j]
            f = perceptron_flag(s, label, tau, alpha[j], bound)
            if f & UPDATE:
                add_row(X, indptr, indices, data, sparse, j, eta * label, w)
                alpha[j] += 1
                b += etaC * label
            flags[t] = f
    state[0] = b
    return -1


@jit
def perceptron_dual(X: Any, sq: Any, y: Any, epochs: int, kind: int, degree: int,
                    gamma: float, coef0: float, eta: float, C: float, tau: float,
                    lam_terms: Any, use_lam: bool, bound: int, alpha: Any, slot: Any,
                    support: Any, coef: Any, state: Any, flags: Any, scores: Any,
                    record: bool) -> int:
    """The score of trial t is sum_s coef_s k(x_s, x_t) over the support examples (kernel
    values computed on the fly) + b (+ the lambda term).  state = [b, bad score, support
    size]; returns the first trial with a non-finite score, or -1."""
    T, n = X.shape
    b = state[0]
    etaC = eta * C
    S = int(state[2])
    for t in range(epochs * T):
        j = t % T
        x = X[j]
        acc = 0.0
        for s in range(S):
            i = support[s]
            d = dense_dot(X[i], x, n)
            acc += coef[s] * kernel_value(kind, degree, gamma, coef0, d, sq[i], sq[j])
        score, f = perceptron_test(t, j, acc + b, y, tau, lam_terms, use_lam, bound, alpha,
                                   scores, record)
        if f < 0:
            state[2] = S
            state[0] = b
            state[1] = score
            return t
        label = y[j]
        if f & UPDATE:
            if slot[j] < 0:
                slot[j] = S
                support[S] = j
                S += 1
            alpha[j] += 1
            b += etaC * label
            coef[slot[j]] = eta * alpha[j] * label
        flags[t] = f
    state[0] = b
    state[2] = S
    return -1


@jit
def pnorm_gradient(v: Any, p: float, w: Any) -> None:
    """w = g(v), the gradient of ||v||_p^2 / 2 (``fast.pnorm_perceptron``), in place."""
    n = v.shape[0]
    if p == 2.0:
        for i in range(n):
            w[i] = v[i]
        return
    largest = 0.0
    for i in range(n):
        a = abs(v[i])
        if a > largest:
            largest = a
    if largest == 0.0:
        for i in range(n):
            w[i] = 0.0
        return
    scale = math.ldexp(1.0, math.frexp(largest)[1])
    total = 0.0
    for i in range(n):
        ti = abs(v[i]) / scale
        pw = ti ** (p - 1.0)
        w[i] = pw
        total += pw * ti
    factor = scale / total ** ((p - 2.0) / p)
    for i in range(n):
        w[i] = math.copysign(w[i], v[i]) * factor


@jit
def pnorm_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                 epochs: int, p: float, v: Any, w: Any, state: Any, flags: Any,
                 scores: Any, record: bool) -> int:
    """state = [unused, bad score]; returns the first trial with a non-finite score, or -1."""
    T = y.shape[0]
    for t in range(epochs * T):
        j = t % T
        s = row_score(X, indptr, indices, data, sparse, j, w)
        if not math.isfinite(s):
            state[1] = s
            return t
        if record:
            scores[t] = s
        label = y[j]
        if label * s <= 0:
            flags[t] = MISTAKE | UPDATE
            add_row(X, indptr, indices, data, sparse, j, label, v)
            pnorm_gradient(v, p, w)
    return -1


# -- ROMMA's primal form (fast._compiled_romma) -------------------------------------------------

@jit(reassoc=True)
def dot_and_norm(X: Any, j: int, w: Any, n: int) -> tuple[float, float]:
    """X[j].w and ||X[j]||^2 in one pass (the loop waits on memory: the norm is free)."""
    s = 0.0
    q = 0.0
    for k in range(n):
        x = X[j, k]
        s += x * w[k]
        q += x * x
    return s, q


@jit(reassoc=True)
def residual(X: Any, j: int, w: Any, n: int, r: float) -> float:
    """||w - r z||^2 with z = X[j] times the label folded into r."""
    s = 0.0
    for k in range(n):
        d = w[k] - r * X[j, k]
        s += d * d
    return s


@jit(reassoc=True)
def move(X: Any, j: int, w: Any, n: int, eta: float, step: float) -> float:
    """w <- eta w + step X[j]; returns the new ||w||^2."""
    s = 0.0
    for k in range(n):
        wk = eta * w[k] + step * X[j, k]
        w[k] = wk
        s += wk * wk
    return s


@jit(reassoc=True)
def norm2(w: Any) -> float:
    s = 0.0
    for k in range(w.shape[0]):
        s += w[k] * w[k]
    return s


@jit
def scale(w: Any, eta: float) -> None:
    for k in range(w.shape[0]):
        w[k] *= eta


@jit(reassoc=True)
def sparse_residual(w: Any, zbuf: Any, r: float) -> float:
    s = 0.0
    for k in range(w.shape[0]):
        d = w[k] - r * zbuf[k]
        s += d * d
    return s


@jit
def romma_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                 epochs: int, threshold: float, singular: float, w: Any, zbuf: Any,
                 state: Any, mistakes: Any, updates: Any, scores: Any, record: bool) -> int:
    """state = [last updated example, bad score, mistakes, updates]; w the start (0 for a
    run), zbuf n zeros (CSR: the dense z of the residual); ``singular`` is
    ``fast.romma.RESIDUAL_SINGULAR``.  The trials of the mistakes and updates are written to
    the front of ``mistakes`` and ``updates``.  Returns the first trial with a score that is
    not finite, or -1."""
    T = y.shape[0]
    n = w.shape[0]
    last = int(state[0])
    vv = norm2(w)
    nm = 0
    nu = 0
    for t in range(epochs * T):
        j = t % T
        zz = 0.0
        if sparse:  # a gather: in order (no vector form to gain)
            s = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
        else:
            s, zz = dot_and_norm(X, j, w, n)
        if not math.isfinite(s):
            state[0] = last
            state[1] = s
            state[2] = nm
            state[3] = nu
            return t
        label = y[j]
        if record:
            scores[t] = s
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
                    if det <= singular * zz * vv:
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
                    add_row(X, indptr, indices, data, sparse, j, step, w)
                    vv = norm2(w)
                else:
                    vv = move(X, j, w, n, eta, step)
                last = j
    state[0] = last
    state[2] = nm
    state[3] = nu
    return -1


# -- the Perceptron's one-vs-rest learners (fast._compiled_multiclass) --------------------------

@jit(inline=True)
def decide(t: int, j: int, scores: Any, Y: Any, tau: float, lam_terms: Any, use_lam: bool,
           bound: int, alpha: Any, b: Any, flags: Any, wants: Any, state: Any) -> int:
    """Adds b and the lambda term to the K scores of trial t and tests them: flags,
    ``wants[k]`` (learner k updates); returns -2 when a score is not finite (state[0]), else
    the number of learners that update."""
    count = 0
    for k in range(scores.shape[0]):
        s = scores[k] + b[k]
        if use_lam:
            s = plus_lambda(s, alpha[j, k], lam_terms[j, k])
        if not math.isfinite(s):
            state[0] = s
            return -2
        f = perceptron_flag(s, Y[j, k], tau, alpha[j, k], bound)
        wants[k] = (f & UPDATE) != 0
        if wants[k]:
            count += 1
        flags[k, t] = f
    return count


@jit(inline=True)
def add_support(j: int, S: int, x: Any, sq_j: float, slot: Any, rows: Any, sq_rows: Any,
                coef: Any) -> int:
    """Example j into the support store at its first update; returns the new store size."""
    if slot[j] < 0:
        slot[j] = S
        rows[S] = x
        sq_rows[S] = sq_j
        coef[S] = 0.0
        return S + 1
    return S


@jit(inline=True)
def dual_update(j: int, k: int, s_j: int, Y: Any, eta: float, etaC: float, alpha: Any,
                b: Any, coef: Any) -> float:
    """Learner k's update on example j (support s_j) in the dual form; returns the label."""
    label = Y[j, k]
    alpha[j, k] += 1
    b[k] += etaC * label
    coef[s_j, k] = eta * alpha[j, k] * label
    return label


@jit
def ovr_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, Y: Any,
               epochs: int, eta: float, C: float, tau: float, lam_terms: Any, use_lam: bool,
               bound: int, W: Any, b: Any, alpha: Any, slot: Any, n_support: Any, flags: Any,
               state: Any) -> int:
    """W is K x n (C order), updated in place with b (K) and alpha (T x K); slot[j] is set
    to the next support id at example j's first update; flags is K x (epochs T).  Returns
    DONE or the first trial with a score that is not finite (state[0])."""
    T = Y.shape[0]
    K = W.shape[0]
    etaC = eta * C
    scores = np.zeros(K)
    wants = np.zeros(K, dtype=np.bool_)
    S = n_support[0]
    for t in range(epochs * T):
        j = t % T
        if sparse:
            for k in range(K):
                scores[k] = sparse_dot(data, indices, indptr[j], indptr[j + 1], W[k])
        elif K == 1:
            scores[0] = np.dot(X[j], W[0])
        else:
            np.dot(W, X[j], scores)
        count = decide(t, j, scores, Y, tau, lam_terms, use_lam, bound, alpha, b, flags,
                       wants, state)
        if count < 0:
            n_support[0] = S
            return t
        if count > 0 and slot[j] < 0:
            slot[j] = S
            S += 1
        for k in range(K):
            if wants[k]:
                label = Y[j, k]
                add_row(X, indptr, indices, data, sparse, j, eta * label, W[k])
                alpha[j, k] += 1
                b[k] += etaC * label
    n_support[0] = S
    return DONE


@jit
def ovr_dual(X: Any, sq: Any, Y: Any, epochs: int, start: int, kind: int, degree: int,
             gamma: float, coef0: float, eta: float, C: float, tau: float, lam_terms: Any,
             use_lam: bool, bound: int, rows: Any, sq_rows: Any, coef: Any, b: Any,
             alpha: Any, slot: Any, n_support: Any, flags: Any, state: Any) -> int:
    """Dense X from trial ``start`` on.  rows (capacity x n, C order), sq_rows and coef
    (capacity x K) are the support store: the first n_support[0] entries are in use (earlier
    calls' supports first).  Returns DONE, the first trial with a score that is not finite,
    or FULL_BASE - t when trial t needs a support and the store is full (nothing of trial t
    done)."""
    T, n = X.shape
    K = Y.shape[1]
    capacity = rows.shape[0]
    etaC = eta * C
    scores = np.zeros(K)
    wants = np.zeros(K, dtype=np.bool_)
    kv = np.zeros(capacity)
    S = n_support[0]
    for t in range(start, epochs * T):
        j = t % T
        x = X[j]
        if slot[j] < 0 and S == capacity:
            n_support[0] = S
            return FULL_BASE - t
        if K == 1:  # the binary loop's sum, in the binary loop's order
            acc = 0.0
            for s in range(S):
                d = dense_dot(rows[s], x, n)
                acc += coef[s, 0] * kernel_value(kind, degree, gamma, coef0, d, sq_rows[s],
                                                 sq[j])
            scores[0] = acc
        elif S > 0:
            row = kv[:S]
            np.dot(rows[:S], x, row)
            finite = True
            for s in range(S):
                v = kernel_value(kind, degree, gamma, coef0, row[s], sq_rows[s], sq[j])
                row[s] = v
                if not math.isfinite(v):
                    finite = False
            if finite:
                np.dot(row, coef[:S], scores)
            else:  # 0 * inf: sum each learner's own supports only, as its binary run
                for k in range(K):
                    acc = 0.0
                    for s in range(S):
                        if coef[s, k] != 0.0:
                            acc += coef[s, k] * kv[s]
                    scores[k] = acc
        else:
            scores[:] = 0.0
        count = decide(t, j, scores, Y, tau, lam_terms, use_lam, bound, alpha, b, flags,
                       wants, state)
        if count < 0:
            n_support[0] = S
            return t
        if count > 0:
            S = add_support(j, S, x, sq[j], slot, rows, sq_rows, coef)
            for k in range(K):
                if wants[k]:
                    dual_update(j, k, slot[j], Y, eta, etaC, alpha, b, coef)
    n_support[0] = S
    return DONE


@jit
def kernel_block(X: Any, lo: int, hi: int, sq: Any, rows: Any, sq_rows: Any, S: int,
                 kind: int, degree: int, gamma: float, coef0: float, out: Any) -> None:
    """out[i - lo, s] = k(x_s, x_i) for the examples lo .. hi-1 and the first S supports,
    one matrix-vector product (``dgemv``) per example; for the Gaussian kernel only the
    exponent -gamma max(|x_s|^2 + |x_i|^2 - 2 x_s.x_i, 0): the caller takes numpy's
    vectorised exp of the whole block."""
    for i in range(lo, hi):
        row = out[i - lo]
        np.dot(rows[:S], X[i], row)
        if kind == 1:
            for s in range(S):
                base = gamma * row[s] + coef0
                value = base
                for _ in range(degree - 1):
                    value *= base
                row[s] = value
        elif kind == 2:
            for s in range(S):
                d = sq_rows[s] + sq[i] - 2.0 * row[s]
                if d < 0.0:
                    d = 0.0
                row[s] = -gamma * d


@jit
def block_scores(Kb: Any, coef: Any, S: int, out: Any) -> None:
    """out[i] = sum_s Kb[i, s] coef[s] (one ``dgemv`` per row); a kernel value that is not
    finite counts only in the learners whose coefficient on it is not 0."""
    K = coef.shape[1]
    for i in range(Kb.shape[0]):
        row = Kb[i]
        finite = True
        for s in range(S):
            if not math.isfinite(row[s]):
                finite = False
                break
        if finite:
            np.dot(row, coef[:S], out[i])
        else:
            for k in range(K):
                acc = 0.0
                for s in range(S):
                    if coef[s, k] != 0.0:
                        acc += coef[s, k] * row[s]
                out[i, k] = acc


@jit
def ovr_dual_block(X: Any, sq: Any, Y: Any, first: int, stop: int, start: int, trial0: int,
                   S0: int, Kb: Any, base: Any, kind: int, degree: int, gamma: float,
                   coef0: float, eta: float, C: float, tau: float, lam_terms: Any,
                   use_lam: bool, bound: int, rows: Any, sq_rows: Any, coef: Any, b: Any,
                   alpha: Any, slot: Any, n_support: Any, flags: Any, state: Any) -> int:
    """Examples first .. stop-1 of one epoch (trial trial0 + j for example j), from example
    ``start`` on.  ``base`` (rows of the block x K) holds sum_s coef_s k(x_s, x_j) over the
    S0 supports of the block's start, ``Kb`` those kernel values (block x S0).  An update
    adds its term step k(x_u, x_j) to the learner's base of the rest of the block: from Kb
    for a support of the block's start, else from kernel values computed here.  Returns
    DONE, the first trial with a score that is not finite, or FULL_BASE - t (store full;
    nothing of trial t done)."""
    n = X.shape[1]
    K = Y.shape[1]
    capacity = rows.shape[0]
    etaC = eta * C
    wants = np.zeros(K, dtype=np.bool_)
    column = np.zeros(stop - first)
    S = n_support[0]
    for j in range(start, stop):
        t = trial0 + j
        if slot[j] < 0 and S == capacity:
            n_support[0] = S
            return FULL_BASE - t
        count = decide(t, j, base[j - first], Y, tau, lam_terms, use_lam, bound, alpha, b,
                       flags, wants, state)
        if count < 0:
            n_support[0] = S
            return t
        if count == 0:
            continue
        x = X[j]
        S = add_support(j, S, x, sq[j], slot, rows, sq_rows, coef)
        s_j = slot[j]
        rest = stop - j - 1
        if rest > 0:
            if s_j < S0:
                for r in range(rest):
                    column[r] = Kb[j + 1 + r - first, s_j]
            else:
                for r in range(rest):
                    i = j + 1 + r
                    column[r] = kernel_value(kind, degree, gamma, coef0,
                                             dense_dot(X[i], x, n), sq[j], sq[i])
        for k in range(K):
            if wants[k]:
                step = eta * dual_update(j, k, s_j, Y, eta, etaC, alpha, b, coef)
                for r in range(rest):
                    base[j + 1 + r - first, k] += step * column[r]
    n_support[0] = S
    return DONE


# -- HO_2's and SOP's primal forms (fast.higher_order, fast.second_order) -----------------------
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
def ho_primal(X, y, t, t_end, limit, k, mode, c, sparse, A, v, w, a, out, rhos, dsymv, dsyr2):  # type: ignore[no-untyped-def]
    """Trials t .. t_end-1 of HO_2 primal (section 10.9.1), stopping after ``limit``
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
            count += 1
            for i in range(n):
                v[i] += label * x[i]
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
def sop_primal(X, y, t, t_end, limit, Ainv, v, u, z, probe, Cp, out, dsymv, dsyr):  # type: ignore[no-untyped-def]
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
