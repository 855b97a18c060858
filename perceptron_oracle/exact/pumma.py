"""PUMMA_p(delta), the fast exact engine: the reference's trace (``reference.pumma``).

The trial loop is the reference's (``reference.pumma``'s module docstring: start-up, the
score w.x + b, the mistake and update tests, problem (3) and the bias (20)), with the same
numbers mode (``run_modes``), error model (``PummaErrors``) and shadow runs.  For p = 2 the
state is ``FastState2``: the reference's ``State2`` (the soft margin's x~ folded into the
kernel) over ``exact.maximum_margin``'s integer kernel rows and dual state, problem (3) by
``solve_2norm_mpf`` in mpmath.  For p > 2 the state is the reference's own ``StateP`` (the
primal w in mpmath, Newton on the dual (18)): every value there is an mpmath evaluation
(powers with non-integer exponents, Newton's iterates) that the trace returns or decides
on, so the engine runs the same code and raises ``NotConverged`` where the reference does.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..reference.common import Gram, ShadowRuns, TrialRecord, check_epochs, exact_data
from ..reference.maximum_margin import (
    Numbers,
    ShadowNotes,
    run_modes,
    sharpen_by_shadows,
    solve_2norm,
)
from ..reference.maximum_margin_errors import ErrorModel, remember_bounds
from ..reference.pumma import PARAMS, Pair, PummaParams, solve_pair, start_up
from ..reference.pumma_errors import PummaErrors, final_error_bounds
from ..reference.pumma_states import State2, StateP, pair_bias
from ..trace import Trace
from .maximum_margin import FastDualWeights, FastRows, KernelTables, solve_2norm_mpf

__all__ = ["PARAMS", "final_error_bounds", "pumma"]


def pumma(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
          delta: Any = 0, C: Any = None, numbers: Any = "auto",
          record_scores: bool = False, shadows: ShadowRuns | None = None) -> Trace:
    """Run PUMMA_p(delta) over ``epochs`` passes of (X, y); returns the reference trace.

    ``shadows``: the fast forms the fragile rule re-runs (``common.ShadowRuns``, given by
    the registry); None keeps the a-priori fragile list."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(p=p, delta=delta, C=C, numbers=numbers))
    two = par.p == 2
    if not two and not kern.is_linear:
        raise ParamError("parameter p > 2 needs the linear kernel (kernels work for p = 2)")
    rational = two and kern.is_rational
    if par.numbers == "fraction" and not rational:
        raise ParamError("parameter numbers=fraction needs p = 2 and a rational kernel")
    shadow = ShadowNotes()
    tables = KernelTables(Gram(kern, rows)) if two else None

    def run(num: Numbers) -> tuple[Trace, float]:
        shadow.clear()
        return _run(rows, labels, epochs, kern, par, num, shadow, tables)

    trace = run_modes(par.numbers, rational, epochs * len(rows), run)
    if two and par.C is None:  # SPEC.md 14.5: shadow runs for the hard margin, p = 2
        trace.fragile = sharpen_by_shadows(shadows, X, y, epochs, kern.spec,
                                           PARAMS.as_dict(par), trace, shadow.singular,
                                           shadow.thresholds)
    elif two:   # the soft margin: the update test's left side y score + xi_j, measured
        tested = shadow.tested
        threshold = 1 - par.delta
        thresholds = [[0] if v is None else [0, threshold] for v in tested]
        trace.fragile = sharpen_by_shadows(shadows, X, y, epochs, kern.spec,
                                           PARAMS.as_dict(par), trace, shadow.singular,
                                           thresholds, tested)
    if not record_scores:
        trace.scores = None
    return trace


