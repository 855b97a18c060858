"""Valid but extreme input: features near float64's largest and smallest values.

The exact reference takes any finite data: its fragile rule and error bounds are floats, and
where they overflow the trial is undecidable in float64 (an infinite bound), never a Python
OverflowError.  Every fast form, in each engine, either agrees with the reference as the
differential suite asks or stops with one FloatRangeError line at or after a trial the
reference flags; no warning leaks from any of them (warnings are errors here).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from perceptron_oracle.compare import compare
from perceptron_oracle.errors import ParamError
from perceptron_oracle.fast import _compiled
from perceptron_oracle.fast.driver import FloatRangeError
from perceptron_oracle.long_runs import stop_excused
from perceptron_oracle.registry import ALGORITHMS, run

#: Each set is finite float64 data: rows near the top of the range (a square overflows), far
#: apart (a Gaussian kernel's value is exp(-1e120), a dyadic rational of 1e120 bits), and at
#: the bottom (subnormal products).
DATA = {
    "1.5e308": ([[1.5e308, 1.0]], [-1]),
    "1e160": ([[1e160, 2.0], [-3.0, 1e160], [1e160, 1e160]], [1, -1, -1]),
    "1e60": ([[1e60, 2.0], [-3.0, 1e60], [1e60, 1e60]], [1, -1, -1]),
    "subnormal": ([[5e-324, 1.0], [1.0, 5e-324], [0.0, 0.0]], [1, -1, 1]),
}
KERNELS = ("linear", "poly:degree=3,coef0=1,gamma=1", "rbf:gamma=1")
#: The engines a form with an engine choice runs in here (numba: when installed).
ENGINES = ("numpy", "numba") if _compiled.available() else ("numpy",)
CASES = [pytest.param(name, kernel, data, id=f"{name}-{kernel.split(':')[0]}-{data}")
         for name, algo in ALGORITHMS.items() for kernel in KERNELS
         if kernel == "linear" or algo.kernel_forms for data in DATA]


@pytest.mark.parametrize("algorithm, kernel, data", CASES)
def test_extreme_but_valid_data(algorithm, kernel, data):
    X, y = (np.array(v, dtype=float) for v in DATA[data])
    y = y.astype(np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = run(algorithm, X, y, impl="reference", kernel=kernel, epochs=2)
        expected.to_json()  # every exact number of the trace can be written
        algo = ALGORITHMS[algorithm]
        for form in algo.forms_for(kernel, {}):
            for engine in ENGINES if form in algo.engine_forms else (None,):
                label = f"{form} form, engine {engine or 'its own'}"
                try:
                    actual = run(algorithm, X, y, impl="fast", form=form, kernel=kernel,
                                 epochs=2, engine=engine)
                except FloatRangeError as stop:
                    assert "\n" not in str(stop)
                    assert stop_excused(expected, stop), f"{label}: {stop}"
                    continue
                result = compare(expected, actual, X)
                assert result.ok, f"{label}: {result.describe()}"


def test_csr_rows_whose_powers_overflow_are_valid_input():
    """Rows of 1e300 and 1e-300 as CSR: every fast form that takes CSR X stops with one
    FloatRangeError line where the reference flags, or agrees with it; no warning (the
    implicit form's sums of |x|^p overflowed with a numpy warning)."""
    import scipy.sparse as sp

    X = np.array([[1e-300, 1e300], [1e300, -1e-300], [1.0, 1.0]])
    y = np.array([1, -1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for algorithm, algo in ALGORITHMS.items():
            expected = run(algorithm, X, y, impl="reference", epochs=3)
            for form in algo.forms_for("linear", {}):
                if not algo.form(form).sparse:
                    continue
                try:
                    actual = run(algorithm, sp.csr_matrix(X), y, impl="fast", form=form,
                                 epochs=3)
                except FloatRangeError as stop:
                    assert stop_excused(expected, stop), f"{algorithm} {form}: {stop}"
                    continue
                assert compare(expected, actual, X).ok, f"{algorithm} {form}"


@pytest.mark.parametrize("engine", ENGINES)
def test_an_overflow_in_the_duals_final_weights_is_named_without_a_warning(engine):
    """The dual's final w = eta X^T (alpha y) overflows after the last score (eta = 3/2 on a
    row of 1.5e308): FloatRangeError at the last update, and no numpy warning first."""
    X, y = np.array([[1.5e308, 1.0]]), np.array([-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FloatRangeError, match="^trial 0 "):
            run("perceptron", X, y, impl="fast", form="dual", eta="3/2", engine=engine)


def _edge(algorithm, xfail=None, **params):
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(algorithm, params, marks=marks, id="-".join(
        [algorithm] + [f"{k}={v}" for k, v in params.items()]))


#: Parameters at the edge of float64, each with the algorithm it goes to.
EDGE_PARAMETERS = [
    _edge("perceptron", eta="1e-300"), _edge("perceptron", eta="1e300"),
    _edge("perceptron", b0="1e300"), _edge("perceptron", tau="1e300"),
    _edge("perceptron", lam="1e300"), _edge("perceptron", C="1e300", eta="1/3"),
    _edge("higher_order", c="999999/1000000"), _edge("higher_order", p=100),
    _edge("pnorm_perceptron", p=100),
    _edge("second_order", a="1e-300"), _edge("second_order", a="1e-30", a_growth="linear"),
    _edge("second_order", a="1e300"), _edge("romma", delta="1e-300"),
    _edge("pumma", C="1e300"), _edge("pumma", delta="999/1000"),
    _edge("alma", C="1e300"), _edge("alma", alpha="1e-300"), _edge("alma", B="1e300"),
    _edge("pumma", C="1e-300"),
]
SCALES = (1.0, 1e150, 1e-150)


@pytest.mark.parametrize("algorithm, params", EDGE_PARAMETERS)
def test_parameters_at_the_edge_of_float64(algorithm, params):
    """The reference runs (or refuses in one line), and every fast form agrees with it or
    stops where it flags, on small quarter-integer data at three scales."""
    from perceptron_oracle.errors import OracleInputError

    rng = np.random.default_rng(1)
    X0 = np.round(rng.standard_normal((12, 3)) * 4) / 4
    y = np.where(rng.random(12) < 0.5, 1, -1)
    algo = ALGORITHMS[algorithm]
    kernels = ("linear", "poly:degree=2,coef0=1,gamma=1") if algo.kernel_forms else ("linear",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for X, kernel in ((X0 * scale, kernel) for scale in SCALES for kernel in kernels):
            try:
                expected = run(algorithm, X, y, impl="reference", kernel=kernel, epochs=3,
                               **params)
            except OracleInputError as refusal:
                assert "\n" not in str(refusal)
                continue
            for form in algo.forms_for(kernel, params):
                for engine in ENGINES if form in algo.engine_forms else (None,):
                    label = f"x{X.max():g} {kernel} {form} form, engine {engine or 'its own'}"
                    try:
                        actual = run(algorithm, X, y, impl="fast", form=form, kernel=kernel,
                                     epochs=3, engine=engine, **params)
                    except FloatRangeError as stop:
                        assert stop_excused(expected, stop), f"{label}: {stop}"
                        continue
                    result = compare(expected, actual, X)
                    assert result.ok, f"{label}: {result.describe()}"


@pytest.mark.parametrize("C", ["1e-170", "1e-300"])
def test_pummas_soft_margin_at_a_tiny_C_follows_the_exact_run(C):
    """The soft margin's coordinates a = C y xi are of C's size: their squares underflow
    below C ~ 1e-154, and the fast forms took ||v~||^2 = 0 (case (i) at every update, p = 2)
    or called case (ii) infeasible (p > 2: the Gram test 0 <= 0).  Every primal engine and
    the dual (p = 2) make the exact run's mistakes and updates, for p = 2 and 3; the
    reference flags no trial at p = 2 (its shadow runs are the fast forms) and one at p = 3
    (its near-infeasibility test compared float(D) with float(zz2 tt2), both 0 here: 32 of
    the 36 trials were flagged)."""
    rng = np.random.default_rng(1)
    X = np.round(rng.standard_normal((12, 3)) * 4) / 4
    y = np.where(rng.random(12) < 0.5, 1, -1)
    for p in (2, 3):
        expected = run("pumma", X, y, impl="reference", epochs=3, C=C, p=p)
        assert len(expected.fragile) <= (p - 2), expected.fragile
        for form in ("primal", "dual") if p == 2 else ("primal",):
            for engine in ENGINES:
                actual = run("pumma", X, y, impl="fast", form=form, epochs=3, C=C, p=p,
                             engine=engine)
                label = f"p={p} {form} {engine}"
                assert actual.mistakes == expected.mistakes, label
                assert actual.updates == expected.updates, label


@pytest.mark.parametrize("algorithm", [name for name, algo in ALGORITHMS.items()
                                       if algo.kernel_forms])
def test_a_score_no_trace_can_hold_is_refused_at_once(algorithm):
    """Recorded scores under the Gaussian kernel on rows 1e60 apart: exp(-1e120) as p/q has
    about 1e120 digits (the trace format holds 100,000).  One DataError line, at once; the
    conversion ran for ever before."""
    from perceptron_oracle.errors import DataError

    X, y = (np.array(v, dtype=float) for v in DATA["1e60"])
    with pytest.raises(DataError, match="more than the 100,000 a trace holds") as info:
        run(algorithm, X, y.astype(np.int64), impl="reference", kernel="rbf:gamma=1",
            epochs=2, record_scores=True).to_json()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("algorithm, params", [
    ("perceptron", {"b0": "1e400"}), ("perceptron", {"C": "1e400"}),
    ("perceptron", {"eta": "1e-400"}), ("second_order", {"a": "1e400"}),
    ("second_order", {"a": "1e-400"}), ("pumma", {"C": "1e400"}), ("pumma", {"C": "1e-400"}),
    ("alma", {"B": "-1e400"}), ("alma", {"alpha": "1e-400"}), ("romma", {"delta": "1e-400"}),
])
def test_a_parameter_beyond_float64s_range_is_one_param_error(algorithm, params):
    """A rational parameter outside float64's range (which crashed the fast forms, and most
    references, with OverflowError or ZeroDivisionError) is refused by every implementation
    with one line naming it."""
    X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.25, -1.0]])
    y = np.array([1, -1, 1])
    (name,) = params
    for impl in ("reference", "exact", "fast"):
        with pytest.raises(ParamError, match=f"parameter {name} must lie within float64's "
                                             "range") as refusal:
            run(algorithm, X, y, impl=impl, **params)
        assert "\n" not in str(refusal.value)
