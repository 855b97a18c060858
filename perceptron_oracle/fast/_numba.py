"""The compiled per-trial loops (numba) of the Perceptron (primal, and the dual's blocks of
kernel values), the p-norm Perceptron, ROMMA (primal and kernel dual), PUMMA (any p), the
Perceptron's one-vs-rest learners, and the loops around in-place BLAS of HO's primal and
implicit forms and SOP's primal, with the jitted pieces they share.

What each loop computes, and why, is said by its family's front module: ``fast._compiled``
(Perceptron, p-norm Perceptron; engine choice and the flags), ``fast._compiled_romma``,
``fast._compiled_pumma``, ``fast._compiled_multiclass``, ``fast.higher_order`` and
``fast.second_order`` (``ho_primal``, ``ho_explicit_b``, ``sop_primal``).  This module imports
numba, so it is imported only by those fronts, at the first compiled run
(``fast._compiled.kernels``).

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
from collections.abc import Callable
from typing import Any, TypeVar, cast, overload

import numba
import numpy as np

from ._flags import BLOCKED, DONE, FULL_BASE, MISTAKE, TINY_SQUARES, UPDATE

F = TypeVar("F", bound=Callable[..., Any])


@overload
def jit(fn: F, *, reassoc: bool = False, inline: bool = False) -> F: ...
@overload
def jit(fn: None = None, *, reassoc: bool = False, inline: bool = False
        ) -> Callable[[F], F]: ...
def jit(fn: F | None = None, *, reassoc: bool = False, inline: bool = False
        ) -> F | Callable[[F], F]:
    """``numba.njit`` with this module's options (module docstring).  ``reassoc``: reductions
    compiled with reassociation allowed (LLVM vectorises them; the result is another rounding
    of the same sum); only ``reassoc``, so NaN and infinity keep their IEEE meaning and a
    loop's finiteness test stays valid.  ``inline``: inlined into its callers (numba's IR
    inlining).  Typed as the function it compiles: a dispatcher is called as the function
    is (numba's own types are not visible to mypy)."""
    options: dict[str, Any] = {"nogil": True, "error_model": "numpy"}
    if reassoc:
        options["fastmath"] = {"reassoc"}
    if inline:
        options["inline"] = "always"

    def compile_(f: F) -> F:
        try:
            return cast(F, numba.njit(cache=True, **options)(f))
        except RuntimeError:  # no writable cache location: compile in each process
            return cast(F, numba.njit(**options)(f))

    return compile_ if fn is None else compile_(fn)


# -- shared products and per-trial steps --------------------------------------------------------

@jit(inline=True)
def sparse_dot(data: Any, indices: Any, lo: int, hi: int, w: Any) -> float:
    """The CSR entries lo .. hi-1 against w: a gather into four running sums (one sum makes
    every addition wait for the last; two left the Perceptron primal's loop 0.01-0.02 us per
    trial slower on 200-entry rows, eight and other tails no faster), then the tail into
    the first.  Positions and indices are unsigned: a signed index costs a wraparound check
    per access, which made this loop 1.4x scipy's CSR product."""
    a0 = a1 = a2 = a3 = 0.0
    one, two, three, four = np.uintp(1), np.uintp(2), np.uintp(3), np.uintp(4)
    k, stop = np.uintp(lo), np.uintp(hi)
    while k + four <= stop:
        a0 += data[k] * w[np.uintp(indices[k])]
        a1 += data[k + one] * w[np.uintp(indices[k + one])]
        a2 += data[k + two] * w[np.uintp(indices[k + two])]
        a3 += data[k + three] * w[np.uintp(indices[k + three])]
        k += four
    while k < stop:
        a0 += data[k] * w[np.uintp(indices[k])]
        k += one
    return (a0 + a1) + (a2 + a3)


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
def add_row(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, j: int,
            step: float, w: Any) -> None:
    """w += step X[j], in place."""
    if sparse:
        for k in range(np.uintp(indptr[j]), np.uintp(indptr[j + 1])):
            w[np.uintp(indices[k])] += step * data[k]
    else:
        row = X[j]
        for i in range(w.shape[0]):
            w[i] += step * row[i]


@jit
def weighted_rows(X: Any, rows: Any, coef: Any, out: Any) -> None:
    """out[:, c] += sum_r coef[r, c] X[rows[r]] for every column c of coef (dense X; out:
    n x m, in place), reading each selected row of X once and copying none."""
    m = coef.shape[1]
    for r in range(rows.shape[0]):
        row = X[rows[r]]
        for i in range(row.shape[0]):
            for c in range(m):
                out[i, c] += coef[r, c] * row[i]


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


# -- the Perceptron and the p-norm Perceptron (fast._compiled) ----------------------------------

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
    """state = [b, bad score, total votes, longest survivor's index]; returns the first
    trial with a non-finite score, or -1.  Builds the averaged and the longest survivor's w
    as it goes (``_compiled_primal`` says how) unless ``build`` is False."""
    b, t = state[0], -1
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
                state[0], state[1] = b, s
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
    state[0], state[2], state[3] = b, votes, longest
    return -1


@jit
def dual_block_kernel(sq: Any, lo: int, hi: int, sq_rows: Any, S0: int, kind: int,
                      degree: int, gamma: float, coef0: float, Kt: Any) -> None:
    """Kt[s, i - lo] holds x_s . x_i for the first S0 supports and the examples lo .. hi-1;
    turns it, in place, into ``kernel_value``'s k(x_s, x_i) (the polynomial kernel by
    repeated products), for the Gaussian kernel into the exponent
    -gamma max(|x_s|^2 + |x_i|^2 - 2 x_s.x_i, 0) only: the caller takes numpy's vectorised
    exp of the block."""
    if kind == 0:
        return
    for s in range(S0):
        row = Kt[s]
        if kind == 1 and degree == 2:  # the common case, in a loop LLVM vectorises
            for r in range(hi - lo):
                base = gamma * row[r] + coef0
                row[r] = base * base
        elif kind == 1:
            for r in range(hi - lo):
                base = gamma * row[r] + coef0
                value = base
                for _ in range(degree - 1):
                    value *= base
                row[r] = value
        else:
            for r in range(hi - lo):
                d = sq_rows[s] + sq[lo + r] - 2.0 * row[r]
                if d < 0.0:
                    d = 0.0
                row[r] = -gamma * d


@jit
def dual_block_base(Kt: Any, coef: Any, S0: int, base: Any) -> None:
    """base[i] = sum_s coef[s] Kt[s, i] over the first S0 supports, each sum in support
    order as the per-trial sum over the support set adds it (a support at a time over the
    whole block: independent sums, which LLVM vectorises without reordering any)."""
    B = Kt.shape[1]
    for i in range(B):
        base[i] = 0.0
    for s in range(S0):
        c = coef[s]
        row = Kt[s]
        for i in range(B):
            base[i] += c * row[i]


@jit(reassoc=True)
def dual_block_column(X: Any, sq: Any, j: int, lo: int, hi: int, kind: int, degree: int,
                      gamma: float, coef0: float, step: float, base: Any) -> None:
    """base[i - lo] += step k(x_j, x_i) for the examples i = j+1 .. hi-1 (x_j a support
    that entered in this block: its kernel values are not in the block's Kb)."""
    x = X[j]
    n = X.shape[1]
    for i in range(j + 1, hi):
        row = X[i]
        d = 0.0
        for f in range(n):
            d += x[f] * row[f]
        base[i - lo] += step * kernel_value(kind, degree, gamma, coef0, d, sq[j], sq[i])


@jit
def perceptron_dual_block(X: Any, sq: Any, y: Any, lo: int, hi: int, t0: int, Kt: Any,
                          base: Any, kind: int, degree: int, gamma: float, coef0: float,
                          eta: float, C: float, tau: float, lam_terms: Any, use_lam: bool,
                          bound: int, alpha: Any, slot: Any, rows: Any, sq_rows: Any,
                          coef: Any, state: Any, flags: Any, scores: Any, record: bool) -> int:
    """The Perceptron's dual over the examples lo .. hi-1 of one epoch (trial t0 + j for
    example j): the score of trial t is sum_s coef_s k(x_s, x_j) over the support examples
    (coef_s = eta alpha_s y_s) + b (+ the lambda term).  Kt[s, i - lo] = k(x_s, x_i) against
    the S0 = state[2] supports of the block's start (rows: the support vectors, sq_rows
    their squared norms; room for hi - lo more), so the score of example i starts as
    sum_s coef_s Kt[s, i - lo]; an update on example j adds eta y_j k(x_j, x_i) to the
    scores of the block's later examples: Kt's row when x_j is one of the S0 supports
    (an example occurs once in a block, so every support that enters in the block is new
    to it), else kernel values computed here (``dual_block_column``).  state = [b, bad
    score, support size]; returns the first trial with a non-finite score, or -1."""
    b = state[0]
    S = int(state[2])
    S0 = S
    dual_block_base(Kt, coef, S0, base)
    for j in range(lo, hi):
        t = t0 + j
        score, f = perceptron_test(t, j, base[j - lo] + b, y, tau, lam_terms, use_lam,
                                   bound, alpha, scores, record)
        if f < 0:
            state[0], state[1], state[2] = b, score, S
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
    state[0], state[2] = b, S
    return -1


@jit
def abs_max_bits(v: Any) -> int:
    """The largest |v_i| as its IEEE bit pattern (sign bit cleared: NaN above infinity above
    every finite value).  For non-negative doubles the integer order is the float order, and
    an integer maximum vectorises (a float one, whose NaN rules LLVM must keep, does not)."""
    bits = v.view(np.int64)
    top = 0
    for i in range(bits.shape[0]):
        b = bits[i] & 0x7FFFFFFFFFFFFFFF
        if b > top:
            top = b
    return top


@jit(inline=True)
def whole_power(t: float, whole: int) -> float:
    """t^whole for an integer 1 <= ``whole`` <= 8: t times t, whole - 1 times in order; each
    of the seven possible factors is t or 1.0 (a product by 1.0 is exact), so a loop calling
    it has no inner loop and vectorises."""
    pw = t
    pw *= t if whole >= 2 else 1.0
    pw *= t if whole >= 3 else 1.0
    pw *= t if whole >= 4 else 1.0
    pw *= t if whole >= 5 else 1.0
    pw *= t if whole >= 6 else 1.0
    pw *= t if whole >= 7 else 1.0
    pw *= t if whole >= 8 else 1.0
    return pw


@jit(reassoc=True)
def pnorm_powers(v: Any, inv: float, whole: int, q: float, w: Any) -> float:
    """w_i = t_i^q with t_i = |v_i| inv (inv = 2^-e exactly: the product is the correctly
    rounded |v_i| / 2^e), and returns sum_i t_i^q t_i.  For an integer q = ``whole`` <= 8 the
    power is ``whole_power``'s."""
    total = 0.0
    if whole:
        for i in range(v.shape[0]):
            t = abs(v[i]) * inv
            pw = whole_power(t, whole)
            w[i] = pw
            total += pw * t
    else:
        for i in range(v.shape[0]):
            t = abs(v[i]) * inv
            pw = t ** q
            w[i] = pw
            total += pw * t
    return total


@jit
def link_inverse_scalar(v: Any, p: float, w: Any) -> None:
    """``link_inverse`` one element at a time (a float maximum, divisions by the scale),
    for the v the vectorised passes leave out: v = 0, a largest |v_i| that is subnormal or
    at least 2^1023 (2^-e or 2^e would leave float64), or not finite."""
    n = v.shape[0]
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
    q = p - 1.0
    whole = int(q) if q == math.floor(q) and q <= 8.0 else 0   # t^q by q - 1 products
    for i in range(n):
        ti = abs(v[i]) / scale
        if whole:
            pw = ti
            for _ in range(whole - 1):
                pw *= ti
        else:
            pw = ti ** q
        w[i] = pw
        total += pw * ti
    factor = scale / total ** ((p - 2.0) / p)
    for i in range(n):
        w[i] = math.copysign(w[i], v[i]) * factor


# f^-1 = g, the p-norm link: defined (exact and float64) in ``perceptron_oracle.pnorm`` and
# ``perceptron_oracle.pnorm_float`` (``link_inverse``, its "binary" scaling); compiled here
# under the same name, its integer powers by products.
@jit
def link_inverse(v: Any, p: float, w: Any) -> None:
    """w = g(v) = f^-1(v), the gradient of ||v||_p^2 / 2 (``pnorm_float.link_inverse``), in
    place, on v scaled by 2^-e, 2^e the power of two just above max |v_i| (g is
    1-homogeneous).  Three
    passes that vectorise: the maximum's exponent from the bit patterns, the powers with
    their sum, the signs and the normaliser.  For an integer p - 1 up to 8 the powers are
    repeated products (p - 2 roundings, within the reference's (p + 1) gamma allowance for
    them), several times faster than ``pow``; the sum of the powers is another rounding of
    the same sum (SPEC.md 3: the allowance holds for any summation order)."""
    n = v.shape[0]
    if p == 2.0:
        for i in range(n):
            w[i] = v[i]
        return
    biased = abs_max_bits(v) >> 52
    if biased == 0 or biased >= 2046:   # v = 0, subnormal, >= 2^1023, inf or NaN
        link_inverse_scalar(v, p, w)
        return
    e = biased - 1022                   # math.frexp(max |v_i|)[1]
    q = p - 1.0
    whole = int(q) if q == math.floor(q) and q <= 8.0 else 0
    total = pnorm_powers(v, math.ldexp(1.0, -e), whole, q, w)
    # ||t||_p^(p-2) = total^((p-2)/p): for p = 4 the square root (correctly rounded; pow
    # agrees but for its last bit, and costs about a fifth of the whole gradient at n = 200)
    norm = math.sqrt(total) if p == 4.0 else total ** ((p - 2.0) / p)
    factor = math.ldexp(1.0, e) / norm
    for i in range(n):
        w[i] = math.copysign(w[i], v[i]) * factor



@jit
def pnorm_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                 epochs: int, p: float, v: Any, w: Any, state: Any, mistakes: Any,
                 scores: Any, record: bool) -> int:
    """state = [mistakes, bad score]; the mistake trials (each an update) are written to the
    front of ``mistakes``.  Returns the first trial with a non-finite score, or -1.  A dense
    row's score is ``row_dot`` (a vectorised sum: another rounding of the same sum, SPEC.md
    3)."""
    T = y.shape[0]
    t = -1
    nm = 0
    for _ in range(epochs):
        for j in range(T):
            t += 1
            if sparse:
                s = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
            else:
                s = row_dot(X, j, w)
            if not math.isfinite(s):
                state[0] = nm
                state[1] = s
                return t
            if record:
                scores[t] = s
            label = y[j]
            if label * s <= 0:
                mistakes[nm] = t
                nm += 1
                add_row(X, indptr, indices, data, sparse, j, label, v)
                link_inverse(v, p, w)
    state[0] = nm
    return -1


