"""Compiled per-trial loops (numba, optional) for the Perceptron's K one-vs-rest learners
(``fast.multiclass.PerceptronOvR``, engine "numba").

One trial at a time for all K learners at once:

- primal: the K scores W x_t + b by one matrix-vector product (BLAS ``dgemv`` on the K x n
  weights: one pass over x_t for every learner; a CSR row: one gather per learner over its
  stored entries), then each learner's test and update in place;
- dual: one kernel row k(x_s, x_t) over the union of the support examples of all learners
  (``dgemv`` of the n-wide support store against x_t, then the kernel's map), then the K
  scores by one product of that row with the S x K coefficient matrix (``dgemv``); an
  update by any learner on an example that is not yet a support appends it to the store.

The K learners' scores of trial t are all computed before any of them updates on it, so each
learner sees exactly its own updates, as in K separate binary runs.  With K = 1 the loops do
``fast._compiled``'s binary arithmetic instead (``ddot`` against w; per support a 4-way
dot product, the kernel's map, and a running sum in support order), so a two-class run is
the binary compiled run to the last bit.  With K >= 2 the scores are the same sums in
another order (BLAS's): SPEC.md section 3, they may part from the binary runs on fragile
trials only.

Each loop writes per learner and trial the flags of ``fast._compiled`` (mistake, update,
blocked), keeps alpha per (example, learner) and b per learner, and stops at the first
score that is not finite (the caller raises the driver's ``FloatRangeError``).  The dual
loop also returns when its support store is full (the caller doubles it and resumes at the
trial it names).  numba is imported at the first compiled run only; ``error_model="numpy"``
as in ``fast._compiled``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._compiled import BLOCKED, MISTAKE, UPDATE

#: Return codes of the loops besides a trial number (a score that is not finite).
DONE = -1
#: The dual loop returns ``FULL_BASE - t`` when trial t needs room for one more support.
FULL_BASE = -2

_LOOPS: Any = None


def loops() -> Any:
    """The compiled loops (compiled at their first call)."""
    global _LOOPS
    if _LOOPS is None:
        _LOOPS = _build()
    return _LOOPS


def _jit(numba: Any, fn: Any, **options: Any) -> Any:
    try:
        return numba.njit(cache=True, nogil=True, error_model="numpy", **options)(fn)
    except RuntimeError:  # no writable cache location: compile at each process start
        return numba.njit(nogil=True, error_model="numpy", **options)(fn)


def _build() -> Any:  # noqa: C901 - the loops are defined together so numba compiles them lazily
    import numba

    def jit(fn: Any) -> Any:
        return _jit(numba, fn)

    def inline(fn: Any) -> Any:  # inlined into its callers (numba's IR inlining)
        return _jit(numba, fn, inline="always")

    @jit
    def dense_dot(a: Any, b: Any, n: int) -> float:
        """``fast._compiled``'s dot product: four running sums, then the tail."""
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
        """k from the dot product (0 linear, 1 poly, 2 rbf), as ``fast._compiled``."""
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

    @inline
    def decide(t: int, j: int, scores: Any, Y: Any, tau: float, lam_terms: Any,
               use_lam: bool, bound: int, alpha: Any, b: Any, flags: Any,
               wants: Any, state: Any) -> int:
        """Adds b and the lambda term to the K scores of trial t and tests them: flags,
        ``wants[k]`` (learner k updates); returns -2 when a score is not finite, else the
        number of learners that update."""
        K = scores.shape[0]
        count = 0
        for k in range(K):
            s = scores[k] + b[k]
            if use_lam:
                if alpha[j, k] > 0:
                    s += lam_terms[j, k]
                else:
                    s += 0.0
            if not math.isfinite(s):
                state[0] = s
                return -2
            margin = Y[j, k] * s
            f = MISTAKE if margin <= 0 else 0
            wants[k] = False
            if margin <= tau:
                if bound < 0 or alpha[j, k] < bound:
                    f |= UPDATE
                    wants[k] = True
                    count += 1
                else:
                    f |= BLOCKED
            flags[k, t] = f
        return count

    @jit
    def ovr_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, Y: Any,
                   epochs: int, eta: float, C: float, tau: float, lam_terms: Any,
                   use_lam: bool, bound: int, W: Any, b: Any, alpha: Any, slot: Any,
                   n_support: Any, flags: Any, state: Any) -> int:
        """W is K x n (C order), updated in place with b (K) and alpha (T x K); slot[j] is
        set to the next support id at example j's first update; flags is K x (epochs T).
        Returns DONE or the first trial with a score that is not finite (state[0])."""
        T = Y.shape[0]
        K = W.shape[0]
        etaC = eta * C
        scores = np.zeros(K)
        wants = np.zeros(K, dtype=np.bool_)
        S = n_support[0]
        j = -1
        for t in range(epochs * T):
            j += 1
            if j == T:
                j = 0
            if sparse:
                lo, hi = indptr[j], indptr[j + 1]
                for k in range(K):
                    s = 0.0
                    for q in range(lo, hi):
                        s += data[q] * W[k, indices[q]]
                    scores[k] = s
            elif K == 1:
                scores[0] = np.dot(X[j], W[0])
            else:
                np.dot(W, X[j], scores)
            count = decide(t, j, scores, Y, tau, lam_terms, use_lam, bound, alpha, b,
                           flags, wants, state)
            if count < 0:
                n_support[0] = S
                return t
            if count == 0:
                continue
            if slot[j] < 0:
                slot[j] = S
                S += 1
            for k in range(K):
                if not wants[k]:
                    continue
                label = Y[j, k]
                step = eta * label
                if sparse:
                    for q in range(indptr[j], indptr[j + 1]):
                        W[k, indices[q]] += step * data[q]
                else:
                    row = X[j]
                    for i in range(W.shape[1]):
                        W[k, i] += step * row[i]
                alpha[j, k] += 1
                b[k] += etaC * label
        n_support[0] = S
        return DONE

    @jit
    def ovr_dual(X: Any, sq: Any, Y: Any, epochs: int, start: int, kind: int, degree: int,
                 gamma: float, coef0: float, eta: float, C: float, tau: float,
                 lam_terms: Any, use_lam: bool, bound: int, rows: Any, sq_rows: Any,
                 coef: Any, b: Any, alpha: Any, slot: Any, n_support: Any, flags: Any,
                 state: Any) -> int:
        """Dense X from trial ``start`` on.  rows (capacity x n, C order), sq_rows and coef
        (capacity x K) are the support store: the first n_support[0] entries are in use
        (earlier calls' supports first).  Returns DONE, the first trial with a score that
        is not finite, or FULL_BASE - t when trial t needs a support and the store is full
        (nothing of trial t done)."""
        T, n = X.shape
        K = Y.shape[1]
        capacity = rows.shape[0]
        etaC = eta * C
        scores = np.zeros(K)
        wants = np.zeros(K, dtype=np.bool_)
        kv = np.zeros(capacity)
        S = n_support[0]
        j = start % T - 1
        for t in range(start, epochs * T):
            j += 1
            if j == T:
                j = 0
            x = X[j]
            if slot[j] < 0 and S == capacity:
                n_support[0] = S
                return FULL_BASE - t
            if K == 1:  # the binary loop's sum, in the binary loop's order
                acc = 0.0
                for s in range(S):
                    d = dense_dot(rows[s], x, n)
                    acc += coef[s, 0] * kernel_value(kind, degree, gamma, coef0, d,
                                                     sq_rows[s], sq[j])
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
            count = decide(t, j, scores, Y, tau, lam_terms, use_lam, bound, alpha, b,
                           flags, wants, state)
            if count < 0:
                n_support[0] = S
                return t
            if count == 0:
                continue
            if slot[j] < 0:
                slot[j] = S
                rows[S] = x
                sq_rows[S] = sq[j]
                coef[S] = 0.0
                S += 1
            s_j = slot[j]
            for k in range(K):
                if wants[k]:
                    label = Y[j, k]
                    alpha[j, k] += 1
                    b[k] += etaC * label
                    coef[s_j, k] = eta * alpha[j, k] * label
        n_support[0] = S
        return DONE

    @jit
    def kernel_block(X: Any, lo: int, hi: int, sq: Any, rows: Any, sq_rows: Any, S: int,
                     kind: int, degree: int, gamma: float, coef0: float, out: Any) -> None:
        """out[i - lo, s] = k(x_s, x_i) for the examples lo .. hi-1 and the first S
        supports, one matrix-vector product (``dgemv``) per example; for the Gaussian
        kernel only the exponent -gamma max(|x_s|^2 + |x_i|^2 - 2 x_s.x_i, 0): the caller
        takes numpy's vectorised exp of the whole block."""
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
        """out[i] = sum_s Kb[i, s] coef[s] (one ``dgemv`` per row); a kernel value that is
        not finite counts only in the learners whose coefficient on it is not 0."""
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
    def ovr_dual_block(X: Any, sq: Any, Y: Any, first: int, stop: int, start: int,
                       trial0: int, S0: int, Kb: Any, base: Any, kind: int, degree: int,
                       gamma: float, coef0: float, eta: float, C: float, tau: float,
                       lam_terms: Any, use_lam: bool, bound: int, rows: Any, sq_rows: Any,
                       coef: Any, b: Any, alpha: Any, slot: Any, n_support: Any, flags: Any,
                       state: Any) -> int:
        """Examples first .. stop-1 of one epoch (trial trial0 + j for example j), from
        example ``start`` on.  ``base`` (rows of the block x K) holds sum_s coef_s k(x_s, x_j)
        over the S0 supports of the block's start, ``Kb`` those kernel values (block x S0).
        An update adds its term step k(x_u, x_j) to the learner's base of the rest of the
        block: from Kb for a support of the block's start, else from kernel values computed
        here.  Returns DONE, the first trial with a score that is not finite, or
        FULL_BASE - t (store full; nothing of trial t done)."""
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
            count = decide(t, j, base[j - first], Y, tau, lam_terms, use_lam, bound, alpha,
                           b, flags, wants, state)
            if count < 0:
                n_support[0] = S
                return t
            if count == 0:
                continue
            x = X[j]
            if slot[j] < 0:
                slot[j] = S
                rows[S] = x
                sq_rows[S] = sq[j]
                coef[S] = 0.0
                S += 1
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
                if not wants[k]:
                    continue
                label = Y[j, k]
                alpha[j, k] += 1
                b[k] += etaC * label
                coef[s_j, k] = eta * alpha[j, k] * label
                step = eta * label
                for r in range(rest):
                    base[j + 1 + r - first, k] += step * column[r]
        n_support[0] = S
        return DONE

    class Loops:
        pass

    out = Loops()
    out.ovr_primal = ovr_primal  # type: ignore[attr-defined]
    out.ovr_dual = ovr_dual  # type: ignore[attr-defined]
    out.ovr_dual_block = ovr_dual_block  # type: ignore[attr-defined]
    out.kernel_block = kernel_block  # type: ignore[attr-defined]
    out.block_scores = block_scores  # type: ignore[attr-defined]
    return out
