"""ROMMA(delta), the fast exact engine: the reference's trace (``reference.romma``), computed
over ``exact.maximum_margin``'s integer kernel rows and dual state.

The trial loop is the reference's (``reference.romma``'s module docstring): the same
numbers mode (``run_modes``), the same solver of problem (2) (``solve_2norm``), the same
float64 error model (``RommaErrors`` on the state) and shadow runs
(``sharpen_by_shadows``); only the state's arithmetic is faster (``FastDualWeights``).
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
    dual_final,
    run_modes,
    sharpen_by_shadows,
    solve_2norm,
)
from ..reference.maximum_margin_errors import dual_bounds, remember_bounds
from ..reference.romma import PARAMS, RommaErrors, RommaParams
from ..trace import Trace
from .maximum_margin import FastDualWeights, FastRows, KernelTables, solve_2norm_mpf


def romma(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", delta: Any = 0,
          numbers: Any = "auto", record_scores: bool = False,
          shadows: ShadowRuns | None = None) -> Trace:
    """Run ROMMA(delta) over ``epochs`` passes of (X, y); returns the reference trace.

    ``shadows``: the fast forms the fragile rule re-runs (``common.ShadowRuns``, given by
    the registry); None keeps the a-priori fragile list."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(delta=delta, numbers=numbers))
    if par.numbers == "fraction" and not kern.is_rational:
        raise ParamError(f"parameter numbers=fraction needs a rational kernel (not {kern.name})")
    shadow = ShadowNotes()
    tables = KernelTables(Gram(kern, rows))

    def run(num: Numbers) -> tuple[Trace, float]:
        shadow.clear()
        return _run(rows, labels, epochs, kern, par, num, shadow, tables)

    trace = run_modes(par.numbers, kern.is_rational, epochs * len(rows), run)
    trace.fragile = sharpen_by_shadows(shadows, X, y, epochs, kern.spec, PARAMS.as_dict(par),
                                       trace, shadow.singular, shadow.thresholds)
    if not record_scores:
        trace.scores = None
    return trace


def _run(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
         par: RommaParams, num: Numbers, shadow: ShadowNotes, tables: KernelTables
         ) -> tuple[Trace, float]:
    """The reference's trial loop (``reference.romma._romma_run``) on ``FastDualWeights``
    (``tables``: the kernel's, shared by the runs of a call); returns the trace and the
    reference's own largest relative error (``run_modes``)."""
    w = FastDualWeights(FastRows(Gram(kern, rows), num, len(rows), tables), num)
    threshold = num(1 - par.delta)
    errors = RommaErrors(w, rows, kern, num, threshold)
    record = TrialRecord(labels, epochs, True)
    last = -1                    # the example of the last update (its margin is exactly 1)
    for t, j, label in record.trials():
        score = w.dot(j)
        margin = label * score
        record.score(score)
        test = None if j == last else threshold
        shadow.trial(test)
        error = errors.score_error(j)
        if errors.fragile(margin, error, test):
            record.flag(t)
        if margin <= 0:
            record.mistakes.append(t)
        if test is not None and record.decide(t, margin < threshold):  # y score < 1 - delta
            if errors.ill_conditioned(j, margin):
                shadow.singular.append(t)
            sens = errors.step(j, margin, error)
            if sens.fragile:
                record.flag(t)
            solution = (solve_2norm(w.vv, w.K(j)[j], margin, 1, True) if num.exact
                        else solve_2norm_mpf(w.vv, w.K(j)[j], margin, 1))   # problem (2)
            if solution is not None:
                lam, eta, kappa = solution
                w.step(lam, eta, {j: label}, 1, sens, errors.model.rho)
                errors.updated(sens, eta != 0, kappa, error.m)
                record.updates.append(t)
                last = j
    final = dual_final(w, rows, kern)
    trace = record.trace("romma", kern, dict(PARAMS.as_dict(par), numbers=num.label), final)
    remember_bounds(trace, dual_bounds(errors.model.rho, w.size, rows, kern.is_linear, final,
                                       w.slack), errors.model.lost)
    return trace, errors.model.worst_ref
