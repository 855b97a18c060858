"""One-vs-rest multiclass (Khardon & Wachman 2007, section 2.7), and the Perceptron's K
learners trained together in one pass.

Section 2.7: for each label l a binary classifier separates l from the rest; all of them run
"in parallel" on the same pass over the data, and the prediction is the label whose
classifier gives the largest score before the sign.  Each binary learner is exactly the
binary algorithm on the relabelled data (y_l = +1 where the label is l, -1 elsewhere).

:class:`PerceptronOvR` runs the K binary Perceptrons (``reference.perceptron``, SPEC.md
section 11: eta, b0, C, tau, lam, alpha_bound) on one shared pass.  Each block of trials is
scored for all K learners by one product: ``X[block] @ W.T`` in the primal form, one kernel
block ``R[:, block].T @ Coef`` in the dual form, where R holds the kernel rows k(x_s, X) of
every example that updated any learner (computed once, whichever learners it updates).
Learners are independent, so after an update learner k alone rescores the rest of the block
(the fast forms' driver, SPEC.md section 7, per column), and the others keep the shared
scores.  Every learner is trial for trial ``fast.perceptron``'s binary run on its
relabelled data: the same tests, the same update rule, the same hypothesis statistics.

The object keeps its state between calls of :meth:`PerceptronOvR.train`, so a second call
continues the same online run (each call's rows are new examples: alpha, the lambda-trick's
indicator and the alpha-bound count updates per example of the call).  Its hypotheses
(last, longest survivor, voted, averaged; Figure 2) predict on new data through
:meth:`PerceptronOvR.decision`: the voted one by the running sum
s_k(x) = s_{k-1}(x) + eta y_u (k(x_u, x) + C) over the update sequence, from one kernel
block (one product ``X_test @ X_U.T`` for the linear kernel) and a cumulative sum.

Two engines, as ``fast.perceptron``'s: "numba" (the default when numba is installed)
trains by the compiled loops of ``fast._compiled_multiclass`` (per trial one product W x_t
for all learners; the dual by blocks of kernel values over the union of the supports,
then a per-trial walk), "numpy" by the shared block-ahead pass above.  Both leave the same
state, hypotheses and traces.

:func:`relabel` makes the K binary label vectors.  The entry point for any registered
algorithm, ``perceptron_oracle.multiclass.one_vs_rest``, sits above the registry and uses
:class:`PerceptronOvR` for the Perceptron.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import canonical_csr, check_finite_rows
from ..errors import DataError, ParamError
from ..kernels import KERNEL_CACHE_BYTES, Kernel, parse_kernel
from ..reference.common import check_epochs
from ..reference.perceptron import PARAMS, PREDICTION_MODES
from ..trace import Trace
from . import _compiled
from . import _compiled_multiclass as cm
from ._slots import (
    OVR_BAD_SCORE,
    OVR_STATE_SIZE,
    PERCEPTRON_B,
    PERCEPTRON_BAD_SCORE,
    PERCEPTRON_STATE_SIZE,
    PERCEPTRON_SUPPORTS,
)
from .blas_threads import OneBlasThread
from .driver import MAX_BLOCK, MIN_BLOCK, finite_final, float_range_error
from .perceptron import compiled_dual_walk

#: Examples per block of the compiled dual pass for K >= 2 learners (``_dual_compiled``).
DUAL_BLOCK = 256


class _Log:
    """One learner's run so far, as arrays, a chunk or more per call of ``train``: the
    trials it updated on (run-wide numbers), the support id and label of each update, the
    trials the alpha-bound blocked, the trials it made a mistake on.  The numpy engine
    notes its updates one at a time (:meth:`note`) and :meth:`flush` turns them into a
    chunk at the end of the call; the compiled engine adds whole arrays (:meth:`add`)."""

    __slots__ = ("updates", "seq", "ys", "blocked", "mistakes", "last", "_pending")

    def __init__(self) -> None:
        self.updates: list[np.ndarray] = []
        self.seq: list[np.ndarray] = []
        self.ys: list[np.ndarray] = []
        self.blocked: list[np.ndarray] = []
        self.mistakes: list[np.ndarray] = []
        self.last = -1  # the trial of the last update
        self._pending: tuple[list[int], list[int], list[float]] = ([], [], [])

    def add(self, updates: np.ndarray, seq: np.ndarray, ys: np.ndarray) -> None:
        self.updates.append(updates)
        self.seq.append(seq)
        self.ys.append(ys)
        if updates.shape[0]:
            self.last = int(updates[-1])

    def note(self, trial: int, s: int, label: float) -> None:
        pending = self._pending
        pending[0].append(trial)
        pending[1].append(s)
        pending[2].append(label)
        self.last = trial

    def flush(self) -> None:
        trials, seq, ys = self._pending
        if trials:
            self.add(np.array(trials, dtype=np.int64), np.array(seq, dtype=np.int64),
                     np.array(ys, dtype=np.float64))
            self._pending = ([], [], [])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The update trials, support ids and labels, each one array."""
        for chunks, dtype in ((self.updates, np.int64), (self.seq, np.int64),
                              (self.ys, np.float64)):
            if len(chunks) != 1:  # joined once: later calls find one chunk
                chunks[:] = [np.concatenate(chunks) if chunks else np.zeros(0, dtype)]
        return self.updates[0], self.seq[0], self.ys[0]

    def votes(self, trials: int) -> np.ndarray:
        """c_0 .. c_K: the trials between two updates (the last one: up to ``trials``)
        less the trials the alpha-bound blocked while that hypothesis was in force."""
        updates = self.arrays()[0]
        bounds = np.concatenate([[-1], updates, [trials]])
        votes = np.diff(bounds) - 1
        if self.blocked:
            blocked = np.concatenate(self.blocked)
            votes -= np.bincount(np.searchsorted(updates, blocked),
                                 minlength=updates.shape[0] + 1)
        return votes.astype(np.int64)


