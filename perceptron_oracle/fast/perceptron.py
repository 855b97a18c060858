"""The general Perceptron (Khardon & Wachman 2007) in float64: forms ``primal`` and ``dual``.

Both follow ``reference.perceptron`` trial for trial (SPEC.md 11) and share the block-ahead
driver (the numpy engine).  ``primal`` keeps w and b (linear kernel only; X dense or CSR);
``dual`` keeps alpha over a support set; on the driver, the kernel rows k(x_s, X) of its
support vectors, each computed once when the example first updates (up to
``KERNEL_CACHE_BYTES``; rows of further support vectors are recomputed per block).  With
numba the primal runs a compiled per-trial loop and the dual a compiled walk over blocks of
kernel values (``_compiled_dual``; SPEC.md 11.7).  The hypotheses' statistics (votes,
longest survivor, averaged) follow from the list of updates and the number of trials the
alpha-bound blocked under each hypothesis (Khardon & Wachman's Figure 2: a blocked trial does
not vote); their weights are computed at the end, or built during the run by the compiled
primal loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import check_finite_rows, validate
from ..errors import ParamError
from ..kernels import KERNEL_CACHE_BYTES, Kernel, parse_kernel
from ..reference.common import check_epochs
from ..reference.perceptron import PARAMS, PerceptronParams
from ..trace import Trace
from . import _compiled
from ._slots import (
    PERCEPTRON_B,
    PERCEPTRON_BAD_SCORE,
    PERCEPTRON_LONGEST,
    PERCEPTRON_STATE_SIZE,
    PERCEPTRON_SUPPORTS,
    PERCEPTRON_VOTES,
)
from .blas_threads import OneBlasThread
from .driver import finite_final, run_blocks


@dataclass(frozen=True)
class _BuiltWeights:
    """The longest survivor's index and w, the total vote and the averaged w, as the
    compiled primal loop built them during the run."""

    longest: int
    longest_w: np.ndarray
    total_votes: int
    averaged_w: np.ndarray


class _Model:
    """What both forms share: parameters as floats, alpha, the update rule's guard."""

    def __init__(self, X: Any, y: np.ndarray, par: PerceptronParams, kernel: Kernel):
        self.X, self.y, self.kernel = X, y, kernel
        self.eta, self.b0, self.C = float(par.eta), float(par.b0), float(par.C)
        self.tau, self.lam = float(par.tau), float(par.lam)
        self.bound = par.alpha_bound
        self.alpha = np.zeros(y.shape[0], dtype=np.int64)
        self.b = self.b0
        self.blocked = [0]  # blocked[k]: trials the alpha-bound blocked while h_k was in force
        with np.errstate(over="ignore", invalid="ignore"):  # X may not be checked yet (_run)
            self.lam_terms = (self.lam * y * kernel.diagonal(X)) if self.lam else None
        self.built: _BuiltWeights | None = None

    def lambda_trick(self, scores: np.ndarray, start: int, stop: int) -> np.ndarray:
        if self.lam_terms is not None:
            scores += np.where(self.alpha[start:stop] > 0, self.lam_terms[start:stop], 0.0)
        return scores

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        """The trials that update; counts the blocked ones the driver will consume.

        The driver consumes a block up to its first update (or whole), and nothing changes
        alpha before that trial, so the blocked trials before it are final and all belong
        to the hypothesis in force, h_k with k = len(self.blocked) - 1.
        """
        wants = margins <= self.tau
        if self.bound is not None:
            room = self.alpha[start:stop] < self.bound
            blocked = wants & ~room
            wants &= room
            if blocked.any():
                end = int(np.argmax(wants)) if wants.any() else wants.shape[0]
                self.blocked[-1] += int(np.count_nonzero(blocked[:end]))
        return wants

    def count_update(self, j: int) -> None:
        self.alpha[j] += 1
        self.blocked.append(0)
        self.b += self.eta * self.C * self.y[j]


class _Primal(_Model):
    def __init__(self, X: Any, y: np.ndarray, par: PerceptronParams, kernel: Kernel):
        super().__init__(X, y, par, kernel)
        self.w = np.zeros(X.shape[1])

    def scores(self, start: int, stop: int) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            s = self.X[start:stop] @ self.w
        if not np.isfinite(s).all() and not sp.issparse(self.X):  # validate() checked CSR
            check_finite_rows(self.X[start:stop])  # this is validate()'s finiteness check
        s += self.b
        return self.lambda_trick(s, start, stop)

    def update(self, j: int) -> None:
        step = self.eta * self.y[j]
        if sp.issparse(self.X):
            lo, hi = self.X.indptr[j], self.X.indptr[j + 1]
            self.w[self.X.indices[lo:hi]] += step * self.X.data[lo:hi]
        else:
            self.w += step * self.X[j]
        self.count_update(j)