# -- ROMMA's primal form (fast._compiled_romma) -------------------------------------------------

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
def step_case(c: float, zz: float, vz: float, vv: float) -> int:
    """Problem (2)/(3) for p = 2 (``fast.maximum_margin.step2``, constant c): 0 infeasible
    (z = 0), 1 case (i), eq. (15), 2 case (ii), eq. (19), which needs the residual.  The
    closed forms are compiled without reassociation (their callers reassociate their sums),
    so each is evaluated as written."""
    if not zz > 0.0:
        return 0
    if vv == 0.0 or c * vz >= zz * vv:
        return 1
    return 2


@jit
def case_two(c: float, zz: float, vz: float, vv: float, res: float,
             singular: float) -> tuple[bool, float, float]:
    """Case (ii), eq. (19), from the residual res = ||v - (v.z/||z||^2) z||^2: (feasible,
    lambda, eta) with D = ||z||^2 res."""
    det = zz * res
    if det <= singular * zz * vv:
        return False, 0.0, 0.0
    return True, vv * (c - vz) / det, (zz * vv - c * vz) / det


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
    """state = [last updated example, bad score, mistakes, updates]; w the start (0 for a
    run), zbuf n zeros (CSR: the dense z of the residual); ``singular`` is
    ``fast.maximum_margin.RESIDUAL_SINGULAR``.  The trials of the mistakes and updates are
    written to the front of ``mistakes`` and ``updates``.  Returns the first trial with a
    score that is not finite, or -1.  A dense row's score is ``row_dot`` (a vectorised sum).
    The trial's record is written here: an inlined helper taking the arrays kept their
    locked reference counts, four a trial (``pumma_primal``)."""
    T = y.shape[0]
    last = int(state[0])
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
                state[0], state[1], state[2], state[3] = last, s, nm, nu
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
    state[0], state[2], state[3] = last, nm, nu
    return -1


