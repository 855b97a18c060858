"""Every family's exact engine against its readable reference: the same trace, exactly.

The engine (``exact/<name>.py``, declared as ``Family.exact``) and the reference implement
one specification, as CPython's ``_decimal`` and ``_pydecimal`` do; one suite runs over
both.  On every golden case and on hypothesis draws of every sequence strategy, kernel and
parameter set the family declares, the two traces must be equal field by field: mistakes,
updates, fragile trials, every exact score and the final state (as JSON too, so that an
integer is not a Fraction), and the final-state error bounds that the golden files' tolerances
come from; and the engine's run without scores (its filtered path, the one the oracle takes)
the same trace but the scores.  The engine honours the two run-time contexts of the exact runs
(``reference.common``): ``following(trials)``, under which the update test is decided the
other way at ``trials`` (``TrialRecord.decide``: the branch a comparison follows), and
``reporting_progress(report)``, under which the run reports (done, total) every
PROGRESS_EVERY trials and at its end (``TrialRecord.trials``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from perceptron_oracle.golden import golden_files
from perceptron_oracle.properties.strategies import SEQUENCES, kernel_specs, nonlinear_kernels
from perceptron_oracle.reference.common import following, reporting_progress
from perceptron_oracle.reference.maximum_margin import NotConverged
from perceptron_oracle.registry import ALGORITHMS

#: The kernel draws' length and share of the profile's examples, as the differential suite's.
KERNEL_EXAMPLES = 8
KERNEL_SHARE = 4

ENGINES = [algo for algo in ALGORITHMS.values() if algo.exact is not None]


def assert_same_run(algorithm: str, X, y, **run) -> None:
    """The engine's trace is the reference's, the final-state bounds too."""
    algo = ALGORITHMS[algorithm]
    try:
        want = algo.implementation("reference")(X, y, record_scores=True, **run)
    except NotConverged:  # no exact answer (PUMMA p > 2, Newton stalled): the engine's too
        with pytest.raises(NotConverged):
            algo.implementation("exact")(X, y, record_scores=True, **run)
        reject()
    got = algo.implementation("exact")(X, y, record_scores=True, **run)
    assert got.to_dict() == want.to_dict()
    assert got == want
    assert algo.final_error_bounds(got, X) == algo.final_error_bounds(want, X)
    quiet = algo.implementation("exact")(X, y, **run)  # no scores: the engines' filtered path
    want.scores = None
    assert quiet.to_dict() == want.to_dict()


def _golden_groups() -> list:
    out = []
    for make in golden_files([a.name for a in ENGINES]):
        spec = make()
        for g, group in enumerate(spec.groups):
            if ALGORITHMS[group.algorithm].exact is not None:
                out.append(pytest.param(group, id=f"{spec.name}:{group.algorithm}:group{g}"))
    return out


@pytest.mark.parametrize("group", _golden_groups())
def test_engine_matches_reference_on_golden_cases(group) -> None:
    for case in group.cases:
        assert_same_run(group.algorithm, case.X, case.y, epochs=case.epochs,
                        kernel=group.kernel, **group.params)


def _matrix(kernel_families) -> list:
    return [pytest.param(algo.name, kernel, strategy, id=f"{algo.name}:{kernel}:{strategy}")
            for algo in ENGINES for kernel in kernel_families
            if kernel == "linear" or algo.kernel_forms for strategy in SEQUENCES]


@pytest.mark.parametrize("algorithm,kernel_family,strategy", _matrix(("linear",)))
@given(data=st.data())
def test_engine_matches_reference_on_draws(algorithm, kernel_family, strategy, data) -> None:
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    params = data.draw(ALGORITHMS[algorithm].draw_params(), label="params")
    epochs = data.draw(st.integers(1, 3), label="epochs")
    assert_same_run(algorithm, seq.X, seq.y, epochs=epochs, kernel="linear", **params)


@pytest.mark.parametrize("algorithm,kernel_family,strategy",
                         _matrix(tuple(nonlinear_kernels())))
@settings(max_examples=max(10, settings.default.max_examples // KERNEL_SHARE))
@given(data=st.data())
def test_kernel_engine_matches_reference_on_draws(algorithm, kernel_family, strategy,
                                                  data) -> None:
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    kernel = data.draw(kernel_specs(kernel_family), label="kernel")
    algo = ALGORITHMS[algorithm]   # the parameters a kernel form takes (p = 2 for some)
    params = data.draw(algo.draw_params(algo.kernel_forms[0]), label="params")
    epochs = data.draw(st.integers(1, 2), label="epochs")
    assert_same_run(algorithm, seq.X[:KERNEL_EXAMPLES], seq.y[:KERNEL_EXAMPLES],
                    epochs=epochs, kernel=kernel, **params)


@pytest.mark.parametrize("group", _golden_groups())
def test_engine_follows_branches_and_reports_progress_as_the_reference(group) -> None:
    """On each group's first case: the update test taken the other way at the first trial,
    the middle one and the last, and the progress reports, the same in both runs."""
    algo = ALGORITHMS[group.algorithm]
    case = group.cases[0]
    total = len(case.y) * case.epochs
    run = dict(epochs=case.epochs, kernel=group.kernel, record_scores=True, **group.params)
    traces, reports = [], []
    for impl in ("reference", "exact"):
        seen: list = []
        with following({0, total // 2, total - 1}), reporting_progress(
                lambda done, all_, seen=seen: seen.append((done, all_))):
            traces.append(algo.implementation(impl)(case.X, case.y, **run))
        reports.append(seen)
    assert traces[1].to_dict() == traces[0].to_dict()
    assert reports[1] == reports[0] and reports[0][-1] == (total, total)
