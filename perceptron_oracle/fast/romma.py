"""ROMMA (Li & Long 2002; the base of PUMMA, Ishibashi, Hatano & Takeda 2008) in float64.

Forms ``primal`` (w in float64; linear kernel; dense or CSR X) and ``dual`` (any kernel).
Both follow ``reference.romma`` trial for trial (SPEC.md 14.7) and share the
block-ahead driver: the state changes only at an update, so a block of upcoming trials is
scored with one product.  The primal form also runs as a compiled per-trial loop
(``fast._compiled_romma``; ``engine=``), the default when numba is installed, and so does the
dual: with the linear kernel by the primal's loop, with another kernel on dense X by
compiled blocks (``_dual_compiled``).

What ROMMA shares with PUMMA (the p = 2 step :func:`fast.maximum_margin.step2`, the spaces
that hold w, the update test ``Guarded``) is in ``fast.maximum_margin``; this module holds
ROMMA's model (``_Romma``: problem (2) with z = y x, c = 1), its runs and its compiled dual.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import validate
from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..reference.common import check_epochs
from ..reference.romma import PARAMS
from ..trace import Trace
from . import _compiled, _compiled_romma
from ._slots import (
    ROMMA_BAD_SCORE,
    ROMMA_DUAL_BAD_SCORE,
    ROMMA_DUAL_LAST,
    ROMMA_DUAL_LIMITS_SIZE,
    ROMMA_DUAL_MAX_FOLDS,
    ROMMA_DUAL_NEXT,
    ROMMA_DUAL_REFRESH,
    ROMMA_DUAL_STALE,
    ROMMA_DUAL_STATE_SIZE,
    ROMMA_DUAL_SUPPORTS,
    ROMMA_DUAL_VV,
    ROMMA_LAST,
    ROMMA_MISTAKES,
    ROMMA_STATE_SIZE,
    ROMMA_UPDATES,
)
from .blas_threads import OneBlasThread
from .driver import finite_final, run_blocks
from .maximum_margin import (
    RESIDUAL_SINGULAR,
    SINGULAR,
    DualSpace,
    Guarded,
    make_space,
    pair_products,
    step2,
)


class _Romma(Guarded):
    """Score w.x; update iff y w.x < 1 - delta, solving problem (2) with z = y x, c = 1."""

    def __init__(self, space: Any, y: np.ndarray, delta: float):
        self.space, self.y = space, y
        self.threshold = 1.0 - delta
        self.last = -1   # the example of the last update: y w.x = 1 exactly

    def tight(self) -> tuple[int, ...]:
        return (self.last,)

    def scores(self, start: int, stop: int) -> np.ndarray:
        scores: np.ndarray = self.space.block_scores(start, stop)
        return scores

    def solve(self, j: int, margin: float) -> Any:
        """(lambda, eta) or None (infeasible: z = 0, or z a nonpositive multiple of v)."""
        self.space.ensure(j)
        zc = [(j, float(self.y[j]))]
        zz, vz, vv = pair_products(self.space, zc)
        return step2(1.0, zz, vz, vv, residual=self.space.residual(zc))

    def apply(self, j: int, solution: tuple[float, float]) -> None:
        self.space.apply(solution[0], solution[1], [(j, float(self.y[j]))], j)
        self.last = j

    def final(self) -> dict[str, Any]:
        final: dict[str, Any] = self.space.final()
        return final


def setup(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any]
          ) -> tuple[_Romma, dict[str, Any], Any, np.ndarray, int]:
    """The model of a run (the experiments continue it epoch by epoch), its resolved
    parameters, the validated data and epochs."""
    kern = parse_kernel(kernel)
    par = PARAMS.read(given)
    if form == "primal" and not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    X, y = validate(X, y)
    epochs = check_epochs(epochs)
    space = make_space(form, X, y.shape[0], None, kern)
    return _Romma(space, y, float(par.delta)), PARAMS.as_dict(par), X, y, epochs


def _romma_run(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
               record_scores: bool, engine: str = "numpy") -> Trace:
    """A run of ``form``; by the compiled engine when ``engine`` chooses it: with the linear
    kernel the primal loop, also for the dual form (w = sum_e a_e x_e, the trace's ``final``
    is w in both forms; SPEC.md 14.7), with another kernel on dense X the compiled dual's
    blocks (``_dual_compiled``); CSR X with another kernel takes the windows."""
    kern = parse_kernel(kernel)
    if _compiled.choose(engine, compiled_serves=kern.is_linear or not sp.issparse(X),
                        kernel=kern) == "numba":
        if form == "dual" and not kern.is_linear:
            return _dual_compiled(X, y, epochs, kern, given, record_scores)
        return _primal_compiled(form, X, y, epochs, kernel, given, record_scores)
    model, params, X, y, epochs = setup(form, X, y, epochs, kernel, given)
    result = run_blocks(model, y, epochs, record_scores)
    return Trace(algorithm="romma", form=form, kernel=parse_kernel(kernel).spec, params=params,
                 n_examples=y.shape[0], epochs=epochs, mistakes=result.mistakes,
                 updates=result.updates,
                 final=finite_final(model.final(), result.updates, y.shape[0]),
                 scores=result.scores)


def _primal_compiled(form: str, X: Any, y: Any, epochs: int, kernel: Any,
                     given: dict[str, Any], record_scores: bool) -> Trace:
    """The linear-kernel run by the compiled per-trial loop (``fast._compiled_romma``),
    traced as ``form``'s.  Dense X is not checked for NaN or infinity beforehand: the loop's
    scores are that check (a row holding one scores NaN or infinity), reported as
    validate() reports it."""
    kern = parse_kernel(kernel)
    par = PARAMS.read(given)
    if not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    X, y = validate(X, y, check_finite=sp.issparse(X))  # dense: the first pass checks
    epochs = check_epochs(epochs)
    T, n = X.shape
    dense, indptr, indices, data, sparse = _compiled.csr_parts(X)
    w = np.zeros(n)
    state = np.zeros(ROMMA_STATE_SIZE)
    state[ROMMA_LAST] = -1.0  # no example updated yet
    trials = epochs * T
    mistakes, updates = np.empty(trials, dtype=np.int64), np.empty(trials, dtype=np.int64)
    scores = np.zeros(trials if record_scores else 1)
    bad = _compiled_romma.loops().romma_primal(
        dense, indptr, indices, data, sparse, y.astype(np.float64), epochs,
        1.0 - float(par.delta), RESIDUAL_SINGULAR, w, np.zeros(n if sparse else 1), state,
        mistakes, updates, scores, record_scores)
    # dense X: a NaN or infinity named first
    _compiled.raise_if_bad(bad, T, state[ROMMA_BAD_SCORE], X)
    done = updates[:int(state[ROMMA_UPDATES])].tolist()
    made = mistakes[:int(state[ROMMA_MISTAKES])].tolist()
    return Trace(algorithm="romma", form=form, kernel=kern.spec, params=PARAMS.as_dict(par),
                 n_examples=T, epochs=epochs, mistakes=made,
                 updates=done, final=finite_final({"w": w}, done, T),
                 scores=scores.tolist() if record_scores else None)


#: The compiled dual's blocks (``_dual_compiled``): trials per block within MIN .. MAX, at
#: most MAX_VALUES kernel values in a block's product, FACTOR the price of a kernel value
#: computed in the walk over one of the product (``fast.perceptron._Dual.block_length``).
DUAL_MIN_BLOCK, DUAL_MAX_BLOCK, DUAL_MAX_VALUES, DUAL_FACTOR = 32, 2048, 1 << 18, 3.0


def _dual_block_length(S0: int, entered: int, updates: int, seen: int) -> int:
    """Trials in the compiled dual's next block.  Its kernel values against the S0 supports
    of its start cost one level-3 product; a support entering inside the block costs one
    kernel value per later trial of the block, computed in the walk; and the walk stops
    after ``DualSpace.MAX_FOLDS`` updates.  So the block stays below S0 / (FACTOR r) trials
    at the observed rate r of entering supports and below MAX_FOLDS / u at the rate u of
    updates; within DUAL_MIN_BLOCK .. DUAL_MAX_BLOCK, at most DUAL_MAX_VALUES values."""
    seen += 16
    length = min(S0 * seen / (DUAL_FACTOR * (entered + 1)),
                 DualSpace.MAX_FOLDS * seen / (updates + 1))
    return max(DUAL_MIN_BLOCK, min(int(length), DUAL_MAX_BLOCK,
                                   DUAL_MAX_VALUES // max(S0, 1)))


class _DualStore:
    """The compiled dual's support: its rows (``rows``, contiguous for the block's
    product), squared norms, coefficients and examples by position, ``slot`` the position
    of each example (-1 outside), ``kernel`` the kernel as the loops take it, ``loops``
    ``fast._numba_romma`` (``fast._compiled_romma.loops``)."""

    def __init__(self, X: np.ndarray, kern: Kernel):
        T, n = X.shape
        self.X, self.sq = X, np.einsum("ij,ij->i", X, X)
        self.kernel = np.array(_compiled.kernel_code(kern), dtype=np.float64)
        self.slot = np.full(T, -1, dtype=np.int64)
        self.rows, self.sq_rows, self.coef = np.zeros((0, n)), np.zeros(0), np.zeros(0)
        self.sup = np.zeros(0, dtype=np.int64)
        self.loops = _compiled_romma.loops()

    def room(self, S: int, need: int) -> None:
        """Room for ``need`` supports (the first S kept), doubled when it grows."""
        if self.rows.shape[0] >= need:
            return
        size = min(2 * need, self.X.shape[0])
        rows, sq_rows, coef = np.zeros((size, self.X.shape[1])), np.zeros(size), np.zeros(size)
        sup = np.zeros(size, dtype=np.int64)
        rows[:S], sq_rows[:S], coef[:S], sup[:S] = (self.rows[:S], self.sq_rows[:S],
                                                    self.coef[:S], self.sup[:S])
        self.rows, self.sq_rows, self.coef, self.sup = rows, sq_rows, coef, sup

    def kernel_block(self, A: np.ndarray, sq_a: np.ndarray, lo: int, hi: int,
                     sq: np.ndarray, B: np.ndarray) -> np.ndarray:
        """k(a, b) for the rows a of A (squared norms sq_a) against the rows lo .. hi-1 of B
        (squared norms sq; ``_compiled.kernel_block``)."""
        kind, degree, gamma, coef0 = self.kernel
        return _compiled.kernel_block(A, sq_a, B, lo, hi, sq, int(kind), int(degree), gamma,
                                      coef0)

    def norm2(self, S: int) -> float:
        """||w||^2 = a^T K a over the support, afresh (``DualSpace._refresh``)."""
        rows, sq_rows, coef = self.rows[:S], self.sq_rows[:S], self.coef[:S]
        return float(coef @ (self.kernel_block(rows, sq_rows, 0, S, sq_rows, rows) @ coef))

    def alpha(self, S: int) -> np.ndarray:
        """a_e for every example (0 outside the support)."""
        out = np.zeros(self.X.shape[0])
        out[self.sup[:S]] = self.coef[:S]
        return out


def _dual_walk(store: _DualStore, y: np.ndarray, epochs: int, threshold: float,
               flags: np.ndarray, scores: np.ndarray, record: bool) -> tuple[int, np.ndarray]:
    """The compiled dual's run: blocks of one epoch's examples (``_dual_block_length``),
    each block's kernel values against the support of its start by one product, then
    ``fast._numba_romma.romma_dual_block`` walks it trial by trial, each update folded into the
    later trials' scores, until the block's end or a stop (MAX_FOLDS updates in the
    block, or ||w||^2 due afresh: recomputed here).  Returns the first trial whose score is
    not finite (or -1) and the state (``fast._slots``' ROMMA_DUAL_*)."""
    X, T, loops = store.X, store.X.shape[0], store.loops
    state = np.zeros(ROMMA_DUAL_STATE_SIZE)
    state[ROMMA_DUAL_LAST] = -1.0  # no example updated yet
    limits = np.zeros(ROMMA_DUAL_LIMITS_SIZE, dtype=np.int64)
    limits[ROMMA_DUAL_MAX_FOLDS], limits[ROMMA_DUAL_REFRESH] = (DualSpace.MAX_FOLDS,
                                                                DualSpace.REFRESH)
    base = np.zeros(DUAL_MAX_BLOCK)
    entered = updates = seen = 0
    for epoch in range(epochs):
        lo = 0
        while lo < T:
            S0 = int(state[ROMMA_DUAL_SUPPORTS])
            hi = min(T, lo + _dual_block_length(S0, entered, updates, seen))
            store.room(S0, min(S0 + hi - lo, T))
            Kt = store.kernel_block(store.rows[:S0], store.sq_rows[:S0], lo, hi, store.sq, X)
            krow = store.slot[lo:hi].copy()  # each example's row of Kt, or -1
            bad = loops.romma_dual_block(
                X, store.sq, y, lo, hi, epoch * T, Kt, krow, base, store.kernel, threshold,
                SINGULAR, limits, store.slot, store.rows, store.sq_rows, store.coef,
                store.sup, state, flags, scores, record)
            if bad >= 0:
                return int(bad), state
            S, stop = int(state[ROMMA_DUAL_SUPPORTS]), int(state[ROMMA_DUAL_NEXT])
            if state[ROMMA_DUAL_STALE] >= max(DualSpace.REFRESH, S):
                state[ROMMA_DUAL_VV], state[ROMMA_DUAL_STALE] = store.norm2(S), 0.0
            done = np.flatnonzero(flags[epoch * T + lo:epoch * T + stop] & _compiled.UPDATE)
            updates, entered = updates + done.size, entered + int(np.sum(krow[done] < 0))
            seen, lo = seen + stop - lo, stop
    return -1, state


def _dual_compiled(X: Any, y: Any, epochs: int, kern: Kernel, given: dict[str, Any],
                   record_scores: bool) -> Trace:
    """The dual form with a non-linear kernel on dense X by the compiled engine
    (``_dual_walk``): the numpy dual's decisions (``DualSpace`` and ``_Romma``: the score,
    the update test with Lemma 4's skip, the closed forms, feasibility and SINGULAR), its
    own rounding; a case-(i) update drops the old support (eta = 0 makes every old
    coefficient 0).  A score that is not finite stops the run as on the driver."""
    par = PARAMS.read(given)
    X, y = validate(X, y)
    epochs = check_epochs(epochs)
    T = y.shape[0]
    store = _DualStore(X, kern)
    flags = np.zeros(epochs * T, dtype=np.uint8)
    scores = np.zeros(epochs * T if record_scores else 1)
    with OneBlasThread(), np.errstate(all="ignore"):  # the blocks' many small products
        bad, state = _dual_walk(store, y.astype(np.float64), epochs,
                                1.0 - float(par.delta), flags, scores, record_scores)
    _compiled.raise_if_bad(bad, T, state[ROMMA_DUAL_BAD_SCORE])
    mistakes, updated, _ = _compiled.split_flags(flags)
    updates = updated.tolist()
    alpha = store.alpha(int(state[ROMMA_DUAL_SUPPORTS]))
    return Trace(algorithm="romma", form="dual", kernel=kern.spec, params=PARAMS.as_dict(par),
                 n_examples=T, epochs=epochs, mistakes=mistakes.tolist(),
                 updates=updates, final=finite_final({"alpha": alpha}, updates, T),
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
         numbers: Any = "auto", record_scores: bool = False, engine: str = "auto") -> Trace:
    """Dual (kernel) form: one coefficient per support example; scores by windows of one
    kernel block against the support, each update folded into the window (DualSpace).

    ``engine``: "numba" runs, with the linear kernel, the primal form's compiled loop, whose
    w is the dual's sum_e a_e x_e and the trace's ``final`` in both forms, with another
    kernel on dense X the compiled blocks (``_dual_compiled``: one kernel block against the
    support per block of trials, walked trial by trial in numba); "numpy" the windows
    above; "auto" (the default) the compiled engine when numba is installed.  CSR X with a
    non-linear kernel and shadow runs take the windows whatever was asked."""
    return _romma_run("dual", X, y, epochs, kernel, dict(delta=delta, numbers=numbers),
                      record_scores, engine)
