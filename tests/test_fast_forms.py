"""Every fast form's promises beyond the drawn comparisons of tests/test_differential.py: bad
input refused with one error, CSR input taking the dense run's path, the forms of a family
agreeing with each other on a long run, and every form (each engine) against the reference
on a longer run than hypothesis draws.

Each test is written once and parametrized over every ``(algorithm, form)`` the registry
declares (``Family.declared``, ``Family.forms_for``, ``Family.kernel_forms``,
``Family.p2_forms``, ``Family.engine_forms``), so that a newly registered family or form is
tested here without a line added.  :data:`REGIMES` and :data:`LONG_RUNS` hold, per family,
the parameter sets whose paths differ and the data and tolerances of its long runs; a family
without an entry runs with its defaults.  What one family's paper or update rule alone asks
stays in that family's file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from fixtures import assert_final_close, noisy_uniform, noisy_unit_rows
from perceptron_oracle.compare import compare
from perceptron_oracle.datasets import separable
from perceptron_oracle.errors import DataError, ParamError
from perceptron_oracle.fast import _compiled
from perceptron_oracle.registry import ALGORITHMS
from perceptron_oracle.trace import Trace

#: Every (algorithm, form) the registry declares.
FORMS = [(name, form) for name, family in ALGORITHMS.items() for form in family.forms]

#: The engines there are to run: without numba, the numpy engine alone.
AVAILABLE_ENGINES = ("numpy", "numba") if _compiled.available() else ("numpy",)


def _engines(name: str, form: str) -> tuple[str | None, ...]:
    """The engines a form is run with: each available one where it takes ``engine``, its
    own (None) otherwise."""
    return AVAILABLE_ENGINES if ALGORITHMS[name].form(form).engine else (None,)


def _run(name: str, form: str, engine: str | None, X: Any, y: Any, **keywords: Any) -> Any:
    if engine is not None:
        keywords["engine"] = engine
    return ALGORITHMS[name].form(form).run(X, y, **keywords)


def _label(params: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in params.items()) or "defaults"


# -- bad input --------------------------------------------------------------------------------

BAD_DATA = [
    pytest.param(np.array([[1.0, 0.0], [np.nan, 1.0]]), np.array([1, -1]), "NaN", id="NaN"),
    pytest.param(np.array([[1.0, 0.0], [np.inf, 1.0]]), np.array([1, -1]), "infinity",
                 id="infinity"),
    pytest.param(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, 0]), "label", id="label-0"),
    pytest.param(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1]), "rows", id="rows"),
    pytest.param(np.zeros((0, 2)), np.zeros(0), "empty", id="empty"),
]


@pytest.mark.parametrize("X,y,match", BAD_DATA)
@pytest.mark.parametrize("name,form", FORMS)
def test_bad_data_fails_with_a_data_error(name, form, X, y, match):
    with pytest.raises(DataError, match=match):
        ALGORITHMS[name].form(form).run(X, y)


def _bad_parameters() -> list[Any]:
    cases = []
    for name, form in FORMS:
        declared = ALGORITHMS[name].form(form)
        cases.append(pytest.param(name, form, {"epochs": 0}, "epochs",
                                  id=f"{name}-{form}-epochs=0"))
        if declared.kernels == "linear":
            cases.append(pytest.param(name, form, {"kernel": "rbf:gamma=1"}, "linear kernel",
                                      id=f"{name}-{form}-rbf"))
        if declared.p2_only:
            cases += [pytest.param(name, form, {"p": p}, "p = 2", id=f"{name}-{form}-p={p}")
                      for p in (3, 4)]
    return cases


@pytest.mark.parametrize("name,form,keywords,match", _bad_parameters())
def test_what_a_form_does_not_take_fails_with_a_param_error(name, form, keywords, match):
    """epochs below 1; a non-linear kernel where the form takes the linear one only; p > 2
    where it takes p = 2 only."""
    X, y = noisy_uniform(10, 3, 0, offset=0.3)
    with pytest.raises(ParamError, match=match):
        ALGORITHMS[name].form(form).run(X, y, **keywords)


# -- CSR input --------------------------------------------------------------------------------

#: Per family, the parameter sets whose paths differ (besides the defaults, where listed).
REGIMES: dict[str, tuple[dict[str, Any], ...]] = {
    "perceptron": ({}, dict(eta=Fraction(1, 2), b0=-1, C=2, tau=Fraction(1, 4), lam=1)),
    "higher_order": (dict(c=Fraction(2, 5)),
                     dict(c=Fraction(1, 2), rho="theorem1", sparse=True),
                     dict(c=0), dict(p=4)),
    "pnorm_perceptron": ({}, dict(p=3)),
    "second_order": ({}, dict(a=Fraction(1, 3))),
    "romma": (dict(delta="1/10"),),
    "pumma": (dict(delta="1/10", C="1"), dict(delta="1/10", p=3)),
    "alma": ({}, dict(p=4)),
}


#: Per family, the final state's tolerance between the dense and the CSR run: (rtol, atol)
#: per entry, "*" for the others (a family without an entry: DEFAULT_CSR_TOLERANCE).
CSR_TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    "higher_order": {"*": (1e-12, 1e-14), "v": (0.0, 1e-14)},
    "pnorm_perceptron": {"*": (1e-12, 1e-14)},
}
DEFAULT_CSR_TOLERANCE = {"*": (1e-9, 1e-12)}


def _csr_cases() -> list[Any]:
    cases = []
    for name, family in ALGORITHMS.items():
        for params in REGIMES.get(name, ({},)):
            for form in family.forms:
                for kernel in ("linear",) + (("rbf:gamma=1",) if form in family.kernel_forms
                                             else ()):
                    if form not in family.forms_for(kernel, params, sparse=True):
                        continue
                    for engine in _engines(name, form):
                        cases.append(pytest.param(
                            name, form, kernel, params, engine,
                            id=f"{name}-{form}-{kernel.split(':')[0]}-{_label(params)}"
                               + (f"-{engine}" if engine else "")))
    return cases


@pytest.mark.parametrize("name,form,kernel,params,engine", _csr_cases())
def test_csr_input_gives_the_dense_run(name, form, kernel, params, engine):
    """X with about half its entries zero, dense and as a CSR matrix, two epochs: the same
    mistakes and updates, and the final state to rounding."""
    X, y = noisy_uniform(120, 8, 8, offset=0.3)
    X[np.abs(X) < 0.5] = 0.0
    dense, sparse = (_run(name, form, engine, data, y, epochs=2, kernel=kernel, **params)
                     for data in (X, sp.csr_matrix(X)))
    assert dense.mistakes and (sparse.mistakes, sparse.updates) == (dense.mistakes,
                                                                    dense.updates)
    tolerances = CSR_TOLERANCES.get(name, DEFAULT_CSR_TOLERANCE)
    assert_final_close(sparse.final, dense.final, *tolerances["*"], tolerances=tolerances)


# -- long runs --------------------------------------------------------------------------------

def _separable(T: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """T examples of separable data in 10 dimensions, margin 0.02 (on noisy data the
    maximum-margin forms' case-(ii) systems grow ill-conditioned and two float64 forms part
    at a near tie after some hundred updates, as they may)."""
    data = separable(T, 10, 0.02, seed=4)
    return data.X, data.y


@dataclass(frozen=True)
class LongRun:
    """A family's long run: ``data()`` (X, y), ``epochs``, ``params``, the least number of
    updates it must make, and the final state's tolerance (rtol, atol) between forms."""

    data: Callable[[], tuple[np.ndarray, np.ndarray]] = _separable
    epochs: int = 4
    params: dict[str, Any] = field(default_factory=dict)
    min_updates: int = 100
    rtol: float = 1e-8
    atol: float = 1e-10


