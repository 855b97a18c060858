"""PUMMA's compiled loops (``fast._compiled_pumma``: p = 2, and p > 2 with its compiled Newton):
what only they do.

The linear dual's compiled run is the primal's loop; the p > 2 loop's Newton finished in
Python, exact case ties, PUMMA's start-up, the choice of loop per engine, and stops on a
state beyond float64 at flagged trials, each against the reference and the numpy engine
(``engine="numpy"``, the block-ahead driver). The p > 2 loop's Python finishing pass (a
Newton left above NEWTON_TOLERANCE) is reached inside the loop, on natural small-integer data
and with the Newton cut to one step. The fallbacks to the numpy path (shadow runs,
``forced_run``) are checked by making the compiled loops fail if they are called. Without
numba the compiled items are skipped (reason stated). Both engines against the reference (p =
2 and p > 2), overflow, NaN and infinity in X and ``engine="numba"`` without numba:
tests/test_engines.py; both engines on longer runs (p = 2 and p > 2, hard and soft margin,
dense and CSR): tests/test_long_engine_runs.py.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from fast_protocol import (
    ENGINES,
    assert_engines_stop_alike,
    needs_numba,
)
from fast_protocol import check_against as _check
from fixtures import noisy_uniform
from perceptron_oracle import registry
from perceptron_oracle.compare import compare
from perceptron_oracle.fast import _compiled_pumma
from perceptron_oracle.fast import pumma as fp
from perceptron_oracle.fast.driver import FloatRangeError, forced_updates
from perceptron_oracle.trace import plain_value

# the exact runs as the registry gives them: with their shadow runs (SPEC.md section 3)
reference = registry.get("pumma").implementation("reference")


@needs_numba
def test_the_linear_dual_runs_the_primal_loop():
    """With p = 2 and the linear kernel the dual form's compiled run is the primal's loop
    (the same trace but its form); with another kernel ``engine`` leaves the driver in
    charge."""
    X, y = noisy_uniform(400, 6, seed=3)
    for C in (None, "1/2"):
        primal = fp.primal(X, y, delta="1/10", C=C, engine="numba", record_scores=True)
        dual = fp.dual(X, y, delta="1/10", C=C, engine="numba", record_scores=True)
        assert dual.form == "dual" and primal.form == "primal"
        assert (dual.mistakes, dual.updates, dual.scores, plain_value(dual.final)) == \
            (primal.mistakes, primal.updates, primal.scores, plain_value(primal.final))
        driver = fp.dual(X, y, delta="1/10", C=C, engine="numpy", record_scores=True)
        assert driver.updates == dual.updates and driver.scores != dual.scores
    rbf = {e: fp.dual(X[:60], y[:60], kernel="rbf:gamma=1", engine=e) for e in ENGINES}
    assert plain_value(rbf["numba"].final) == plain_value(rbf["numpy"].final)


def _integer_data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Small-integer rows (-3 .. 3) and random labels: p = 5/2 and 3 leave the compiled
    Newton above NEWTON_TOLERANCE now and then (``PNormSpace._finish``'s docstring)."""
    rng = np.random.default_rng(seed)
    T, n = int(rng.integers(6, 40)), int(rng.integers(1, 4))
    X = rng.integers(-3, 4, (T, n)).astype(float)
    return X, np.where(rng.random(T) < 0.5, 1, -1)


def _driver_with_compiled_newton(X, y, epochs, **params):
    """The block-ahead driver solving each update by the compiled Newton and finishing in
    Python (``setup``'s ``compiled``): the loop's algorithm, one update at a time."""
    model, _, Xv, yv, epochs = fp.setup("primal", X, y, epochs, "linear", params, True)
    return fp.run_blocks(model, yv, epochs, True), model


def _finishes(monkeypatch) -> list[int]:
    """The trials at which the p > 2 loop stops for the Python finishing pass."""
    trials: list[int] = []
    real = fp._finish_pending
    monkeypatch.setattr(fp, "_finish_pending",
                        lambda run, *args: trials.append(int(run.state[10]))
                        or real(run, *args))
    return trials