# -- PUMMA's primal form, p = 2 (fast._compiled_pumma) -------------------------------------------

@jit(reassoc=True)
def row_dot(X: Any, j: int, w: Any) -> float:
    """X[j].w for dense X (a vectorised loop: in a per-trial loop it beats a BLAS call)."""
    s = 0.0
    for k in range(w.shape[0]):
        s += X[j, k] * w[k]
    return s


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
    """state = [pos, neg, b, bad score, mistakes, updates, held count] (pos, neg = -1: not
    stored); w, a (T entries, soft margin; else 1), held/mark the start (zeros, False for a
    run); z n scratch entries; ``singular``: ``fast.maximum_margin.RESIDUAL_SINGULAR``.
    Mistakes and updates (trials) go to the front of ``mistakes``, ``updates``.  Returns the
    first trial whose score (at start-up: row product with w = 0) is not finite, or -1.
    Arrays are used here or by one-loop helpers: numba keeps its locked reference counts on
    the arrays of an inlined helper (four a trial for one that wrote the trial's record) or
    of a function with several loops (``pumma_pair_update``: six a call) and prunes them
    elsewhere."""
    pos, neg, b, count = int(state[0]), int(state[1]), state[2], int(state[6])
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
                bad, state[3] = t, (s if started else d)
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
    state[0], state[1], state[2], state[4], state[5], state[6] = pos, neg, b, nm, nu, count
    return bad


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
    label: float = Y[j, k]
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


