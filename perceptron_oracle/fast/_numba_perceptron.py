"""The Perceptron's compiled loops (numba): the primal per-trial loop, which also builds the
averaged and the longest survivor's w as it goes, and the walk over a block of kernel values
of the kernel dual; with the trial's test that the one-vs-rest learners
(``fast._numba_multiclass``) share.  The front is ``fast._compiled`` (and
``fast.perceptron``); the shared helpers are ``fast._numba``'s, the state slots
``fast._slots``' ``PERCEPTRON_*`` and ``PERCEPTRON_DUAL_*``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._flags import BLOCKED, MISTAKE, UPDATE
from ._numba import add_row, dual_block_base, dual_block_column, jit, sparse_dot
from ._slots import (
    PERCEPTRON_B,
    PERCEPTRON_BAD_SCORE,
    PERCEPTRON_LONGEST,
    PERCEPTRON_SUPPORTS,
    PERCEPTRON_VOTES,
)

# -- the trial's test -----------------------------------------------------------------------------

@jit(inline=True)
def plus_lambda(s: float, count: int, term: float) -> float:
    """s plus the lambda term of an example updated ``count`` times (the numpy path adds
    0.0 when it has not been: -0.0 becomes 0.0 there too)."""
    if count > 0:
        return s + term
    return s + 0.0


@jit(inline=True)
def perceptron_flag(score: float, label: float, tau: float, count: int, bound: int) -> int:
    """The Perceptron's test of one trial (SPEC.md section 11): MISTAKE when y s <= 0; at
    y s <= tau UPDATE, or BLOCKED when the example has ``bound`` updates already."""
    margin = label * score
    f = MISTAKE if margin <= 0 else 0
    if margin <= tau:
        if bound < 0 or count < bound:
            f |= UPDATE
        else:
            f |= BLOCKED
    return f


@jit(inline=True)
def perceptron_test(t: int, j: int, s: float, y: Any, tau: float, lam_terms: Any,
                    use_lam: bool, bound: int, alpha: Any, scores: Any,
                    record: bool) -> tuple[float, int]:
    """Trial t on example j, with s the score plus b: the lambda term added, then (score,
    flags), the score recorded when ``record``; flags -1 when the score is not finite.
    ``perceptron_primal`` writes the test out: this helper, inlined there, made its CSR
    loop 8% slower (26 -> 28 ms on the benchmark's 25% updates)."""
    if use_lam:
        s = plus_lambda(s, alpha[j], lam_terms[j])
    if not math.isfinite(s):
        return s, -1
    if record:
        scores[t] = s
    return s, perceptron_flag(s, y[j], tau, alpha[j], bound)


# -- the primal loop and the averaged and longest survivor's hypotheses ---------------------------

@jit
def fold_and_add(row: Any, step: float, w: Any, averaged: Any, votes: int) -> None:
    """w += step row in place (a dense row), and before each coordinate w_i changes the
    averaged w_i (``averaged[i, 0]``) gains (the votes cast since w_i last changed) w_i
    (``averaged[i, 1]``: the vote count then): Freund & Schapire's sum_k c_k w_k (SPEC.md
    11.3) accumulated per coordinate as vote count times weight, without cancellation.  The
    counts are exact in float64."""
    cast = float(votes)
    for i in range(w.shape[0]):
        wi = w[i]
        averaged[i, 0] += (cast - averaged[i, 1]) * wi
        averaged[i, 1] = cast
        w[i] = wi + step * row[i]


@jit
def fold_and_add_csr(indptr: Any, indices: Any, data: Any, j: int, step: float, w: Any,
                     averaged: Any, votes: int) -> None:
    """``fold_and_add`` for CSR row j, touching only its stored entries' coordinates.  The
    two numbers of a coordinate share 16 bytes: on the 100,000 x 20,000 CSR benchmark at
    25% updates the fold adds about 0.035-0.045 us per trial to the loop's plain
    ``add_row``, from two separate arrays 0.055, with the longest survivor's w and its save
    mark in the same 32 bytes 0.08 (``save_survivor`` keeps that w apart); w_i and the
    averaged w_i in one 16-byte pair (the vote counts apart, int32), so that the score's
    gather brings the fold's line, no faster (the gather's lines double).  Apart from the
    dense fold: one function for both layouts, its loop testing the layout per coordinate
    (hoisted or not), made the whole loop about 1 ms (4%) slower there."""
    cast = float(votes)
    for k in range(np.uintp(indptr[j]), np.uintp(indptr[j + 1])):
        i = np.uintp(indices[k])
        wi = w[i]
        averaged[i, 0] += (cast - averaged[i, 1]) * wi
        averaged[i, 1] = cast
        w[i] = wi + step * data[k]


@jit
def save_survivor(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                  eta: float, w: Any, tally: Any, pending: int) -> None:
    """The longest survivor's w (``tally[1, :, 0]``) becomes the current w, at the update
    that ends a new record holder (Figure 2's "w_l.s. <- w_k").  It held w as it was
    ``pending`` updates ago; their examples are ``tally[1, :pending, 1]`` when that is fewer
    than ``survivor_backlog`` allows: their rows are added in their order, the additions w
    took, so the result is w bit for bit; more, and w is copied."""
    survivor = tally[1, :, 0]
    if pending > survivor_backlog(indptr, sparse, w.shape[0]):
        survivor[:] = w
        return
    for u in range(pending):
        j = int(tally[1, u, 1])
        add_row(X, indptr, indices, data, sparse, j, eta * y[j], survivor)


@jit(inline=True)
def survivor_backlog(indptr: Any, sparse: bool, n: int) -> int:
    """The most updates ``save_survivor`` replays rather than copy w: as many as, at the
    mean stored entries per row (plus one), add up to w's n coordinates; none on dense
    rows (a row is n coordinates)."""
    if not sparse:
        return 0
    rows = indptr.shape[0] - 1
    per_row: int = n * rows // (indptr[rows] + rows)
    return per_row


@jit
def finish_hypotheses(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                      eta: float, w: Any, tally: Any, history: Any, updates: int, votes: int,
                      folding: bool, pending: int, last_holds: bool) -> None:
    """The run's end: the averaged w from the history of the ``updates`` when the loop did
    not fold (``catch_up``), every coordinate folded as ``fold_and_add`` would before a
    change, and the longest survivor saved if it is the last hypothesis (``last_holds``)."""
    averaged = tally[0]
    if not folding:
        catch_up(X, indptr, indices, data, sparse, y, eta, history, updates, votes, averaged)
    for i in range(w.shape[0]):
        averaged[i, 0] += (votes - averaged[i, 1]) * w[i]
    if last_holds:
        save_survivor(X, indptr, indices, data, sparse, y, eta, w, tally, pending)


@jit
def catch_up(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any, eta: float,
             history: Any, count: int, votes: int, averaged: Any) -> None:
    """The averaged w ``fold_and_add`` would hold after the first ``count`` updates, from
    their history (example, votes cast before it) in one pass over their rows: w_i sums
    (votes - votes before update u) eta y x_i over the updates u, folded up to ``votes``."""
    for u in range(count):
        j = history[u, 0]
        share = (votes - history[u, 1]) * (eta * y[j])
        lo = np.uintp(indptr[j]) if sparse else np.uintp(0)
        stop = np.uintp(indptr[j + 1]) - lo if sparse else np.uintp(averaged.shape[0])
        row = X[0] if sparse else X[j]
        for k in range(stop):
            i, x = (np.uintp(indices[lo + k]), data[lo + k]) if sparse else (k, row[k])
            averaged[i, 0] += share * x
    for i in range(averaged.shape[0]):
        averaged[i, 1] = votes


@jit
def perceptron_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                      epochs: int, eta: float, C: float, tau: float, lam_terms: Any,
                      use_lam: bool, bound: int, w: Any, alpha: Any, state: Any, flags: Any,
                      scores: Any, record: bool, tally: Any, history: Any,
                      fold_from: int, build: bool) -> int:
    """state: ``fast._slots``' PERCEPTRON_B (in, out), _BAD_SCORE, _VOTES (the total votes)
    and _LONGEST (the longest survivor's index); returns the first trial with a non-finite
    score, or -1.  Builds the averaged and the longest survivor's w
    as it goes (``_compiled_primal`` says how) unless ``build`` is False."""
    b, t = state[PERCEPTRON_B], -1
    votes, last, blocked, most, longest, k, pending, folding = 0, -1, 0, -1, -1, 0, 0, False
    room = survivor_backlog(indptr, sparse, w.shape[0]) if build else 0
    for _ in range(epochs):
        for j in range(y.shape[0]):
            t += 1
            s = sparse_dot(data, indices, indptr[j], indptr[j + 1], w) if sparse else \
                np.dot(X[j], w)
            s += b
            if use_lam:
                s = plus_lambda(s, alpha[j], lam_terms[j])
            if not math.isfinite(s):
                state[PERCEPTRON_B], state[PERCEPTRON_BAD_SCORE] = b, s
                return t
            if record:
                scores[t] = s
            f = perceptron_flag(s, y[j], tau, alpha[j], bound)
            if f & UPDATE:
                if build and t - last - 1 - blocked > most:  # h_k ends: the longest so far
                    most, longest = t - last - 1 - blocked, k
                    save_survivor(X, indptr, indices, data, sparse, y, eta, w, tally, pending)
                    pending = 0
                if build and not folding and k >= fold_from and 8 * k >= t:
                    catch_up(X, indptr, indices, data, sparse, y, eta, history, k, votes,
                             tally[0])
                    folding = True
                if folding and sparse:
                    fold_and_add_csr(indptr, indices, data, j, eta * y[j], w, tally[0], votes)
                elif folding:
                    fold_and_add(X[j], eta * y[j], w, tally[0], votes)
                else:
                    if build:
                        history[k, 0], history[k, 1] = j, votes
                    add_row(X, indptr, indices, data, sparse, j, eta * y[j], w)
                if pending < room:
                    tally[1, pending, 1] = j
                pending += 1
                alpha[j] += 1
                b += eta * C * y[j]
                last, blocked, k = t, 0, k + 1
            elif f & BLOCKED:
                blocked += 1
            else:
                votes += 1
            flags[t] = f
    longest = k if t - last - blocked > most else longest
    if build:
        finish_hypotheses(X, indptr, indices, data, sparse, y, eta, w, tally, history, k,
                          votes, folding, pending, longest == k)
    state[PERCEPTRON_B], state[PERCEPTRON_VOTES], state[PERCEPTRON_LONGEST] = b, votes, longest
    return -1


