"""The matrix forms' updates in place, their drift checks, the compiled engine, and long runs.

- SOP's primal inverse and HO's primal A_k are updated in place by level-2 BLAS; SOP's dual
  H and HO's dual D_+ are packed triangles bordered per mistake.  No mistake allocates an
  n x n (k x k) temporary: tracemalloc measures the peak of one update.
- The bordered inverse equals (a I + G)^{-1} after hundreds of mistakes; a planted drift is
  found by the residual check and refactored.
- The compiled engine (numba, optional) makes the numpy engine's mistakes and, for the
  primal forms, the same float64 state bit for bit; it is compared with the reference on the
  drawn sequences too.
- Long runs agree with the exact reference trial for trial (or part only on a flagged
  trial), with both engines.  The reference is exact and slow (SOP's fraction-free integers
  grow with the mistakes), so CI runs LONG_TRIALS trials; by hand, longer:

      PO_LONG_TRIALS=8000 pytest -p no:cacheprovider -q tests/test_matrix_updates.py -k long
"""

from __future__ import annotations

import os
import tracemalloc
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fixtures import noisy_gaussian, noisy_quarters
from perceptron_oracle.compare import compare
from perceptron_oracle.fast import higher_order as ho
from perceptron_oracle.fast import second_order as sop
from perceptron_oracle.fast.driver import FloatRangeError
from perceptron_oracle.properties.strategies import SEQUENCES
from perceptron_oracle.reference.second_order import PARAMS as SOP_PARAMS
from perceptron_oracle.registry import get, run
from perceptron_oracle.trace import plain_value

LONG_TRIALS = int(os.environ.get("PO_LONG_TRIALS", "1200"))
NUMBA = ho.numba_available()
needs_numba = pytest.mark.skipif(not NUMBA, reason="numba (the optional compiled engine) "
                                                   "is not installed")
ENGINES = ["numpy", pytest.param("numba", marks=needs_numba)]


# -- no n x n / k x k temporaries --------------------------------------------------------------
def _peak_of(fn: Any) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_sop_primal_update_allocates_no_matrix():
    n = 300
    X, y = noisy_gaussian(200, n, 1)
    model = sop._Primal(X, y, SOP_PARAMS.read({"a": 1}), False)
    for j in range(40):
        model.update(j)
    peak = _peak_of(lambda: model.update(40))
    assert peak < n * n * 8 / 8, peak          # a few n-vectors, no n x n array


def test_ho_primal_update_allocates_no_matrix():
    n = 300
    X, y = noisy_gaussian(200, n, 2)
    trace, model = ho.run_model("primal", X[:40], y[:40], epochs=1)
    peak = _peak_of(lambda: model.update(0))
    assert peak < n * n * 8 / 8, peak


def test_sop_dual_update_allocates_no_k_by_k_array():
    X, y = noisy_gaussian(400, 5, 3, flip=0.5)
    model = sop._Dual(X, y, SOP_PARAMS.read({"a": 1}), sop.parse_kernel("linear"), False)
    for j in range(300):
        model.update(j)
    k = model.H.k
    assert model.H.data.shape[0] >= (k + 1) * (k + 2) // 2   # no doubling in the next one
    peak = _peak_of(lambda: model.update(300))
    assert peak < k * k * 8 / 8, (peak, k)