def _assert_loop_is_the_driver(trace, X, y, epochs, **params):
    """The loop's trace against the driver with the compiled Newton: the same decisions and
    pair, scores and w equal to rounding."""
    driver, model = _driver_with_compiled_newton(X, y, epochs, **params)
    assert (trace.mistakes, trace.updates) == (driver.mistakes, driver.updates)
    assert (trace.final["pos"], trace.final["neg"]) == (model.pos, model.neg)
    assert np.allclose(trace.scores, driver.scores, rtol=1e-9, atol=1e-9)
    assert np.allclose(trace.final["w"], model.space.w, rtol=1e-9, atol=1e-12)


@needs_numba
@pytest.mark.parametrize("p", [Fraction(5, 2), 3])
@pytest.mark.parametrize("seed", [6, 43])
def test_the_loop_finishes_an_unfinished_newton_and_resumes(monkeypatch, seed, p):
    """Small-integer data where the compiled Newton stops above NEWTON_TOLERANCE: the loop
    stops at that update, the finishing pass runs in Python, the update is applied and
    counted, the loop resumes at the next trial (also in the second epoch); the run is the
    reference's and the driver's (dense and CSR)."""
    X, y = _integer_data(seed)
    expected = reference(X, y, epochs=2, p=p, record_scores=True)
    for data in (X, sp.csr_matrix(X)):
        trials = _finishes(monkeypatch)
        trace = fp.primal(data, y, epochs=2, p=p, engine="numba", record_scores=True)
        assert trials and set(trials) <= set(trace.updates)
        assert max(trials) >= len(y)
        result = compare(expected, trace, X)
        assert result.ok, result.describe()
        _assert_loop_is_the_driver(trace, X, y, 2, p=p)


#: Small-integer sequences (p = 4, delta = 1/10, two epochs) with exact ties in the case test
#: (the reference flags those trials): decided for case (i) within CASE_TIE, every engine
#: makes the exact run's updates; decided by rounding alone, the loop parts from it at a
#: flagged trial (found by removing CASE_TIE from the loop).
TIES = [
    ([[2, 0], [-2, 2], [-2, 2], [0, 0], [0, 2], [0, 2], [0, 2], [2, -1], [1, 2], [0, -1],
      [-1, -2]], [-1, 1, -1, -1, 1, 1, 1, -1, 1, 1, -1]),
    ([[1, 2], [-2, -1], [-1, 0], [-1, 1], [-1, -1], [2, -1], [1, 2], [2, -2]],
     [1, -1, 1, 1, 1, -1, 1, 1]),
]


@needs_numba
@pytest.mark.parametrize("rows,labels", TIES)
def test_p_above_2_exact_case_ties_go_to_case_i_in_every_engine(rows, labels):
    X, y = np.array(rows, dtype=float), np.array(labels)
    expected = reference(X, y, p=4, delta="1/10", epochs=2, record_scores=True)
    assert expected.fragile
    for engine in ENGINES:
        for data in (X, sp.csr_matrix(X)):
            trace = fp.primal(data, y, p=4, delta="1/10", epochs=2, engine=engine)
            result = compare(expected, trace, X)
            assert result.ok and not result.excused, (engine, result.describe())
            assert trace.updates == expected.updates


@needs_numba
@pytest.mark.parametrize("C", [None, "1/2"])
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_a_newton_cut_to_one_step_is_finished_inside_the_loop(monkeypatch, kind, C):
    """NEWTON_MAX_STEPS = 1: nearly every case-(ii) update leaves the loop for the finishing
    pass and the loop resumes after it, hundreds of times over two epochs; the decisions
    are the uncut run's, the state the driver's (which finishes the same way).  The numpy
    engine, finishing its own cut Newton, decides alike (with the soft margin its slack
    terms reach the reference's Newton as Python floats: numpy's failed there)."""
    X, y = noisy_uniform(400, 6, seed=7)
    data = sp.csr_matrix(np.where(np.abs(X) < 0.3, 0.0, X)) if kind == "csr" else X
    params = dict(p=3, delta="1/10", C=C)
    uncut = fp.primal(data, y, epochs=2, engine="numba", **params)
    monkeypatch.setattr(fp, "NEWTON_MAX_STEPS", 1)
    trials = _finishes(monkeypatch)
    trace = fp.primal(data, y, epochs=2, engine="numba", record_scores=True, **params)
    assert len(trials) > 100 and max(trials) >= len(y)
    assert (trace.mistakes, trace.updates) == (uncut.mistakes, uncut.updates)
    assert np.allclose(trace.final["w"], uncut.final["w"], rtol=1e-8, atol=1e-10)
    _assert_loop_is_the_driver(trace, data, y, 2, **params)
    assert fp.primal(data, y, epochs=2, engine="numpy", **params).updates == trace.updates