# -- HO_p's explicit B_k for p != 2 (fast.higher_order, the implicit form) ----------------------

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


# -- ROMMA's kernel dual (fast.romma, engine "numba") --------------------------------------------

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
    kind, degree = int(kernel[0]), int(kernel[1])
    zz = kernel_value(kind, degree, kernel[2], kernel[3], sq[j], sq[j], sq[j])
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
    """ROMMA's dual over the examples lo .. hi-1 of one epoch (trial t0 + j for example j):
    the score of example i starts as sum_s coef_s Kt[s, i - lo] over the S0 = state[2]
    supports of the block's start (Kt[s] = k(x_s, X[lo:hi]); krow[i - lo] is example i's
    row of Kt or -1), and each update folds into the later trials' scores
    (``romma_dual_fold``).  Mistake iff y s <= 0; update iff y s < threshold, j is not the
    last updated example (Lemma 4) and the problem is feasible (``romma_dual_update``).
    The walk stops after the update that makes limits[0] (MAX_FOLDS) updates in this block,
    or limits[1] (REFRESH) and S updates since ||v||^2 was last fresh (the caller recomputes
    it; case (i) computes it afresh).  state = [last updated example, bad score, S,
    ||v||^2, the example after the walk's last, updates since ||v||^2 was fresh].  Returns
    the first trial with a score that is not finite, or -1."""
    last, S, vv, stale = int(state[0]), int(state[2]), state[3], int(state[5])
    kind, degree, gamma, coef0 = int(kernel[0]), int(kernel[1]), kernel[2], kernel[3]
    dual_block_base(Kt, coef, S, base)
    folds = 0
    for j in range(lo, hi):
        t = t0 + j
        s = base[j - lo]
        if not math.isfinite(s):
            state[0], state[1], state[2], state[3], state[5] = last, s, S, vv, stale
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
                if folds >= limits[0] or stale >= max(limits[1], S):
                    flags[t] = f
                    hi = j + 1
                    break
        flags[t] = f
    state[0], state[2], state[3], state[4], state[5] = last, S, vv, hi, stale
    return -1