# -- the kernel dual's block walk -----------------------------------------------------------------

@jit
def perceptron_dual_block(X: Any, sq: Any, y: Any, lo: int, hi: int, t0: int, Kt: Any,
                          base: Any, kind: int, degree: int, gamma: float, coef0: float,
                          eta: float, C: float, tau: float, lam_terms: Any, use_lam: bool,
                          bound: int, alpha: Any, slot: Any, rows: Any, sq_rows: Any,
                          coef: Any, state: Any, flags: Any, scores: Any, record: bool) -> int:
    """The Perceptron's dual over the examples lo .. hi-1 of one epoch (trial t0 + j for example
    j): the score of trial t is sum_s coef_s k(x_s, x_j) over the support examples (coef_s = eta
    alpha_s y_s) + b (+ the lambda term).  Kt[s, i - lo] = k(x_s, x_i) against the S0 =
    state[PERCEPTRON_SUPPORTS] supports of the block's start (rows: the support vectors, sq_rows
    their squared norms; room for hi - lo more), so the score of example i starts as sum_s coef_s
    Kt[s, i - lo]; an update on example j adds eta y_j k(x_j, x_i) to the scores of the block's
    later examples: Kt's row when x_j is one of the S0 supports (an example occurs once in a block,
    so every support that enters in the block is new to it), else kernel values computed here
    (``dual_block_column``).  state: PERCEPTRON_B, _BAD_SCORE, _SUPPORTS (the support size);
    returns the first trial with a non-finite score, or -1."""
    b = state[PERCEPTRON_B]
    S = int(state[PERCEPTRON_SUPPORTS])
    S0 = S
    dual_block_base(Kt, coef, S0, base)
    for j in range(lo, hi):
        t = t0 + j
        score, f = perceptron_test(t, j, base[j - lo] + b, y, tau, lam_terms, use_lam,
                                   bound, alpha, scores, record)
        if f < 0:
            state[PERCEPTRON_B], state[PERCEPTRON_BAD_SCORE] = b, score
            state[PERCEPTRON_SUPPORTS] = S
            return t
        if f & UPDATE:
            label = y[j]
            if slot[j] < 0:
                slot[j] = S
                rows[S] = X[j]
                sq_rows[S] = sq[j]
                S += 1
                dual_block_column(X, sq, j, lo, hi, kind, degree, gamma, coef0,
                                  eta * label, base)
            else:
                column = Kt[slot[j]]
                for i in range(j + 1, hi):
                    base[i - lo] += eta * label * column[i - lo]
            alpha[j] += 1
            b += eta * C * label
            coef[slot[j]] = eta * alpha[j] * label
        flags[t] = f
    state[PERCEPTRON_B], state[PERCEPTRON_SUPPORTS] = b, S
    return -1