@needs_numba
def test_start_up_with_an_infeasible_pair_and_a_mistake_free_store():
    """The first negative is stored without a mistake (score -1); the first positive equals
    it, so the pair is infeasible (hard margin): no update, the positive is not stored; the
    next positive completes the pair.  Both engines and the reference agree."""
    X = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [3.0, -1.0], [0.5, 0.5], [2.0, 1.0]])
    y = np.array([-1, 1, 1, 1, -1, 1])
    expected = reference(X, y, epochs=2, record_scores=True)
    assert expected.updates[:2] == [0, 3] and expected.mistakes[0] == 1
    for engine in ENGINES:
        for data in (X, sp.csr_matrix(X)):
            _check(expected, fp.primal(data, y, epochs=2, engine=engine), X, engine)


def _no_loop() -> None:
    pytest.fail("the compiled loop ran where the numpy path must")


@needs_numba
def test_shadow_runs_take_the_numpy_path(monkeypatch):
    """Under forced_updates and in forced_run neither the compiled loop nor (p > 2) the
    compiled Newton is called, whatever the engine asked; the runs are the numpy
    engine's."""
    X, y = noisy_uniform(60, 4, seed=4)
    free = fp.primal(X, y, epochs=2, C="1/4", engine="numpy")
    forced = sorted(set(free.updates[::2]))
    with forced_updates(forced):
        expected = fp.primal(X, y, epochs=2, C="1/4", engine="numpy", record_scores=True)
    assert expected.updates != free.updates and len(expected.updates) > 10
    monkeypatch.setattr(_compiled_pumma, "loops", _no_loop)
    with forced_updates(forced):
        trace = fp.primal(X, y, epochs=2, C="1/4", engine="numba", record_scores=True)
    assert trace.updates == expected.updates and trace.scores == expected.scores
    shadow, tested = fp.forced_run("primal", X, y, 2, "linear", {"C": "1/4"}, forced)
    assert shadow.updates == expected.updates and len(tested) == 120
    for p in (Fraction(3), 4):
        free = fp.primal(X, y, p=p, engine="numpy")
        with forced_updates(free.updates[::2]):
            runs = [fp.primal(X, y, p=p, engine=engine) for engine in ("numba", "numpy")]
        assert runs[0].updates == runs[1].updates
        assert plain_value(runs[0].final) == plain_value(runs[1].final)


@needs_numba
def test_p_above_2_takes_the_compiled_loop_on_numba(monkeypatch):
    """p > 2: "numba" and "auto" run the compiled per-trial loop
    (``fast._numba_pumma.pumma_pnorm_primal``), "numpy" the block-ahead driver with the numpy
    Newton; the p = 2 loop is not called."""
    X, y = noisy_uniform(200, 5, seed=4)
    calls: list[str] = []
    real = _compiled_pumma.loops()

    class Spy:
        def __getattr__(self, name):
            if name in ("pumma_pnorm_primal", "pumma_primal", "pumma_newton"):
                calls.append(name)
            return getattr(real, name)

    monkeypatch.setattr(_compiled_pumma, "loops", Spy)
    runs = {}
    for engine in ("numpy", "numba", "auto"):
        calls.clear()
        runs[engine] = fp.primal(X, y, p=3, C="1/4", engine=engine)
        assert calls == ([] if engine == "numpy" else ["pumma_pnorm_primal"]), engine
    assert runs["numba"].updates == runs["auto"].updates == runs["numpy"].updates