def _run(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
         par: PummaParams, num: Numbers, shadow: ShadowNotes,
         tables: KernelTables | None) -> tuple[Trace, float]:
    """The reference's trial loop (``reference.pumma._run``) on ``FastState2`` (p = 2, with
    the kernel's ``tables``, shared by the runs of a call) or ``StateP``; returns the trace
    and the reference's own largest relative error."""
    st: Any = (StateP(rows, num, par.p, par.C) if tables is None
               else FastState2(Gram(kern, rows), num, par.C, len(rows), tables))
    threshold = num(1 - par.delta)
    errors = PummaErrors(rows, kern, num, par, threshold)
    record = TrialRecord(labels, epochs, True)
    pair = Pair(num)

    def report(t: int, case_ii: bool) -> None:
        """No observer: the engine keeps no history."""

    for t, j, label in record.trials():
        if not pair.complete:
            start_up(t, j, label, pair, st, errors, record, shadow, report)
            continue
        score = st.dot(j) + pair.b                       # w.x + b
        margin = label * score
        slack = st.xi(j, label)                          # xi_j (0 without soft margin)
        record.score(score)
        member = j == pair.pos or j == pair.neg          # Lemma 4: y score + xi_j = 1 exactly
        test = None if member else threshold - slack     # the update test (none for members)
        shadow.trial(test, None if member else margin + slack)
        if errors.fragile(st, j, margin, slack, test):
            record.flag(t)
        if margin <= 0:                                  # mistake iff y score <= 0
            record.mistakes.append(t)
        if not member and record.decide(t, margin + slack < threshold):
            assert pair.pos is not None and pair.neg is not None     # the pair is complete
            pos, neg = (j, pair.neg) if label == 1 else (pair.pos, j)    # x replaces one
            m = errors.operations(st)
            result = solve_pair(t, pos, neg, st, errors, m, record, shadow)  # problem (3), (20)
            if result is not None:
                b, kappa, case_ii = result
                pair.take(pos, neg, b)
                errors.updated(st, pos, neg, case_ii, kappa, m)
                record.updates.append(t)
    return _finish(rows, labels, kern, par, num, st, pair, errors, record)


def _finish(rows: list[list[Fraction]], labels: list[int], kern: Kernel,
            par: PummaParams, num: Numbers, st: Any, pair: Pair, errors: PummaErrors,
            record: TrialRecord) -> tuple[Trace, float]:
    """The trace of a finished run: ``final`` and its bounds, as ``reference.pumma._run``
    assembles them."""
    final = dict(st.weights(rows, kern), b=pair.b)
    for key, index in (("pos", pair.pos), ("neg", pair.neg)):
        if index is not None:  # a one-class run has no pos or no neg: the key is left out
            final[key] = index
    if par.C is not None:
        final["xi"] = st.slacks(labels)
    trace = record.trace("pumma", kern, dict(PARAMS.as_dict(par), numbers=num.label), final)
    remember_bounds(trace, errors.final_bounds(final, st), errors.model.lost)
    return trace, errors.model.worst_ref


class FastState2(FastDualWeights, State2):
    """``State2`` over ``FastRows`` with ``FastDualWeights``' arithmetic; problem (3) by
    ``solve_2norm_mpf`` in mpmath (``update``)."""

    def __init__(self, gram: Gram, num: Numbers, C: Any, T: int, tables: KernelTables):
        State2.__init__(self, gram, num, C, T)
        self.K = FastRows(gram, num, T, tables)
        self.scaled, self.current = None, False

    def update(self, pos: int, neg: int, model: ErrorModel, m: int
               ) -> tuple[Any, float, bool] | None:
        """``State2.update``: the same operations on the same values."""
        ka = self.ka
        zz = ka(pos, pos) + ka(neg, neg) - 2 * ka(pos, neg)
        fpos = self.dot(pos) + self.xi(pos, 1)      # v~.x~_pos
        fneg = self.dot(neg) - self.xi(neg, -1)     # v~.x~_neg
        sens = self._sensitivity(pos, neg, zz, fpos - fneg, model, m)
        solution = (solve_2norm(self.vv, zz, fpos - fneg, 2, True) if self.num.exact
                    else solve_2norm_mpf(self.vv, zz, fpos - fneg, 2))
        if solution is None:
            return None
        if sens.fragile:
            model.lost = True
        lam, eta, kappa = solution
        self.step(lam, eta, {pos: 1, neg: -1}, 2, sens, model.rho)   # w~ = lam z~ + eta v~
        cross = ka(pos, neg)
        wpos = eta * fpos + lam * (ka(pos, pos) - cross)
        wneg = eta * fneg + lam * (cross - ka(neg, neg))
        return pair_bias(wpos, wneg), kappa, eta != 0