#: Per family: its long run of the forms against each other.
LONG_RUNS: dict[str, LongRun] = {
    "higher_order": LongRun(data=lambda: noisy_unit_rows(400, 30, seed=12, noise=0.15),
                            epochs=3, params=dict(c=Fraction(1, 2)), rtol=1e-10, atol=1e-12),
    "second_order": LongRun(data=lambda: noisy_unit_rows(400, 10, seed=12, noise=0.15),
                            epochs=3),
    "romma": LongRun(data=lambda: _separable(1500), params=dict(delta="1/10"),
                     min_updates=200),
    "pumma": LongRun(data=lambda: _separable(1500), params=dict(delta="1/10", C="1"),
                     min_updates=200),
}
DEFAULT_LONG_RUN = LongRun()


def _agreement_cases() -> list[Any]:
    cases = []
    for name, family in ALGORITHMS.items():
        spec = LONG_RUNS.get(name, DEFAULT_LONG_RUN)
        forms = family.forms_for("linear", spec.params)
        for form in forms[1:]:
            for engine in _engines(name, form):
                cases.append(pytest.param(name, forms[0], form, engine,
                                          id=f"{name}-{form}" + (f"-{engine}" if engine
                                                                 else "")))
    return cases


@pytest.mark.parametrize("name,first,form,engine", _agreement_cases())
def test_forms_agree_on_a_long_run(name, first, form, engine):
    """Each form (each engine where it takes one) against the family's first form, on
    thousands of trials of the family's long run: the same mistakes and updates, and the
    final entries they share equal to rounding."""
    spec = LONG_RUNS.get(name, DEFAULT_LONG_RUN)
    X, y = spec.data()
    want = _run(name, first, None, X, y, epochs=spec.epochs, **spec.params)
    got = _run(name, form, engine, X, y, epochs=spec.epochs, **spec.params)
    assert got.mistakes == want.mistakes and got.updates == want.updates
    assert len(got.updates) > spec.min_updates
    shared = set(got.final) & set(want.final)
    assert "w" in shared
    assert_final_close({k: got.final[k] for k in shared}, {k: want.final[k] for k in shared},
                       rtol=spec.rtol, atol=spec.atol)


