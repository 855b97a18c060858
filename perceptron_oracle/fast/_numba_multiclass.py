"""The compiled loops (numba) of the Perceptron's K one-vs-rest learners: the primal
per-trial loop and the walk over a block of kernel values of the dual.  The front is
``fast._compiled_multiclass`` (the caller ``fast.multiclass.PerceptronOvR``); the trial's
test is the binary Perceptron's (``fast._numba_perceptron``), the state slot
``fast._slots.OVR_BAD_SCORE``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._flags import DONE, FULL_BASE, UPDATE
from ._numba import add_row, dense_dot, jit, kernel_value, sparse_dot
from ._numba_perceptron import perceptron_flag, plus_lambda
from ._slots import OVR_BAD_SCORE

# -- the trial's test and update of K learners ----------------------------------------------------

@jit(inline=True)
def decide(t: int, j: int, scores: Any, Y: Any, tau: float, lam_terms: Any, use_lam: bool,
           bound: int, alpha: Any, b: Any, flags: Any, wants: Any, state: Any) -> int:
    """Adds b and the lambda term to the K scores of trial t and tests them: flags,
    ``wants[k]`` (learner k updates); returns -2 when a score is not finite (written to
    ``state[OVR_BAD_SCORE]``), else the number of learners that update."""
    count = 0
    for k in range(scores.shape[0]):
        s = scores[k] + b[k]
        if use_lam:
            s = plus_lambda(s, alpha[j, k], lam_terms[j, k])
        if not math.isfinite(s):
            state[OVR_BAD_SCORE] = s
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
    label: float = Y[j, k]
    alpha[j, k] += 1
    b[k] += etaC * label
    coef[s_j, k] = eta * alpha[j, k] * label
    return label


# -- the primal loop and the dual's block walk ----------------------------------------------------

@jit
def ovr_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, Y: Any,
               epochs: int, eta: float, C: float, tau: float, lam_terms: Any, use_lam: bool,
               bound: int, W: Any, b: Any, alpha: Any, slot: Any, n_support: Any, flags: Any,
               state: Any) -> int:
    """W is K x n (C order), updated in place with b (K) and alpha (T x K); slot[j] is set
    to the next support id at example j's first update; flags is K x (epochs T).  Returns
    DONE or the first trial with a score that is not finite (``state[OVR_BAD_SCORE]``)."""
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
def class_scores(row: Any, coef: Any, S: int, out: Any) -> None:
    """out[k] = sum_s row[s] coef[s, k] over the first S supports: one product (``dgemv``)
    for every learner k, except where a kernel value is not finite (0 * inf): then each
    learner sums only the supports its coefficient is not 0 on, as its binary run does."""
    for s in range(S):
        if not math.isfinite(row[s]):
            break
    else:
        np.dot(row[:S], coef[:S], out)
        return
    for k in range(coef.shape[1]):
        acc = 0.0
        for s in range(S):
            if coef[s, k] != 0.0:
                acc += coef[s, k] * row[s]
        out[k] = acc


@jit
def block_scores(Kb: Any, coef: Any, S: int, out: Any) -> None:
    """out[i] = sum_s Kb[i, s] coef[s] for every row i of the kernel block (``class_scores``)."""
    for i in range(Kb.shape[0]):
        class_scores(Kb[i], coef, S, out[i])


@jit
def ovr_dual_block(X: Any, sq: Any, Y: Any, first: int, stop: int, start: int, trial0: int,
                   S0: int, Kt: Any, base: Any, kind: int, degree: int, gamma: float,
                   coef0: float, eta: float, C: float, tau: float, lam_terms: Any,
                   use_lam: bool, bound: int, rows: Any, sq_rows: Any, coef: Any, b: Any,
                   alpha: Any, slot: Any, n_support: Any, flags: Any, state: Any) -> int:
    """Examples first .. stop-1 of one epoch (trial trial0 + j for example j), from example
    ``start`` on.  ``base`` (rows of the block x K) holds sum_s coef_s k(x_s, x_j) over the
    S0 supports of the block's start, ``Kt`` those kernel values (S0 x block).  An update
    adds its term step k(x_u, x_j) to the learner's base of the rest of the block: from Kt
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
                    column[r] = Kt[s_j, j + 1 + r - first]
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
