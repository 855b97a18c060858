"""The compiled engine's shared concerns, each written once and run over every fast form that
takes ``engine`` (one suite over several implementations, as CPython's decimal tests run one
suite over the C and the Python module).

The forms are read from the registry: every ``(algorithm, form)`` of ``family.engine_forms``,
called as ``family.form(form).run`` and held to ``family.implementation("reference")``.  A form
with several parameter regimes whose loops differ (PUMMA's primal: p = 2 and p > 2) is one
variant each.  The concerns:

- both engines match the reference on hypothesis-drawn data (dense and CSR X), as
  tests/test_differential.py compares (``fast_protocol.check_run``); the forms that take any
  kernel also under the polynomial and Gaussian kernels;
- an overflow names the same trial in both engines (per-family data that overflows);
- a NaN or an infinity in X is one DataError in either engine, dense and CSR;
- runs under ``forced_updates`` take the numpy path (every compiled loop made to fail);
- ``engine="numba"`` without numba is one ParamError line (and "auto" is then the numpy
  engine; an unknown engine is one ParamError line too).

What only one family's loops do (the Perceptron's and ROMMA's dual blocks, the p-norm
gradient passes, PUMMA's Newton) stays in that family's file; both engines on longer runs:
tests/test_long_engine_runs.py.  Without numba the compiled items are skipped (reason
stated); the ParamError for ``engine="numba"`` without numba is tested either way.
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from fast_protocol import (
    ENGINES,
    KERNEL_EXAMPLES,
    SHARE,
    assert_bad_value_named,
    assert_engines_stop_alike,
    check_run,
    needs_numba,
)
from fixtures import noisy_uniform
from perceptron_oracle.errors import ParamError
from perceptron_oracle.fast import _compiled, _compiled_pumma, _compiled_romma
from perceptron_oracle.fast import higher_order as fast_ho
from perceptron_oracle.fast import second_order as fast_so
from perceptron_oracle.fast.driver import forced_updates
from perceptron_oracle.properties.strategies import SEQUENCES, kernel_specs, nonlinear_kernels
from perceptron_oracle.reference.maximum_margin import NotConverged
from perceptron_oracle.registry import ALGORITHMS

#: Every (algorithm, form) whose declaration takes ``engine``.
ENGINE_FORMS = [(name, form) for name, family in ALGORITHMS.items()
                for form in family.engine_forms]


def _p_above_2(p2: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """``p2``'s parameters with p drawn from 5/2, 3 and 4 (the differential suite's p > 2)."""
    return st.tuples(p2, st.sampled_from([Fraction(5, 2), Fraction(3), Fraction(4)])).map(
        lambda drawn: {**drawn[0], "p": drawn[1]})


#: Forms run once per parameter regime: variant -> the parameters strategy (None: the form's
#: ``family.draw_params(form)``).
VARIANTS: dict[tuple[str, str], dict[str, Any]] = {
    ("pumma", "primal"): {
        "p=2": lambda: ALGORITHMS["pumma"].params_strategy(p2_only=True),
        "p>2": lambda: _p_above_2(ALGORITHMS["pumma"].params_strategy(p2_only=True)),
    },
}

CASES = [pytest.param(name, form, variant, id=f"{name}-{form}" + (f"-{variant}" if variant
                                                                 else ""))
         for name, form in ENGINE_FORMS
         for variant in (VARIANTS.get((name, form)) or {None: None})]


def _run(name: str, form: str) -> Any:
    return ALGORITHMS[name].form(form).run


def _params_strategy(name: str, form: str, variant: str | None) -> Any:
    if variant is None:
        return ALGORITHMS[name].draw_params(form)
    return VARIANTS[(name, form)][variant]()


# -- both engines against the reference -------------------------------------------------------

#: The forms run on CSR X as well as dense here (the dual forms on dense X, as before).
CSR_FORMS = {"primal"}


@needs_numba
@pytest.mark.parametrize("strategy", list(SEQUENCES))
@pytest.mark.parametrize("name,form,variant", CASES)
@settings(max_examples=max(10, settings.default.max_examples // SHARE))
@given(data=st.data())
def test_engines_match_reference(name, form, variant, strategy, data):
    """The drawn sequence and parameters (the linear kernel), dense X (and CSR X for the
    primal forms), each engine:
    the reference's decisions trial for trial (a divergence only at a fragile trial) and its
    final state within its bounds, or a float64 stop after a flagged trial."""
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    params = data.draw(_params_strategy(name, form, variant), label="params")
    epochs = data.draw(st.integers(1, 3), label="epochs")
    try:
        expected = ALGORITHMS[name].implementation("reference")(
            seq.X, seq.y, epochs=epochs, record_scores=True, **params)
    except NotConverged:  # no exact answer to compare with (SPEC.md 14.5)
        reject()
    run = _run(name, form)
    layouts = ((seq.X, "dense"), (sp.csr_matrix(seq.X), "csr")) if form in CSR_FORMS else (
        (seq.X, "dense"),)
    for engine in ENGINES:
        for X, kind in layouts:
            check_run(expected, partial(run, X, seq.y, epochs=epochs, engine=engine, **params),
                      seq.X, f"{name} {form} {kind} {engine} {params}")


#: Every (algorithm, form) whose declaration takes ``engine`` and any kernel.
KERNEL_ENGINE_FORMS = [(name, form) for name, form in ENGINE_FORMS
                       if ALGORITHMS[name].form(form).kernels == "any"]
#: The engines there are to run: without numba, the numpy engine alone.
AVAILABLE_ENGINES = ENGINES if _compiled.available() else ("numpy",)


@pytest.mark.parametrize("kernel_family", list(nonlinear_kernels()))
@pytest.mark.parametrize("strategy", list(SEQUENCES))
@pytest.mark.parametrize("name,form", KERNEL_ENGINE_FORMS)
@settings(max_examples=max(5, settings.default.max_examples // (2 * SHARE)))
@given(data=st.data())
def test_kernel_engines_match_reference(name, form, strategy, kernel_family, data):
    """A drawn kernel of ``kernel_family``, parameters for the form and the first
    KERNEL_EXAMPLES examples of the drawn sequence (the exact kernel runs grow fast), one or
    two epochs: each engine (the numpy engine alone without numba) makes the reference's
    decisions and ends within its bounds, or stops in float64 after a flagged trial."""
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    kernel = data.draw(kernel_specs(kernel_family), label="kernel")
    params = data.draw(ALGORITHMS[name].draw_params(form), label="params")
    epochs = data.draw(st.integers(1, 2), label="epochs")
    X, y = seq.X[:KERNEL_EXAMPLES], seq.y[:KERNEL_EXAMPLES]
    try:
        expected = ALGORITHMS[name].implementation("reference")(
            X, y, epochs=epochs, kernel=kernel, record_scores=True, **params)
    except NotConverged:  # no exact answer to compare with (SPEC.md 14.5)
        reject()
    run = _run(name, form)
    for engine in AVAILABLE_ENGINES:
        check_run(expected, partial(run, X, y, epochs=epochs, kernel=kernel, engine=engine,
                                    **params), X, f"{name} {form} {kernel} {engine} {params}")


# -- an overflow names the same trial in both engines -----------------------------------------

def _perceptron_data(T: int, n: int, seed: int, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, n)) * scale
    return X, np.where(rng.random(T) < 0.5, 1, -1)


def _huge_rows():
    """40 rows of 1e200 with a first column of 1e300: the state leaves float64 early."""
    X, y = _perceptron_data(40, 3, seed=2, scale=1e200)
    X[:, 0] = 1e300 * np.sign(X[:, 0])
    return X, y


def _romma_tiny_row():
    X, y = noisy_uniform(40, 3, seed=2, scale=1e-160)
    X[5] = 0.0
    X[5, 0] = 1e-300  # w ~ 1e300 after this update, scores overflow at the next ones
    return X, y


def _pumma_pair_apart_by_1e_300():
    """Rows of 1e-160 with one pair differing by 1e-300: w ~ 1e300 after that pair's update,
    and the next scores overflow."""
    X, y = noisy_uniform(40, 3, seed=2, scale=1e-160)
    X[7] = X[np.flatnonzero(y != y[7])[-1]]
    X[7, 0] += 1e-300
    return X, y


def _pumma_last_update():
    """The last trial's update overflows (z = x_pos - x_neg of 3.5e-133): the final state
    holds an infinity and no later score shows it."""
    h = 0.5000000005
    X = np.array([[0, h], [-1, h], [0, -h], [-3.48586423187426e-133, -h], [0, h]])
    return X, np.array([1, -1, -1, 1, -1])


def _dense(X):
    return X


#: (id, algorithm, form, data, layout, keywords): runs that leave float64's range.
OVERFLOWS = [
    ("perceptron-primal-dense", "perceptron", "primal", _huge_rows, _dense, {}),
    ("perceptron-primal-csr", "perceptron", "primal", _huge_rows, sp.csr_matrix, {}),
    ("perceptron-dual-poly", "perceptron", "dual", _huge_rows, _dense,
     {"kernel": "poly:degree=2"}),
    ("perceptron-dual-rbf", "perceptron", "dual", lambda: (_huge_rows()[0] / 1e300,
                                                          _huge_rows()[1]), _dense,
     {"eta": 1e308, "tau": 1e308, "kernel": "rbf:gamma=1"}),
    ("pnorm_perceptron-primal", "pnorm_perceptron", "primal",
     lambda: (_huge_rows()[0] * 1e8, _huge_rows()[1]), _dense, {"p": 3}),
    ("romma-primal-dense", "romma", "primal", _romma_tiny_row, _dense, {}),
    ("romma-primal-csr", "romma", "primal", _romma_tiny_row, sp.csr_matrix, {}),
]
for _kind, _layout in (("dense", _dense), ("csr", sp.csr_matrix)):
    OVERFLOWS.append((f"pumma-primal-p=2-{_kind}", "pumma", "primal",
                      _pumma_pair_apart_by_1e_300, _layout, {}))
    for _p in (Fraction(5, 2), Fraction(4)):
        OVERFLOWS += [
            (f"pumma-primal-p={_p}-{_kind}", "pumma", "primal", _pumma_pair_apart_by_1e_300,
             _layout, {"p": _p}),
            (f"pumma-primal-p={_p}-{_kind}-last-update", "pumma", "primal",
             _pumma_last_update, _layout, {"p": _p, "epochs": 1}),
        ]


@needs_numba
@pytest.mark.parametrize("name,form,data,layout,keywords",
                         [pytest.param(*case[1:], id=case[0]) for case in OVERFLOWS])
def test_overflow_names_the_same_trial_in_both_engines(name, form, data, layout, keywords):
    """State beyond float64's range: one FloatRangeError line naming the same trial."""
    X, y = data()
    X = layout(X)
    keywords = {"epochs": 2, **keywords}
    run = _run(name, form)
    assert_engines_stop_alike(lambda engine: run(X, y, engine=engine, **keywords))