@needs_numba
def test_auto_and_the_registry_take_the_compiled_loop(monkeypatch):
    X, y = noisy_uniform(80, 5, seed=6)
    assert "primal" in registry.get("pumma").engine_forms
    expected = fp.primal(X, y, engine="numba", C="1")
    for trace in (fp.primal(X, y, C="1"),
                  registry.run("pumma", X, y, impl="fast", C="1"),
                  registry.run("pumma", X, y, impl="fast", engine="numba", C="1")):
        assert trace.updates == expected.updates
        assert plain_value(trace.final) == plain_value(expected.final)
    calls = []
    real = _compiled_pumma.loops
    monkeypatch.setattr(_compiled_pumma, "loops", lambda: calls.append(1) or real())
    fp.primal(X, y)
    registry.run("pumma", X, y, impl="fast", engine="numpy")
    assert calls == [1]


@needs_numba
def test_a_lost_state_may_leave_float64_on_a_flagged_trial():
    """x_22 and x_23 are 1.3e-142 apart: the update on trial 22 is near-singular, the exact
    state is lost there, and every later trial is fragile.  Both engines' float64 state then
    overflows (a NaN score at trial 47): they stop with the one FloatRangeError line naming
    that trial, which the reference flags (found by the thorough profile: the differential
    suite now accepts such a stop only on a flagged trial)."""
    a = 5.00000001e-001
    X = np.array([[a, 0.0]] * 21 + [[1.0, -1.0], [a, -1.26843805e-142], [a, 0.0], [a, 0.0]])
    y = np.array([-1] * 22 + [1, -1, -1])
    expected = reference(X, y, epochs=2)
    assert 22 in expected.updates and set(range(22, 50)) <= set(expected.fragile)
    for engine in ENGINES:
        with pytest.raises(FloatRangeError) as info:
            fp.primal(X, y, epochs=2, engine=engine)
        assert info.value.trial in expected.fragile
        assert "\n" not in str(info.value)


@needs_numba
def test_a_form_that_parts_at_a_flagged_trial_may_leave_float64_later():
    """At trial 23 the exact run declines an update whose z = (0, -1.3e-142) is near-singular
    (flagged); a float64 form may take it, w grows to ~1e142 and the state overflows at
    trial 26, which the exact run (on its own path) does not flag.  The stop is excused by
    the earlier flag, as compare() excuses every trial after a part (thorough profile)."""
    X = np.array([[0.3125, -1.0], [0.25, -1.0]] + [[0.25, 0.0]] * 20
                 + [[0.25, -1.26843805e-142], [0.25, 0.0], [0.25, 0.0]])
    y = np.array([-1] * 22 + [1, -1, -1])
    expected = reference(X, y, epochs=3)
    assert expected.updates == [0, 22, 26] and 23 in expected.fragile
    for engine in ENGINES:
        with pytest.raises(FloatRangeError) as info:
            fp.primal(X, y, epochs=3, engine=engine)
        assert info.value.trial not in expected.fragile
        assert min(expected.fragile) <= info.value.trial


@needs_numba
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_an_overflow_at_the_last_update_stops_every_engine(kind):
    """The last trial's update overflows (z = x_pos - x_neg of 3.5e-133 makes w_0 about
    -1.1e133, reached through an intermediate beyond float64): no later score shows it, so
    the final state holds -inf.  Every engine, dense and CSR, stops with the one-line
    FloatRangeError at that update (found by the hypothesis suite: both engines
    returned w = (-inf, -inf) and the comparison raised), and the reference flags it."""
    h = 0.5000000005
    X = np.array([[0, h], [-1, h], [0, -h], [-3.48586423187426e-133, -h], [0, h]])
    y = np.array([1, -1, -1, 1, -1])
    expected = reference(X, y, record_scores=True)
    assert expected.updates[-1] == 4 and 4 in expected.fragile
    data = sp.csr_matrix(X) if kind == "csr" else X
    assert_engines_stop_alike(lambda engine: fp.primal(data, y, engine=engine))