class PerceptronOvR:
    """K binary Perceptrons over one shared pass (module docstring).

    ``form`` is "primal" (linear kernel; X dense or CSR) or "dual" (any kernel);
    ``params`` are ``reference.perceptron.PARAMS`` (read exactly, used as their nearest
    doubles, as the fast forms do).  ``engine``: "numba" trains by the compiled per-trial
    loops of ``fast._compiled_multiclass``, "numpy" by the shared block-ahead pass, "auto"
    (the default) by the compiled loops when numba is installed; the dual form on CSR input
    and runs under ``driver.forced_updates`` take the numpy path whatever was asked (the
    convention of ``fast.perceptron``).
    """

    _sq_rows: np.ndarray  # the supports' squared norms, for the compiled dual (_compiled_store)

    def __init__(self, n_features: int, n_classes: int, *, form: str = "primal",
                 kernel: Any = "linear", engine: str = "auto", **params: Any):
        _compiled.choose(engine)  # a bad engine, or "numba" without numba, fails here
        self.engine = engine
        if form not in ("primal", "dual"):
            raise ParamError(f"perceptron has no fast form {form!r} (forms: primal, dual)")
        self.kernel: Kernel = parse_kernel(kernel)
        _compiled.choose(engine, kernel=self.kernel)  # "numba" for a kernel the loops lack
        if form == "primal" and not self.kernel.is_linear:
            raise ParamError(f"the primal form takes the linear kernel only, not "
                             f"{self.kernel.spec}")
        self.params = PARAMS.resolve(params)
        par = PARAMS.construct(self.params)
        self.form, self.K, self.n = form, int(n_classes), int(n_features)
        self.eta, self.b0, self.C = float(par.eta), float(par.b0), float(par.C)
        self.tau, self.lam = float(par.tau), float(par.lam)
        self.bound = par.alpha_bound
        self.b = np.full(self.K, self.b0)
        self.W = np.zeros((self.K, self.n))                  # primal: one row per learner
        # every example that updated any learner: its row, its per-learner counts.  The rows
        # are a dense store that doubles as it fills, or CSR blocks, one per call, once CSR
        # data brought supports (support_rows)
        self.rows = np.zeros((16, self.n))
        self._csr_rows: list[Any] | None = None
        self.counts = np.zeros((16, self.K), dtype=np.int64)
        self.n_support = 0
        self.origin = np.zeros(16, dtype=np.int64)  # each support's row among all calls'
        self.rows_seen = 0
        self.coef = np.zeros((16, self.K))                   # dual: eta alpha_s y_s
        self.logs = [_Log() for _ in range(self.K)]          # per learner, its run so far
        self.trials = 0
        self.calls: list[tuple[int, int]] = []               # (rows, epochs) of each call
        self.gap = [float(MIN_BLOCK * 4)] * self.K
        self._reach = 1.0 if form == "primal" else 4.0
        self.per_example = bool(self.lam) or self.bound is not None  # alpha read in a trial
        self._hyp: dict[str, Any] | None = None

    # -- training --------------------------------------------------------------------------
    def train(self, X: Any, Y: np.ndarray, epochs: int = 1) -> None:
        """Continue the run over ``epochs`` passes of (X, Y); Y is T x K in {-1, +1}."""
        epochs = check_epochs(epochs)
        T = X.shape[0]
        if X.shape[1] != self.n or Y.shape != (T, self.K):
            raise DataError(f"data: expected X with {self.n} features and Y of shape "
                            f"({T}, {self.K}), got {X.shape} and {Y.shape}")
        self._hyp = None
        chosen = _compiled.choose(self.engine,
                                  compiled_serves=self.form == "primal" or not sp.issparse(X),
                                  kernel=self.kernel)
        if self.form == "dual" or (sp.issparse(X) and chosen != "numba"):
            # the primal form's scores find a NaN or infinity in dense X, and the compiled
            # loops' in CSR X (every stored entry of a row is in its score); a support's
            # would reach the dual's scores only later, reported as an overflow
            check_finite_rows(X.data if sp.issparse(X) else np.asarray(X, dtype=np.float64))
        if chosen == "numba":
            self._train_compiled(X, np.ascontiguousarray(Y, dtype=np.float64), epochs)
            return
        self.X, self.Y = X, np.asarray(Y, dtype=np.float64)
        self.alpha = np.zeros((T, self.K), dtype=np.int64)   # this call's examples
        self.slot = np.full(T, -1, dtype=np.int64)           # example -> support id
        self._sq: np.ndarray | None = None                   # squared row norms (rbf)
        self.lam_terms = (self.lam * self.Y * self.kernel.diagonal(X)[:, None]
                          if self.lam else None)
        if self.form == "dual":
            S = self.n_support
            self.R = np.zeros((max(16, S), T))
            if S:  # kernel rows of the support of earlier calls against this call's rows
                self.R[:S] = self.kernel.matrix(self.support_rows(), X)
        first = self.n_support
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                for epoch in range(epochs):
                    self._epoch(self.trials + epoch * T)
        finally:  # a run stopped by an overflow keeps the rows of the supports it counted
            self._store_rows(X, self._new_examples(self.slot, first), first)
        for log in self.logs:
            log.flush()
        self.trials += epochs * T
        self.rows_seen += T
        self.calls.append((T, epochs))
        del self.X, self.Y, self.alpha, self.slot, self.lam_terms, self._sq
        if self.form == "dual":
            del self.R

    def _epoch(self, base: int) -> None:
        T = self.X.shape[0]
        decided = np.empty((T, self.K))
        pos = 0
        while pos < T:
            # about the learners' mean gap between updates (primal: an update costs one
            # product over the rest of the block); the dual's updates cost one axpy
            block = int(min(MAX_BLOCK, max(4 * MIN_BLOCK, self._reach * sum(self.gap) / self.K)))
            stop = min(T, pos + block)
            shared = self._scores(pos, stop)
            self._rows_block: dict[int, np.ndarray] = {}
            for k in range(self.K):
                decided[pos:stop, k] = self._learner_block(k, pos, stop, shared[:, k], base)
            if not np.isfinite(decided[pos:stop]).all():
                self._not_finite(decided[pos:stop], base, pos)
            pos = stop
        margins = self.Y * decided
        for k in range(self.K):
            self.logs[k].mistakes.append(np.flatnonzero(margins[:, k] <= 0) + base)

    def _not_finite(self, scores: np.ndarray, base: int, pos: int) -> None:
        if self.form == "primal" and not sp.issparse(self.X):
            check_finite_rows(self.X[pos:pos + scores.shape[0]])
        bad = int(np.argmin(np.isfinite(scores).all(axis=1)))
        row = scores[bad]
        raise float_range_error(base + pos + bad, pos + bad,
                                float(row[int(np.argmin(np.isfinite(row)))]))

    def _train_compiled(self, X: Any, Y: np.ndarray, epochs: int) -> None:
        """The run by ``fast._compiled_multiclass`` (module docstring there): the same
        state and hypothesis statistics as the numpy pass leaves."""
        if sp.issparse(X):  # the compiled loops' CSR: float64, int32 indices, canonical
            if not canonical_csr(X):
                X = sp.csr_matrix(X, dtype=np.float64, copy=True)
                X.sum_duplicates()
                X.sort_indices()
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
        T = X.shape[0]
        alpha = np.zeros((T, self.K), dtype=np.int64)
        slot = np.full(T, -1, dtype=np.int64)
        flags = np.zeros((self.K, epochs * T), dtype=np.uint8)
        n_support = np.array([self.n_support], dtype=np.int64)
        state = np.zeros(OVR_STATE_SIZE)
        use_lam = bool(self.lam)
        lam_terms = (self.lam * Y * self.kernel.diagonal(X)[:, None] if use_lam
                     else np.zeros((1, 1)))
        bound = -1 if self.bound is None else int(self.bound)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.form == "primal" and self.K == 1:
                bad = self._binary_primal(X, Y, epochs, lam_terms, use_lam, bound, alpha,
                                          slot, n_support, flags, state)
            elif self.form == "primal":
                dense, indptr, indices, data, sparse = _compiled.csr_parts(X)
                bad = cm.loops().ovr_primal(
                    dense, indptr, indices, data, sparse, Y, epochs, self.eta, self.C,
                    self.tau, lam_terms, use_lam, bound, self.W, self.b, alpha, slot,
                    n_support, flags, state)
            else:
                bad = self._dual_compiled(X, Y, epochs, lam_terms, use_lam, bound, alpha,
                                          slot, n_support, flags, state)
        # the primal loops score every row: a NaN or infinity in X, named as validate() does
        _compiled.raise_if_bad(bad, T, state[OVR_BAD_SCORE],
                               X if self.form == "primal" else None,
                               self.trials)
        self._keep_supports(X, alpha, slot, int(n_support[0]))
        self._record_flags(flags, slot, Y)
        self.trials += epochs * T
        self.rows_seen += T
        self.calls.append((T, epochs))

    def _keep_supports(self, X: Any, alpha: np.ndarray, slot: np.ndarray, S: int) -> None:
        """Store this call's new supports (ids n_support .. S-1, numbered by the loops in
        ``slot``): their row among all calls', their counts, their rows (primal; the dual
        loops write the rows they score with)."""
        first = self.n_support
        self._reserve(S)
        examples = self._new_examples(slot, first)
        self.origin[first:S] = self.rows_seen + examples
        self.counts[first:S] = alpha[examples]
        if self.form == "primal":
            self._store_rows(X, examples, first)
        self.n_support = S

    @staticmethod
    def _new_examples(slot: np.ndarray, first: int) -> np.ndarray:
        """The examples of this call's new supports (ids first, first + 1, ... in ``slot``,
        example -> support id), in id order."""
        used = np.flatnonzero(slot >= first)
        examples = np.empty(used.shape[0], dtype=np.int64)
        examples[slot[used] - first] = used
        return examples

    def _store_rows(self, X: Any, examples: np.ndarray, first: int) -> None:
        """The new supports' rows X[examples] (ids first, first + 1, ...), at the end of a
        call (but the compiled dual's, which its loops write): into the dense store, or as
        a CSR block once CSR data has come (the store's rows turn CSR then; its memory
        follows their stored entries, not S x n)."""
        if not examples.shape[0]:
            return
        if sp.issparse(X) and self._csr_rows is None:
            self._csr_rows = [sp.csr_matrix(self.rows[:first])]
            self.rows = np.zeros((0, self.n))
        if self._csr_rows is not None:
            self._csr_rows.append(sp.csr_matrix(X[examples], dtype=np.float64))
            return
        stop = first + examples.shape[0]
        if self.rows.shape[0] < stop:
            self._grow_rows(stop)
        np.take(np.asarray(X, dtype=np.float64), examples, axis=0, out=self.rows[first:stop])

    def support_rows(self) -> Any:
        """The rows of the supports, in id order: a view of the dense store, or one CSR
        matrix (after CSR data)."""
        if self._csr_rows is None:
            return self.rows[:self.n_support]
        if len(self._csr_rows) != 1:  # stacked once: later calls find one block
            self._csr_rows[:] = [sp.vstack(self._csr_rows, format="csr")]
        return self._csr_rows[0]

    def _record_flags(self, flags: np.ndarray, slot: np.ndarray, Y: np.ndarray) -> None:
        """Each learner's mistakes, updates (trial, support id, label) and blocked trials
        from the loops' flags (K x trials of this call), numbered run-wide."""
        T = Y.shape[0]
        for k, log in enumerate(self.logs):
            trial = np.flatnonzero(flags[k])
            kinds = flags[k, trial]
            updates = trial[(kinds & _compiled.UPDATE) != 0]
            at = updates % T
            log.mistakes.append(trial[(kinds & _compiled.MISTAKE) != 0] + self.trials)
            log.add(updates + self.trials, slot[at], Y[at, k])
            blocked = trial[(kinds & _compiled.BLOCKED) != 0]
            if blocked.shape[0]:
                log.blocked.append(blocked + self.trials)

    def _dual_compiled(self, X: np.ndarray, Y: np.ndarray, epochs: int,
                       lam_terms: np.ndarray, use_lam: bool, bound: int, alpha: np.ndarray,
                       slot: np.ndarray, n_support: np.ndarray, flags: np.ndarray,
                       state: np.ndarray) -> int:
        """The dual run by the compiled loops: for one learner ``fast.perceptron``'s
        compiled walk (:meth:`_binary_dual`), by blocks for K >= 2 (:meth:`_dual_block`).
        Whenever the support store is full the loops return; the store doubles and the run
        resumes at the trial they name.  Returns what the loops return (the first trial
        whose score is not finite, or DONE)."""
        T = X.shape[0]
        self._compiled_store(int(n_support[0]) + (T if self.K == 1 else 0))
        if self.K == 1:  # K = 1: the columns are contiguous views
            rule = (self.eta, self.C, self.tau, lam_terms[:, 0], use_lam, bound)
            return self._binary_dual(X, Y, epochs, rule, alpha, slot, n_support, flags, state)
        kernel = _compiled.kernel_code(self.kernel)
        rule = (self.eta, self.C, self.tau, lam_terms, use_lam, bound)
        sq = _compiled.kernel_norms(X, self.kernel)

        def store() -> tuple[np.ndarray, ...]:  # the loops' state; the store moves as it grows
            return (self.rows, self._sq_rows, self.coef, self.b, alpha, slot, n_support,
                    flags, state)

        with OneBlasThread():  # the blocks' products (fast.blas_threads)
            for epoch in range(epochs):
                lo = 0
                while lo < T:
                    S0 = int(n_support[0])
                    # at most DUAL_BLOCK examples, and at most 2^22 kernel values in the block
                    hi = min(T, lo + max(MIN_BLOCK, min(DUAL_BLOCK, (1 << 22) // max(S0, 1))))
                    bad = self._dual_block(X, sq, Y, lo, hi, epoch * T, kernel, rule, store,
                                           n_support)
                    if bad != cm.DONE:
                        return bad
                    lo = hi
        return cm.DONE

    def _dual_block(self, X: np.ndarray, sq: np.ndarray, Y: np.ndarray, lo: int, hi: int,
                    offset: int, kernel: tuple[Any, ...], rule: tuple[Any, ...],
                    store: Callable[[], tuple[np.ndarray, ...]], n_support: np.ndarray) -> int:
        """Examples lo .. hi-1 (trials offset + lo ..) for K >= 2 learners.  The block is
        scored against the S0 supports of its start at once: the S0 x B kernel values by
        one product (``_compiled.kernel_block``), their products with the S0 x K
        coefficients by another (or, where a kernel value is not finite, per learner over
        its own supports: ``block_scores``); ``ovr_dual_block`` then walks the block trial
        by trial, adding each update's term to the rest of the block.  The caller holds
        OpenBLAS at one thread: two multi-threaded pools (numpy's and scipy's, which numba
        calls) made a 256 x 600 product 100 times slower on a busy 2-core machine."""
        loops = cm.loops()
        S0 = int(n_support[0])
        Kt = _compiled.kernel_block(self.rows[:S0], self._sq_rows[:S0], X, lo, hi, sq,
                                    *kernel)
        if np.isfinite(Kt).all():
            base = Kt.T @ self.coef[:S0]
        else:  # 0 * inf: each learner sums its own supports only, as its binary run does
            base = np.zeros((hi - lo, self.K))
            loops.block_scores(np.ascontiguousarray(Kt.T), self.coef, S0, base)
        start = lo
        while True:
            bad = loops.ovr_dual_block(X, sq, Y, lo, hi, start, offset, S0, Kt, base,
                                       *kernel, *rule, *store())
            if bad > cm.FULL_BASE:
                return int(bad)
            start = cm.FULL_BASE - int(bad) - offset
            self._grow_dual_store(int(n_support[0]))

    def _binary_dual(self, X: np.ndarray, Y: np.ndarray, epochs: int, rule: tuple[Any, ...],
                     alpha: np.ndarray, slot: np.ndarray, n_support: np.ndarray,
                     flags: np.ndarray, state: np.ndarray) -> int:
        """One learner, dual: ``fast.perceptron``'s compiled walk itself (blocks of kernel
        values against the support set, each update added to the rest of its block), on
        the support store of the earlier calls, which has room for every example of this
        one (``_compiled_store``: the walk never grows it, and writes alpha, the rows and
        coef in place; rows that no support fills stay untouched).  Returns the walk's
        report."""
        first = int(n_support[0])
        binary = np.zeros(PERCEPTRON_STATE_SIZE)  # the binary walk's state
        binary[PERCEPTRON_B], binary[PERCEPTRON_SUPPORTS] = self.b[0], float(first)
        with OneBlasThread():  # the blocks' products (fast.blas_threads)
            bad, store = compiled_dual_walk(X, Y[:, 0], epochs, self.kernel, rule,
                                            alpha[:, 0], slot,
                                            [self.rows, self._sq_rows, self.coef[:, 0]],
                                            first + X.shape[0], binary, flags[0],
                                            np.zeros(1), False)
        assert store[0] is self.rows, "the walk grew a store that had room for every example"
        self.b[0], state[OVR_BAD_SCORE] = binary[PERCEPTRON_B], binary[PERCEPTRON_BAD_SCORE]
        n_support[0] = int(binary[PERCEPTRON_SUPPORTS])
        return bad

    def _grow_dual_store(self, S: int) -> None:
        """Double the support store of the compiled dual run, its squared norms kept."""
        self._grow_rows(max(2 * S, 16))
        self._reserve(self.rows.shape[0])
        grown = np.zeros(self.rows.shape[0])
        grown[:S] = self._sq_rows[:S]
        self._sq_rows = grown

    def _binary_primal(self, X: Any, Y: np.ndarray, epochs: int, lam_terms: np.ndarray,
                       use_lam: bool, bound: int, alpha: np.ndarray, slot: np.ndarray,
                       n_support: np.ndarray, flags: np.ndarray, state: np.ndarray) -> int:
        """One learner, primal: ``fast._compiled``'s binary loop itself on w = W[0] (so a
        two-class run is ``fast.perceptron``'s compiled run, bit for bit), without the
        averaged and longest survivor's w, which one-vs-rest does not keep; the supports
        are numbered afterwards by first update, as the shared loop numbers them."""
        T = X.shape[0]
        dense, indptr, indices, data, sparse = _compiled.csr_parts(X)
        binary = np.zeros(PERCEPTRON_STATE_SIZE)  # the binary loop's state
        binary[PERCEPTRON_B] = self.b[0]
        column = alpha[:, 0]  # views: the loop updates alpha, w and the flags in place
        bad = _compiled.perceptron_loops().perceptron_primal(
            dense, indptr, indices, data, sparse, Y[:, 0], epochs, self.eta, self.C,
            self.tau, lam_terms[:, 0] if use_lam else np.zeros(1), use_lam, bound,
            self.W[0], column, binary, flags[0],
            np.zeros(1), False, np.zeros((2, 1, 2)), np.zeros((1, 2), dtype=np.int64),
            _compiled.FOLD_FROM, False)
        self.b[0] = binary[PERCEPTRON_B]
        state[OVR_BAD_SCORE] = binary[PERCEPTRON_BAD_SCORE]
        updated = np.flatnonzero(flags[0] & _compiled.UPDATE) % T
        first = np.full(T, updated.shape[0])  # each example's first update, by its rank
        np.minimum.at(first, updated, np.arange(updated.shape[0]))
        examples = np.flatnonzero(first < updated.shape[0])
        order = examples[np.argsort(first[examples])]
        slot[order] = np.arange(n_support[0], n_support[0] + order.shape[0])
        n_support[0] += order.shape[0]
        return int(bad)

    def _reserve(self, size: int) -> None:
        """Room for ``size`` supports in the store's counts, coef and origin (at least
        double)."""
        have = self.counts.shape[0]
        if size <= have:
            return
        grow = max(size, 2 * have) - have
        self.counts = np.concatenate([self.counts, np.zeros((grow, self.K), np.int64)])
        self.coef = np.concatenate([self.coef, np.zeros((grow, self.K))])
        self.origin = np.concatenate([self.origin, np.zeros(grow, np.int64)])

    def _grow_rows(self, size: int) -> None:
        """The dense row store with room for ``size`` rows (at least double; the new rows
        left unwritten, and untouched, until a support fills them)."""
        have = self.rows.shape[0]
        if size <= have:
            return
        grown = np.empty((max(size, 2 * have), self.n))
        grown[:have] = self.rows
        self.rows = grown

    def _compiled_store(self, size: int) -> None:
        """The compiled dual's store: dense rows, coef, counts and origin, each with room
        for ``size`` supports or more, the rows' count no more than the others' (a loop
        takes the rows' count as the store's capacity), and the supports' squared norms."""
        if self._csr_rows is not None:  # the loops write and read a dense store
            self.rows, self._csr_rows = self.support_rows().toarray(), None
        self._grow_rows(max(size, 16))
        self._reserve(self.rows.shape[0])
        S = self.n_support
        self._sq_rows = np.zeros(self.rows.shape[0])
        self._sq_rows[:S] = _compiled.kernel_norms(self.rows[:S], self.kernel)

    def _scores(self, start: int, stop: int) -> np.ndarray:
        """Scores of examples start .. stop-1 for all learners: one product."""
        if self.form == "primal":
            s = self.X[start:stop] @ self.W.T
        else:
            S = self.n_support
            s = self.R[:S, start:stop].T @ self.coef[:S]
        s = np.asarray(s, dtype=np.float64)
        s += self.b
        if self.lam_terms is not None:
            s += np.where(self.alpha[start:stop] > 0, self.lam_terms[start:stop], 0.0)
        return s

    def _block_row(self, j: int, pos: int, stop: int) -> np.ndarray:
        """k(x_j, x_i) for the examples i of the block: a cached kernel row (dual), or one
        product X[block] @ x_j shared by every learner that example j updates (primal)."""
        if self.form == "dual":
            return self.R[int(self.slot[j]), pos:stop]
        row = self._rows_block.get(j)
        if row is None:
            row = self._rows_block[j] = np.asarray(self.X[pos:stop] @ self._row(j),
                                                   dtype=np.float64)
        return row

    def _row(self, j: int) -> np.ndarray:
        """Example j of this call as a dense row."""
        row: np.ndarray = self.X[j].toarray()[0] if sp.issparse(self.X) else self.X[j]
        return row

    def _learner_block(self, k: int, pos: int, stop: int, shared: np.ndarray,
                       base: int) -> np.ndarray:
        """Learner k over examples pos .. stop-1 from the shared scores; returns the score
        each trial was decided on.  An update on example j adds its own term,
        eta y_j (k(x_j, x_i) + C), to the scores of the rest of the block."""
        col = np.array(shared)
        y = self.Y[pos:stop, k]
        B = stop - pos
        cur = 0
        room = None
        while cur < B:
            wants = y[cur:] * col[cur:] <= self.tau
            if self.bound is not None:
                room = self.alpha[pos + cur:stop, k] < self.bound
                blocked = wants & ~room
                wants &= room
            hit = int(np.argmax(wants))
            if room is not None:  # the blocked trials up to the update (or the block's end)
                end = hit if wants[hit] else B - cur
                if blocked[:end].any():
                    self.logs[k].blocked.append(np.flatnonzero(blocked[:end])
                                                + (base + pos + cur))
            if not wants[hit]:  # no update in the rest of the block
                break
            j = pos + cur + hit
            self._update(k, j, base + j)
            cur += hit + 1
            if cur < B:
                step = self.Y[j, k] * self.eta
                col[cur:] += step * (self._block_row(j, pos, stop)[cur:] + self.C)
        return col

    def _update(self, k: int, j: int, trial: int) -> None:
        label = float(self.Y[j, k])
        if self.per_example:
            self.alpha[j, k] += 1
        if self.C:
            self.b[k] += self.eta * self.C * label
        s = int(self.slot[j])
        if s < 0:
            s = self._new_support(j)
        if self.form == "primal":
            self.W[k] += (self.eta * label) * self._row(j)
        else:
            self.counts[s, k] += 1
            self.coef[s, k] = self.eta * int(self.counts[s, k]) * label
        log = self.logs[k]
        self.gap[k] = 0.5 * self.gap[k] + 0.5 * (trial - log.last)
        log.note(trial, s, label)

    def _new_support(self, j: int) -> int:
        s = self.n_support
        self._reserve(s + 1)
        self.origin[s] = self.rows_seen + j  # the row is stored at the call's end
        if self.form == "dual":
            if s == self.R.shape[0]:  # double the capacity; rows past n_support unused
                grown = np.empty((s + max(16, s), self.R.shape[1]))
                grown[:s] = self.R
                self.R = grown
            self.R[s] = self._kernel_row(j)
        self.slot[j] = s
        self.n_support += 1
        return s

    def _kernel_row(self, j: int) -> np.ndarray:
        """k(x_j, X), as ``Kernel.matrix`` computes it, with the squared row norms of X (for
        a kernel that reads them: ``Kernel.needs_sqnorms``, the Gaussian) computed once per
        call instead of once per row."""
        if not self.kernel.needs_sqnorms or sp.issparse(self.X):
            row: np.ndarray = self.kernel.matrix(self.X[j:j + 1], self.X)[0]
            return row
        if self._sq is None:
            self._sq = np.einsum("ij,ij->i", self.X, self.X)
        x = self.X[j:j + 1]
        row = self.kernel.from_dots(np.asarray(x @ self.X.T), self._sq[j:j + 1, None],
                                    self._sq[None, :])[0]
        return row

    # -- the hypotheses (Figure 2) ------------------------------------------------------------
    def votes(self, k: int) -> np.ndarray:
        """c_0 .. c_K of learner k: the trials between two updates less the blocked ones."""
        return self.logs[k].votes(self.trials)

    def hypotheses(self) -> dict[str, Any]:
        """Per learner, the dual coefficients over the support store (eta alpha y summed) and
        the bias of each hypothesis: last, longest survivor, averaged (sum_k c_k h_k)."""
        if self._hyp is not None:
            return self._hyp
        S = self.n_support
        out: dict[str, Any] = {m: (np.zeros((S, self.K)), np.zeros(self.K))
                               for m in ("last", "longest_survivor", "averaged")}
        out["longest_index"] = np.zeros(self.K, dtype=np.int64)
        out["total_votes"] = np.zeros(self.K, dtype=np.int64)
        out["votes"] = [self.votes(k) for k in range(self.K)]
        for k in range(self.K):
            votes = out["votes"][k]
            _, seq, ys = self.logs[k].arrays()
            longest = int(np.argmax(votes))
            after = np.cumsum(votes[::-1])[::-1]
            total = int(votes.sum())
            out["longest_index"][k], out["total_votes"][k] = longest, total
            for mode, weights, b0 in (("last", np.ones(len(seq)), 1),
                                      ("longest_survivor",
                                       (np.arange(len(seq)) < longest).astype(float), 1),
                                      ("averaged", after[1:].astype(float), total)):
                coef, bias = out[mode]  # the terms summed in update order, as np.add.at
                coef[:, k] = np.bincount(seq, self.eta * ys * weights, minlength=S)
                bias[k] = b0 * self.b0 + self.eta * self.C * float(ys @ weights)
        out["last"][1][:] = self.b  # the bias the run built
        self._hyp = out
        return out

    def decision(self, X: Any, mode: str = "last") -> np.ndarray:
        """Scores (m x K) of hypothesis ``mode`` on the rows of X: h(x) for last, longest
        survivor and averaged (sum_k c_k h_k(x)); sum_{k=1}^K c_k sign(h_k(x)) for voted."""
        if mode not in PREDICTION_MODES:
            raise ParamError(f"hypothesis must be one of {', '.join(PREDICTION_MODES)}, "
                             f"got {mode!r}")
        m = X.shape[0]
        S = self.n_support
        if mode == "voted":
            return self._voted(X)
        hyp = self.hypotheses()
        coef, bias = hyp[mode]
        if self.kernel.is_linear:
            if mode == "last" and self.form == "primal":
                W = self.W.T
            else:
                W = self.support_rows().T @ coef if S else np.zeros((self.n, self.K))
            scores: np.ndarray = np.asarray(X @ W, dtype=np.float64) + bias
            return scores
        out = np.tile(bias, (m, 1))
        if S:
            block = _test_rows(2 * S)
            for lo in range(0, m, block):
                out[lo:lo + block] += (self.kernel.matrix(X[lo:lo + block], self.support_rows())
                                       @ coef)
        return out

    def _voted(self, X: Any) -> np.ndarray:
        """sum_{k=1}^K c_k sign(s_k(x)), s_k = s_{k-1} + eta y_u (k(x_u, x) + C), s_0 = b0:
        one kernel block against the support store, then per learner a cumulative sum."""
        m, S = X.shape[0], self.n_support
        out = np.zeros((m, self.K))
        if not S:
            return out
        votes = self.hypotheses()["votes"]
        updates = max(self.logs[k].arrays()[1].shape[0] for k in range(self.K))
        block = _test_rows(2 * S + updates)
        for lo in range(0, m, block):
            G = self.kernel.matrix(X[lo:lo + block], self.support_rows())
            for k in range(self.K):
                _, seq, ys = self.logs[k].arrays()
                if not seq.shape[0]:
                    continue
                steps = G[:, seq]  # in place from here: s_1 .. s_K, then their signs
                steps += self.C
                steps *= self.eta * ys
                steps[:, 0] += self.b0
                np.cumsum(steps, axis=1, out=steps)
                np.sign(steps, out=steps)
                out[lo:lo + block, k] = steps @ votes[k][1:].astype(np.float64)
        return out

    # -- traces ---------------------------------------------------------------------------
    def traces(self) -> list[Trace]:
        """One ``perceptron`` trace per learner, in the fast forms' format.

        After one call of :meth:`train` the trace is that of ``run("perceptron", X, y_k,
        epochs=E)``; after several, the trials are numbered over the whole run and
        ``n_examples`` is their count (epochs 1): the run on the rows of every call in
        order, each call's passes unrolled.
        """
        if len(self.calls) == 1:
            T, epochs = self.calls[0]
        else:
            T, epochs = self.trials, 1
        hyp = self.hypotheses()
        out = []
        for k in range(self.K):
            upd = self.logs[k].arrays()[0]
            examples = upd % T
            votes = hyp["votes"][k]
            longest = int(hyp["longest_index"][k])
            total = int(hyp["total_votes"][k])
            after = np.cumsum(votes[::-1])[::-1]

            def state(ex: np.ndarray, weights: np.ndarray, mode: str,
                      k: int = k) -> dict[str, Any]:
                coef, bias = hyp[mode]
                st: dict[str, Any] = {"b": float(bias[k]), "alpha": _alpha(ex, weights, T)}
                if self.kernel.is_linear:
                    w = (self.W[k] if mode == "last" and self.form == "primal"
                         else self.support_rows().T @ coef[:, k])
                    st["w"] = np.array(w, dtype=np.float64)  # a copy: W goes on learning
                return st

            ones = np.ones(examples.shape[0], dtype=np.int64)
            final = state(examples, ones, "last")
            final["votes"] = votes
            final["longest_survivor"] = {
                "index": longest, "vote": int(votes[longest]),
                **state(examples[:longest], ones[:longest], "longest_survivor")}
            final["averaged"] = {"total_votes": total,
                                 **state(examples, after[1:].astype(np.int64), "averaged")}
            mistakes = (np.concatenate(self.logs[k].mistakes).tolist()
                        if self.logs[k].mistakes else [])
            out.append(Trace(algorithm="perceptron", form=self.form, kernel=self.kernel.spec,
                             params=dict(self.params), n_examples=T, epochs=epochs,
                             mistakes=mistakes, updates=upd.tolist(),
                             final=finite_final(final, upd.tolist(), T)))
        return out


def _test_rows(width: int) -> int:
    """Rows of new data per block of a prediction whose float64 temporaries hold about
    ``width`` numbers a row (the products and the kernel values against the supports, a
    voted run's scores): up to 1024, fewer when that would pass KERNEL_CACHE_BYTES."""
    return int(min(1024, max(1, KERNEL_CACHE_BYTES // (8 * width))))


def _alpha(examples: np.ndarray, weights: np.ndarray, T: int) -> np.ndarray:
    """alpha, T int64 counts: the sum of ``weights`` over the updates on each example
    (``np.bincount(examples, weights, minlength=T)`` in integers)."""
    out = np.zeros(T, dtype=np.int64)
    np.add.at(out, examples, weights)
    return out


def relabel(labels: Any, classes: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """(classes, Y): Y[t, l] = +1 where labels[t] is classes[l], else -1."""
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise DataError(f"data: labels must be 1-dimensional, got shape {labels.shape}")
    classes = np.unique(labels) if classes is None else np.asarray(classes)
    unknown = ~np.isin(labels, classes)
    if unknown.any():
        raise DataError(f"data: label {labels[int(np.argmax(unknown))]!r} is not one of the "
                        f"classes {classes.tolist()}")
    if classes.shape[0] < 2:
        raise DataError("data: one-vs-rest needs at least 2 classes, got "
                        f"{classes.shape[0]}")
    Y = np.where(labels[:, None] == classes[None, :], 1, -1).astype(np.int64)
    return classes, Y