# -- NaN and infinity in X --------------------------------------------------------------------

#: Parameters each form is run with, besides the defaults, where they choose the loop.
BAD_VALUE_PARAMS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("pumma", "primal"): [{"C": "1/4"}, {"p": 3}],
    ("pnorm_perceptron", "primal"): [{}, {"p": 3}],
}


def _with_engine(run: Any, y: Any, params: dict[str, Any], X: Any, engine: str) -> Any:
    return run(X, y, engine=engine, **params)


@needs_numba
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("row", [0, 30])
@pytest.mark.parametrize("name,form", ENGINE_FORMS)
def test_nan_or_infinity_in_x_is_one_data_error(name, form, row, bad):
    """Row 0 is scored at start-up, row 30 after it: dense and CSR, each engine raises the
    one-line DataError that names the value, as validation does (a form that takes any
    kernel also under the Gaussian kernel)."""
    run = _run(name, form)
    kernels = [{"kernel": "rbf:gamma=1"}] if (name, form) in KERNEL_ENGINE_FORMS else []
    for params in BAD_VALUE_PARAMS.get((name, form), [{}]) + kernels:
        X, y = noisy_uniform(50, 4, seed=3)
        X[row, 2] = bad
        assert_bad_value_named(partial(_with_engine, run, y, params), X, bad)