# -- PUMMA p > 2: the damped Newton on the dual (18) (fast.pumma.PNormSpace) -------------------

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


# -- PUMMA p > 2: the per-trial loop (fast._compiled_pumma, fast.pumma._pnorm_compiled) ----------

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
    in state[13:15]; 2 the Newton's residual exceeds its tolerance (the caller finishes;
    state[13:19] = alpha, beta, zs, vs, ss, target).  consts = [RESIDUAL_SINGULAR,
    CASE_TIE, NEWTON_TOLERANCE, NEWTON_MAX_STEPS, NEWTON_STOP, SINGULAR]; state[7] = tt,
    state[8:10] = the warm start ``last``."""
    a2 = slack_norm(a, held, count, -1, -1, 0.0) if soft else 0.0      # ||a||^2
    zs = 2.0 * inv_c if soft else 0.0                                   # ||E||^2 / C
    vs = (a[pos] - a[neg]) * inv_c if soft else 0.0                     # xi'_pos + xi'_neg
    ss = slack_over_c(a, held, count, -1, -1, 0.0, inv_c, a2) if soft else 0.0  # C||xi'||^2
    target = state[7] + ss                                              # ||v~||^2
    state[15], state[16], state[17], state[18] = zs, vs, ss, target
    link_inverse(z, p, Fz)                                              # f^{-1}(z)
    nz, ft = pnorm_pair_dots(Fz, z, theta)
    if nz + zs <= 0.0:
        return 0
    alpha = 2.0 / (nz + zs)
    if target == 0.0 or alpha * (ft + vs) >= target * (1.0 - consts[1]):   # case (i)
        for i in range(z.shape[0]):
            phi[i] = alpha * z[i]
        state[13], state[14] = alpha, 0.0
        return 1
    if soft:
        zz += 2.0
        zt += a[pos] - a[neg]
    s = zt / zz      # infeasible iff (z, E) is a nonpositive multiple of (theta, a)
    tt = norm2(theta) + a2
    if tt < TINY_SQUARES:    # squares of a tiny C's size: the same test, scaled
        if pnorm_parallel(z, theta, a, held, count, pos, neg, soft, zz, zt, consts[0]):
            return 0
    else:
        res = sparse_residual(theta, z, s)
        if soft:
            res += slack_norm(a, held, count, pos, neg, s)
        if zz * res <= consts[0] * zz * tt:
            return 0
    x0, x1, residual = pumma_newton(z, theta, zs, vs, ss, target, alpha, p, state[8],
                                    state[9], int(consts[3]), consts[4], consts[5], phi)
    state[13], state[14] = x0, x1
    return 2 if residual > consts[2] else 1


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
    state[7] = dense_dot(w, theta, n)
    if beta != 0.0:
        state[8], state[9] = alpha, beta
    if soft:
        slack_move(a, held, int(state[6]), pos, neg, beta, alpha)
    if sparse:
        bp = sparse_dot(data, indices, indptr[pos], indptr[pos + 1], w)
        bn = sparse_dot(data, indices, indptr[neg], indptr[neg + 1], w)
    else:
        bp, bn = row_dot(X, pos, w), row_dot(X, neg, w)
    if soft:
        bp += a[pos] * inv_c
        bn += a[neg] * inv_c
    state[0], state[1], state[2] = pos, neg, -0.5 * (bp + bn)


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
        count = hold(pos, held, mark, int(state[6]))
        state[6] = hold(neg, held, mark, count)
    status = pnorm_pair_solve(z, Fz, theta, a, held, int(state[6]), pos, neg, p, inv_c, soft,
                              zz, zt, consts, state, phi)
    if status == 1:
        pnorm_pair_apply(X, indptr, indices, data, sparse, pos, neg, p, inv_c, soft,
                         state[13], state[14], phi, theta, w, a, held, state)
    return status


@jit
def pumma_pnorm_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                       epochs: int, start: int, threshold: float, p: float, inv_c: float,
                       soft: bool, consts: Any, w: Any, theta: Any, z: Any, Fz: Any,
                       phi: Any, a: Any, held: Any, mark: Any, state: Any, mistakes: Any,
                       updates: Any, scores: Any, record: bool) -> int:
    """``pumma_primal`` for p > 2 from trial ``start``: state = [pos, neg, b, bad score,
    mistakes, updates, held count, tt, last0, last1, pending trial, pending pos, pending
    neg, alpha, beta, zs, vs, ss, target] (``pnorm_pair_solve``); w, theta = f(w), z, Fz
    and phi n entries (z, Fz, phi scratch).  Returns the first trial whose score is not
    finite, or -1; a Newton left unfinished stops the loop before its update with
    state[10:13] = (trial, pos, neg) (else state[10] = -1): the caller finishes it, applies
    it (``pnorm_pair_apply``), counts the update and resumes at the next trial."""
    pos, neg, b = int(state[0]), int(state[1]), state[2]
    nm, nu, bad, T, stop = int(state[4]), int(state[5]), -1, y.shape[0], False
    state[10] = -1.0
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
                bad, state[3], stop = t, (s if started else d), True
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
                state[0], state[1], state[2] = pp, qq, 1.0 if pp >= 0 else -1.0
            if status == 2:
                state[10], state[11], state[12], stop = t, pp, qq, True
                break
            if status == 1:
                pos, neg, b = int(state[0]), int(state[1]), state[2]
                updates[nu] = t
                nu += 1
        if stop:
            break
    state[4], state[5] = nm, nu
    return bad