def test_sop_dual_bordered_inverse_is_the_inverse():
    X, y = noisy_gaussian(600, 6, 4, flip=0.5)
    model = sop._Dual(X, y, SOP_PARAMS.read({"a": Fraction(1, 2)}), sop.parse_kernel("linear"),
                      False)
    for j in range(500):
        model.update(j)
    Xm = X[model.support]
    exact = np.linalg.inv(0.5 * np.eye(len(model.support)) + Xm @ Xm.T)
    H = model.H.full()
    assert np.array_equal(H, H.T)
    assert np.allclose(H, exact, rtol=1e-9, atol=1e-9)
    assert np.allclose(model.coef, exact @ y[model.support], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_sop_planted_drift_is_found_and_refactored(form):
    X, y = noisy_gaussian(200, 5, 5, flip=0.5)
    params = SOP_PARAMS.read({"a": 1})
    model = (sop._Primal(X, y, params, False) if form == "primal"
             else sop._Dual(X, y, params, sop.parse_kernel("linear"), False))
    for j in range(sop.DRIFT_EVERY - 2):     # model.k counts from 1: k = DRIFT_EVERY - 1
        model.update(j)
    assert model._drift() < 1e-12 and model.refactors == 0
    if form == "primal":
        model.Ainv[1, 1] += 1e-6                        # a planted drift
    else:
        model.H.data[2] += 1e-6                         # entry (1, 1) of the packed H
    assert model._drift() > sop.DRIFT_TOL
    model.update(sop.DRIFT_EVERY - 2)                   # k = DRIFT_EVERY: the check
    assert model.refactors == 1 and model._drift() < 1e-12


def test_sop_refactor_matches_a_fresh_inverse_with_the_compiled_engine(monkeypatch):
    """Refactors in the middle of compiled runs (the loop stops at every drift check)."""
    X, y = noisy_gaussian(6000, 8, 6)
    monkeypatch.setattr(sop, "DRIFT_TOL", 0.0)           # refactor at every check
    for name in ["numpy"] + (["numba"] if NUMBA else []):
        trace = sop.primal(X, y, engine=name)
        Xm = X[trace.final["support"]]
        w = np.linalg.solve(np.eye(8) + Xm.T @ Xm, Xm.T @ y[trace.final["support"]])
        assert np.allclose(trace.final["w"], w, rtol=1e-10, atol=1e-12)


# -- the compiled engine -----------------------------------------------------------------------
@needs_numba
@pytest.mark.parametrize("form,params", [
    ("sop primal", {}), ("sop primal", {"a": Fraction(1, 3), "a_growth": "linear"}),
    ("primal", {}), ("primal", {"rho": "theorem1", "c": Fraction(1, 2), "sparse": True}),
    ("primal", {"rho": "constant", "c": Fraction(3, 4)}), ("implicit", {})])
def test_engines_agree_bit_for_bit(form, params):
    X, y = noisy_gaussian(3000, 40, 7)
    run_form = sop.primal if form == "sop primal" else getattr(ho, form)
    traces = {}
    for name in ("numpy", "numba"):
        traces[name] = run_form(X, y, epochs=2, engine=name, **params)
    a, b = traces["numpy"], traces["numba"]
    assert a.mistakes == b.mistakes and a.updates == b.updates
    if form == "implicit":      # numpy: implicit factors, then A_k; numba: A_k throughout
        assert np.allclose(a.final["w"], b.final["w"], rtol=1e-11, atol=1e-13)
    else:
        assert plain_value(a.final) == plain_value(b.final)


@needs_numba
def test_compiled_engine_reports_overflow_like_the_driver():
    X, y = noisy_gaussian(200, 4, 8)
    X[150] = 1e300
    for name in ("numpy", "numba"):
        with pytest.raises(FloatRangeError, match=r"trial 1\d\d "):
            ho.primal(X, y, engine=name)


@pytest.mark.parametrize("form", [ho.primal, ho.implicit, sop.primal])
def test_engine_names_are_checked(form):
    """Before any data work, whichever path the run would take (a short implicit run never
    reaches the compiled loop)."""
    with pytest.raises(ho.ParamError, match="engine: one of auto, numpy, numba"):
        form(*noisy_gaussian(20, 3, 9), engine="fortran")


def test_implicit_p2_switches_to_the_primal_representation():
    """p = 2, contracting factors: once 4 k_+ >= n the implicit form replays its factors into
    A_k and goes on as the primal form (from there the same state as the primal's)."""
    X, y = noisy_gaussian(400, 20, 10)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    trace, model = ho.run_model("implicit", X, y, epochs=2, engine="numpy")
    primal = ho.primal(X, y, epochs=2, engine="numpy")
    assert model.A is not None and not model.frho
    assert trace.mistakes == primal.mistakes
    assert np.allclose(trace.final["w"], primal.final["w"], rtol=1e-12, atol=1e-14)
    rough = X * 3.0                                    # rho ||x||^2 > 1: stays implicit
    _, model = ho.run_model("implicit", rough, y, epochs=2, rho="constant", c=Fraction(1, 2))
    assert model.A is None and model.frho


@needs_numba
@pytest.mark.parametrize("strategy", sorted(SEQUENCES))
@settings(max_examples=8)
@given(data=st.data())
def test_compiled_engine_matches_reference(strategy: str, data: st.DataObject) -> None:
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    epochs = data.draw(st.integers(1, 3), label="epochs")
    for algorithm, forms in (("second_order", ("primal",)),
                             ("higher_order", ("primal", "implicit"))):
        params = data.draw(get(algorithm).draw_params("primal"), label=f"{algorithm} params")
        if params.get("pseudoinverse"):
            continue
        expected = run(algorithm, seq.X, seq.y, impl="reference", epochs=epochs,
                       record_scores=True, **params)
        for form in forms:
            actual = run(algorithm, seq.X, seq.y, impl="fast", form=form, epochs=epochs,
                         engine="numba", **params)
            result = compare(expected, actual, seq.X)
            assert result.ok, f"{algorithm} {form}: {result.describe()}"


# -- long runs against the exact reference ------------------------------------------------------
_REFERENCE: dict[Any, Any] = {}

LONG = [("second_order", "primal", {"a": 1}),
        ("second_order", "dual", {"a": Fraction(1, 2)}),
        ("higher_order", "primal", {"c": Fraction(2, 5)}),
        ("higher_order", "primal", {"c": Fraction(3, 4), "rho": "constant"}),
        ("higher_order", "dual", {"c": Fraction(2, 5)}),
        ("higher_order", "implicit", {"c": Fraction(2, 5)})]


@pytest.mark.parametrize("algorithm,form,params,name", [
    pytest.param(a, f, p, name, marks=needs_numba if name == "numba" else (),
                 id=f"{a}-{f}-{i}-{name}")
    for i, (a, f, p) in enumerate(LONG)
    for name in (("numpy",) if f == "dual" else ("numpy", "numba"))])
def test_long_run_matches_the_reference(algorithm, form, params, name):
    """Every mistake and update of a LONG_TRIALS-trial run (about a quarter of the trials
    are mistakes) is the reference's, or the run parts at a trial the reference flags."""
    X, y = noisy_quarters(LONG_TRIALS, 3, 11)
    key = (algorithm, tuple(sorted(params.items())))
    if key not in _REFERENCE:
        _REFERENCE[key] = run(algorithm, X, y, impl="reference", record_scores=True, **params)
    expected = _REFERENCE[key]
    assert len(expected.mistakes) > LONG_TRIALS // 10
    takes_engine = form in get(algorithm).engine_forms   # SOP's and HO's duals: the driver only
    actual = run(algorithm, X, y, impl="fast", form=form,
                 engine=name if takes_engine else None, **params)
    result = compare(expected, actual, X)
    assert result.ok, result.describe()