# -- shadow runs ------------------------------------------------------------------------------

#: Parameters a form is run with under forcing (besides the defaults).
FORCED_PARAMS: dict[tuple[str, str], dict[str, Any]] = {("pnorm_perceptron", "primal"): {"p": 3}}


def _no_loop(*args: Any, **kwargs: Any) -> None:
    pytest.fail("a compiled loop ran under forced_updates")


#: Families whose run under ``forced_updates`` is not the forced trials alone (PUMMA's
#: start-up until the first pair): there the numpy engine's forced run is what is asked.
FORCED_NOT_EXACT = {"pumma"}


@needs_numba
@pytest.mark.parametrize("name,form", ENGINE_FORMS)
def test_forced_updates_take_the_numpy_path(monkeypatch, name, form):
    """Shadow runs: the forced update trials (every other free update, and trials 5 and 70
    where the linear-threshold families may be forced) are imposed whatever the engine
    asked, no compiled loop runs, and the run is the numpy engine's."""
    X, y = noisy_uniform(60, 4, seed=4)
    run = _run(name, form)
    params = FORCED_PARAMS.get((name, form), {})
    free = run(X, y, epochs=2, engine="numpy", **params)
    forced = sorted(set(free.updates[::2]) | ({5, 70} if name in (
        "perceptron", "pnorm_perceptron") else set()))
    assert forced != free.updates and len(forced) > 5
    with forced_updates(forced):
        expected = run(X, y, epochs=2, engine="numpy", record_scores=True, **params)
    assert expected.updates != free.updates
    if name not in FORCED_NOT_EXACT:
        assert expected.updates == forced
    for module, loops in ((_compiled, "kernels"), (_compiled, "perceptron_loops"),
                          (_compiled, "pnorm_loops"), (_compiled_romma, "loops"),
                          (_compiled_pumma, "loops"), (fast_ho, "compiled"),
                          (fast_ho, "run_compiled"), (fast_so, "run_compiled")):
        monkeypatch.setattr(module, loops, _no_loop)
    with forced_updates(forced):
        trace = run(X, y, epochs=2, engine="numba", **params)
        assert trace.updates == expected.updates
        trace = run(X, y, epochs=2, engine="numba", record_scores=True, **params)
    assert trace.updates == expected.updates and len(trace.scores) == 120
    assert trace.scores == expected.scores


# -- engine="numba" without numba -------------------------------------------------------------

#: The ParamError messages (without numba, an unknown engine) where a family words them its
#: own way.
ENGINE_ERRORS = {"higher_order": ("numba is not installed", "engine: one of"),
                 "second_order": ("numba is not installed", "engine: one of")}


@pytest.mark.parametrize("name,form", ENGINE_FORMS)
def test_engine_numba_without_numba_is_one_param_error(monkeypatch, name, form):
    monkeypatch.setattr(_compiled, "available", lambda: False)
    missing, unknown = ENGINE_ERRORS.get(name, ("needs numba", "engine must be one of"))
    X, y = noisy_uniform(20, 3, seed=5)
    run = _run(name, form)
    with pytest.raises(ParamError, match=missing) as info:
        run(X, y, engine="numba")
    assert "\n" not in str(info.value)
    auto, numpy = run(X, y, engine="auto"), run(X, y, engine="numpy")
    assert (auto.mistakes, auto.updates) == (numpy.mistakes, numpy.updates)
    with pytest.raises(ParamError, match=unknown) as info:
        run(X, y, engine="fortran")
    assert "\n" not in str(info.value)