class _Dual(_Model):
    def __init__(self, X: Any, y: np.ndarray, par: PerceptronParams, kernel: Kernel):
        super().__init__(X, y, par, kernel)
        T = y.shape[0]
        self.support: list[int] = []              # support examples, by first update
        self.slot = np.full(T, -1, dtype=np.int64)  # example -> position in support
        self.coef = np.zeros(16)                  # eta alpha_s y_s, by support position
        self.max_cached = max(1, KERNEL_CACHE_BYTES // (8 * T))
        self.rows = np.zeros((0, T))  # k(x_s, X) of cached supports (the numpy path's)

    def scores(self, start: int, stop: int) -> np.ndarray:
        S = len(self.support)
        cached = min(S, self.max_cached)
        s = self.coef[:cached] @ self.rows[:cached, start:stop]
        if S > cached:  # beyond the cache budget: this block's kernel values, computed now
            extra = self.kernel.matrix(self.X[start:stop], self.X[self.support[cached:]])
            s += extra @ self.coef[cached:S]
        s += self.b
        return self.lambda_trick(s, start, stop)

    def update(self, j: int) -> None:
        if self.slot[j] < 0:
            S = len(self.support)
            self.slot[j] = S
            self.support.append(j)
            if S == self.coef.shape[0]:
                self.coef = np.concatenate([self.coef, np.zeros(S)])
            if S < self.max_cached:
                if S == self.rows.shape[0]:
                    grown = np.zeros((min(max(2 * S, 16), self.max_cached), self.rows.shape[1]))
                    grown[:S] = self.rows
                    self.rows = grown
                self.rows[S] = self.kernel.matrix(self.X[j:j + 1], self.X)[0]
        self.count_update(j)
        self.coef[self.slot[j]] = self.eta * self.alpha[j] * self.y[j]

    # -- the compiled run's blocks (``compiled_dual_walk``) -------------------------------
    MIN_BLOCK, MAX_BLOCK, MAX_VALUES, FACTOR = 32, 2048, 1 << 18, 3.0

    @staticmethod
    def block_length(S0: int, entered: int, seen: int) -> int:
        """Trials in the next block of the compiled run.  Its kernel values against the S0
        supports of its start cost one level-3 product; a support entering inside the block
        costs one kernel value per later trial of the block, computed one at a time (about
        3 times the price of a value of the product), so the block stays below S0 / (3 r)
        trials at the observed rate r of new supports; within MIN_BLOCK .. MAX_BLOCK, and at
        most MAX_VALUES kernel values."""
        rate = (entered + 1) / (seen + 16)
        length = int(S0 / (_Dual.FACTOR * rate))
        return max(_Dual.MIN_BLOCK, min(length, _Dual.MAX_BLOCK,
                                        _Dual.MAX_VALUES // max(S0, 1)))

    @staticmethod
    def grown_store(store: list[np.ndarray], S: int, size: int) -> list[np.ndarray]:
        """The support store (rows, squared norms, coefficients) with room for ``size``."""
        rows, sq_rows, coef = (np.zeros((size,) + a.shape[1:]) for a in store)
        rows[:S], sq_rows[:S], coef[:S] = store[0][:S], store[1][:S], store[2][:S]
        return [rows, sq_rows, coef]


def _run(form: str, X: Any, y: Any, epochs: int, kernel: Any, given: dict[str, Any],
         record_scores: bool, engine: str) -> Trace:
    kern = parse_kernel(kernel)
    par = PARAMS.read(given)
    if form == "primal" and not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    chosen = _compiled.choose(engine, compiled_serves=form == "primal" or not sp.issparse(X),
                              kernel=kern)
    # Where the run's own scores see every entry of X (a NaN or infinity makes a score
    # non-finite), they are X's finiteness check: one pass saved.  The primal's scores see
    # whole rows (the numpy path's CSR blocks not every stored entry first); the compiled
    # dual's kernel values see every row once a support exists (``_run_compiled`` checks
    # the rows scored before), where the kernel carries a NaN or infinity into every value
    # (``Kernel.propagates_nonfinite``: not the Gaussian, whose infinity can give k = 0).
    run_checks = ((chosen == "numba" or not sp.issparse(X)) if form == "primal"
                  else chosen == "numba" and kern.propagates_nonfinite)
    X, y = validate(X, y, check_finite=not run_checks)
    epochs = check_epochs(epochs)
    model = (_Primal if form == "primal" else _Dual)(X, y, par, kern)
    with OneBlasThread():  # the blocks' many small BLAS products (fast.blas_threads)
        if chosen == "numba":
            mistakes, updates, blocked, scores = _run_compiled(form, model, epochs,
                                                               record_scores)
        else:
            result = run_blocks(model, y, epochs, record_scores)
            mistakes, updates = (np.asarray(trials, dtype=np.int64)
                                 for trials in (result.mistakes, result.updates))
            blocked, scores = np.asarray(model.blocked, dtype=np.int64), result.scores
    final = _final(X, y, updates, blocked, epochs, model, kern, compiled=chosen == "numba")
    update_trials = updates.tolist()
    # Without tau and a bound every mistake updates: the list is copied, not built again.
    mistake_trials = (list(update_trials) if np.array_equal(mistakes, updates)
                      else mistakes.tolist())
    return Trace(algorithm="perceptron", form=form, kernel=kern.spec, params=PARAMS.as_dict(par),
                 n_examples=y.shape[0], epochs=epochs, mistakes=mistake_trials,
                 updates=update_trials, final=finite_final(final, update_trials, y.shape[0]),
                 scores=scores)


def _run_compiled(form: str, model: _Model, epochs: int, record_scores: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float] | None]:
    """The run by the compiled per-trial loop (``_compiled``): its mistakes, updates, the
    trials the bound blocked per hypothesis and the scores; leaves the model's alpha, b and
    w as the block-ahead driver would."""
    T = model.y.shape[0]
    flags = np.zeros(epochs * T, dtype=np.uint8)
    scores = np.zeros(epochs * T if record_scores else 1)
    state = np.zeros(PERCEPTRON_STATE_SIZE)
    state[PERCEPTRON_B] = model.b
    if form == "primal":
        assert isinstance(model, _Primal)
        bad = _compiled_primal(model, epochs, flags, scores, state, record_scores)
        checked = model.X  # a NaN or infinity in X: the primal's finiteness check is the loop's
    else:
        bad = _compiled_dual(model, epochs, flags, scores, state, record_scores)
        checked = model.X if model.kernel.propagates_nonfinite else None  # as in _run
    _compiled.raise_if_bad(bad, T, state[PERCEPTRON_BAD_SCORE], checked)
    model.b = float(state[PERCEPTRON_B])
    mistakes, updates, blocked = _compiled.split_flags(flags)
    if form == "dual" and checked is not None:  # the rows scored before any support existed
        check_finite_rows(model.X[:int(updates[0]) + 1 if updates.size else T])
    return mistakes, updates, blocked, (scores.tolist() if record_scores else None)


def _loop_arguments(model: _Model) -> tuple[np.ndarray, np.ndarray, int]:
    """(y as float64, the lambda terms or a dummy, the alpha-bound or -1) for the loops."""
    lam_terms = model.lam_terms if model.lam_terms is not None else np.zeros(1)
    bound = -1 if model.bound is None else int(model.bound)
    return model.y.astype(np.float64), lam_terms, bound


def _compiled_primal(model: _Primal, epochs: int, flags: np.ndarray, scores: np.ndarray,
                     state: np.ndarray, record_scores: bool) -> int:
    """The compiled primal loop; it also builds the longest survivor's and the averaged
    hypothesis's w as it goes (``model.built``: votes-independent of any later pass).  The
    averaged w comes from the update history (``catch_up``) until ``FOLD_FROM`` updates at
    one trial in 8 or more, then is folded in as the run goes (``fold_and_add``); the
    longest survivor's w is saved as each record holder ends (``save_survivor``)."""
    yf, lam_terms, bound = _loop_arguments(model)
    dense, indptr, indices, data, sparse = _compiled.csr_parts(model.X)
    tally = _compiled.hypothesis_tally(model.w.shape[0])
    bad = int(_compiled.perceptron_loops().perceptron_primal(
        dense, indptr, indices, data, sparse, yf, epochs, model.eta, model.C, model.tau,
        lam_terms, model.lam_terms is not None, bound, model.w, model.alpha, state, flags,
        scores, record_scores, tally, _compiled.update_history(epochs * model.y.shape[0]),
        _compiled.FOLD_FROM, True))
    model.built = _BuiltWeights(int(state[PERCEPTRON_LONGEST]), tally[1, :, 0],
                                int(state[PERCEPTRON_VOTES]), tally[0, :, 0])
    return bad


def _compiled_dual(model: _Model, epochs: int, flags: np.ndarray, scores: np.ndarray,
                   state: np.ndarray, record_scores: bool) -> int:
    """The compiled dual run (``compiled_dual_walk``) on the model's data and rule."""
    assert isinstance(model, _Dual)
    yf, lam_terms, bound = _loop_arguments(model)
    rule = (model.eta, model.C, model.tau, lam_terms, model.lam_terms is not None, bound)
    T, n = model.X.shape
    store = [np.zeros((0, n)), np.zeros(0), np.zeros(0)]  # support rows, |x_s|^2, coef
    bad, _ = compiled_dual_walk(model.X, yf, epochs, model.kernel, rule, model.alpha,
                                model.slot, store, T, state, flags, scores, record_scores)
    return bad


def compiled_dual_walk(X: np.ndarray, yf: np.ndarray, epochs: int, kern: Kernel,
                       rule: tuple[Any, ...], alpha: np.ndarray, slot: np.ndarray,
                       store: list[np.ndarray], most: int, state: np.ndarray,
                       flags: np.ndarray, scores: np.ndarray, record_scores: bool
                       ) -> tuple[int, list[np.ndarray]]:
    """The compiled dual run by blocks of one epoch's examples (``_Dual.block_length``):
    the block's kernel values against the support set of its start by one product
    (``_compiled.kernel_block``), then ``perceptron_dual_block`` walks it trial by trial,
    each update adding its kernel row to the rest of the block's scores.

    ``rule`` = (eta, C, tau, lambda terms, whether they apply, alpha-bound or -1); ``slot``
    maps each example to its support id (-1: none yet); ``store`` = [support rows, their
    squared norms (``_compiled.kernel_norms``: 0 under all but the Gaussian kernel),
    coef = eta alpha y] holds the state[PERCEPTRON_SUPPORTS] supports so far (a caller may start
    with supports of its own); it grows up to ``most`` supports as the walk needs.
    Returns the first trial whose score is not finite (or -1) and the store."""
    T = X.shape[0]
    loops = _compiled.perceptron_loops()
    kernel = _compiled.kernel_code(kern)
    sq = _compiled.kernel_norms(X, kern)
    base = np.zeros(_Dual.MAX_BLOCK)
    entered, seen = 0, 0  # supports that entered and trials walked, for the block length
    with np.errstate(all="ignore"):
        for epoch in range(epochs):
            lo = 0
            while lo < T:
                S0 = int(state[PERCEPTRON_SUPPORTS])
                hi = min(T, lo + _Dual.block_length(S0, entered, seen))
                need = min(S0 + hi - lo, most)  # room for a support per example of the block
                if store[0].shape[0] < need:
                    store = _Dual.grown_store(store, S0, min(2 * need, most))
                Kt = _compiled.kernel_block(store[0][:S0], store[1][:S0], X, lo, hi, sq,
                                            *kernel)
                bad = loops.perceptron_dual_block(
                    X, sq, yf, lo, hi, epoch * T, Kt, base, *kernel, *rule, alpha, slot,
                    *store, state, flags, scores, record_scores)
                if bad >= 0:
                    return int(bad), store
                entered += int(state[PERCEPTRON_SUPPORTS]) - S0
                seen, lo = seen + hi - lo, hi
    return -1, store


def _final(X: Any, y: np.ndarray, updates: np.ndarray, blocked: np.ndarray, epochs: int,
           model: _Model, kern: Kernel, compiled: bool = False) -> dict[str, Any]:
    """The hypotheses' statistics (reference.perceptron's docstring).

    h_k lives from update k to update k+1 (``updates``: their trials); its vote is the number
    of trials between them less those the alpha-bound blocked (``blocked[k]``; Figure 2: they
    neither update nor vote).  The averaged coefficients sum, for each update, the votes of
    every hypothesis after it.  The weights: those the compiled primal loop built during the
    run (``model.built``), else one pass over the support rows (``_weights``; ``compiled``:
    by the compiled ``weighted_rows``).
    """
    T = y.shape[0]
    examples = updates % T
    bounds = np.concatenate([[-1], updates, [epochs * T]])
    votes = (np.diff(bounds) - 1 - blocked).astype(np.int64)
    longest = int(np.argmax(votes))
    after = np.cumsum(votes[::-1])[::-1]   # after[k] = sum of the votes of h_k, h_k+1, ...
    averaged = np.zeros(T, dtype=np.int64)
    np.add.at(averaged, examples, after[1:])

    ls_alpha = np.bincount(examples[:longest], minlength=T)
    total = int(votes.sum())
    w_model = getattr(model, "w", None)  # primal form: the last w as the run built it
    ws: list[Any] = [None, None, None]
    built = model.built
    if built is not None:  # the compiled primal built all three during the run
        assert (built.longest, built.total_votes) == (longest, total)
        ws = [built.longest_w, built.averaged_w, w_model]
    elif kern.is_linear:
        wanted = [a for a, w in ((ls_alpha, None), (averaged, None), (model.alpha, w_model))
                  if w is None]
        ws = _weights(X, y, model.eta, wanted, compiled) + [w_model]

    def hypothesis(alpha: np.ndarray, weight: int = 1, w: Any = None) -> dict[str, Any]:
        moved = model.eta * model.C * float(alpha @ y) if model.C else 0.0  # b's updates
        state: dict[str, Any] = {"b": weight * model.b0 + moved, "alpha": alpha}
        if kern.is_linear:
            state["w"] = w
        return state

    final = hypothesis(model.alpha, w=ws[2])
    final["b"] = model.b
    final["votes"] = votes
    final["longest_survivor"] = {
        "index": longest, "vote": int(votes[longest]), **hypothesis(ls_alpha, w=ws[0]),
    }
    final["averaged"] = {"total_votes": total, **hypothesis(averaged, total, ws[1])}
    return final


def _weights(X: Any, y: np.ndarray, eta: float, alphas: list[np.ndarray],
             compiled: bool = False) -> list[np.ndarray]:
    """w = eta X^T (alpha y) for each alpha, by one pass over the union of their support
    rows (compiled, dense X: each row read once in place; else the rows selected, i.e.
    copied, once for all of them), which is most of the cost of the final statistics at
    high update rates."""
    rows = np.flatnonzero(np.logical_or.reduce([a != 0 for a in alphas]))
    coef = np.column_stack([(a[rows] * y[rows]).astype(np.float64) for a in alphas])
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow: finite_final names it
        if compiled and not sp.issparse(X):
            W = np.zeros((X.shape[1], len(alphas)))
            _compiled.kernels().weighted_rows(X, rows, coef, W)
            W *= eta
        else:
            W = eta * np.asarray(X[rows].T @ coef)
    return [W[:, i] for i in range(len(alphas))]


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", eta: Any = 1,
           b0: Any = 0, C: Any = 0, tau: Any = 0, lam: Any = 0, alpha_bound: Any = None,
           record_scores: bool = False, engine: str = "auto") -> Trace:
    """Primal form: w and b in float64; dense or CSR X.

    ``engine``: "numba" runs the compiled per-trial loop (``fast._compiled``), "numpy" the
    block-ahead driver with X[block] @ w, "auto" (the default) the compiled loop when numba
    is installed (``fast._compiled`` says why).  Under ``forced_updates`` the numpy path
    runs whatever was asked."""
    return _run("primal", X, y, epochs, kernel,
                dict(eta=eta, b0=b0, C=C, tau=tau, lam=lam, alpha_bound=alpha_bound),
                record_scores, engine)


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", eta: Any = 1,
         b0: Any = 0, C: Any = 0, tau: Any = 0, lam: Any = 0, alpha_bound: Any = None,
         record_scores: bool = False, engine: str = "auto") -> Trace:
    """Dual (kernel) form: alpha over a support set.

    ``engine``: "numba" runs the compiled block walk (per block of trials one BLAS product of
    kernel values against the support set, updates added within the block; dense X only;
    SPEC.md 11.7), "numpy" the block-ahead driver scoring from cached kernel rows, "auto"
    (the default) the compiled walk when numba is installed.
    CSR input and runs under ``forced_updates`` take the numpy path whatever was asked."""
    return _run("dual", X, y, epochs, kernel,
                dict(eta=eta, b0=b0, C=C, tau=tau, lam=lam, alpha_bound=alpha_bound),
                record_scores, engine)