#: Per family, the parameters of its longer run against the reference (default: {}).
REFERENCE_RUN_PARAMS: dict[str, dict[str, Any]] = {
    "romma": dict(delta="1/10"),
    "pumma": dict(delta="1/10"),
}


def _reference_cases() -> list[Any]:
    return [pytest.param(name, form, engine,
                         id=f"{name}-{form}" + (f"-{engine}" if engine else ""))
            for name, form in FORMS
            if form in ALGORITHMS[name].forms_for("linear", REFERENCE_RUN_PARAMS.get(name, {}))
            for engine in _engines(name, form)]


@functools.cache
def _reference_run(name: str) -> Trace:
    """The family's exact run of :func:`test_a_longer_run_matches_the_reference` (once per
    family and process: every form and engine is compared with it)."""
    X, y = noisy_uniform(50, 3, 5, offset=0.3)
    return ALGORITHMS[name].implementation("reference")(
        X, y, epochs=3, record_scores=True, **REFERENCE_RUN_PARAMS.get(name, {}))


@pytest.mark.parametrize("name,form,engine", _reference_cases())
def test_a_longer_run_matches_the_reference(name, form, engine):
    """150 trials (50 examples, three epochs), longer than the drawn sequences and beyond
    Fraction's reach for ROMMA and PUMMA (IMPLEMENTING.md, "Exact ROMMA and PUMMA grow
    exponentially": the reference's mpmath mode): the comparison of
    tests/test_differential.py."""
    params = REFERENCE_RUN_PARAMS.get(name, {})
    X, y = noisy_uniform(50, 3, 5, offset=0.3)
    expected = _reference_run(name)
    result = compare(expected, _run(name, form, engine, X, y, epochs=3, **params), X)
    assert result.ok, result.describe()
