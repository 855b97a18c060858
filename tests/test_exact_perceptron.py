"""The Perceptron's fast exact engine (``exact/perceptron.py``) where the generic suite
(tests/test_exact_engines.py) cannot show it: raw Wdbc, the float filter's fallbacks, the
integer scaling of extreme floats, and data the reference reads through ``exact_data``."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perceptron_oracle import datasets
from perceptron_oracle.exact import perceptron as engine
from perceptron_oracle.kernels import LINEAR
from perceptron_oracle.properties.strategies import SEQUENCES
from perceptron_oracle.reference import perceptron as reference
from perceptron_oracle.reference.common import exact_data, following
from perceptron_oracle.registry import ALGORITHMS


def assert_same(X, y, **run) -> None:
    want = reference.perceptron(X, y, record_scores=True, **run)
    got = engine.perceptron(X, y, record_scores=True, **run)
    assert got.to_dict() == want.to_dict()
    assert got == want
    quiet = engine.perceptron(X, y, **run)  # the filtered path (no scores to record)
    want.scores = None
    assert quiet.to_dict() == want.to_dict()


def test_raw_wdbc_one_epoch_is_the_reference_trace():
    wdbc = datasets.wdbc()
    want = reference.perceptron(wdbc.X, wdbc.y)
    got = engine.perceptron(wdbc.X, wdbc.y)
    assert got.to_dict() == want.to_dict()
    assert len(want.mistakes) > 100


def test_raw_wdbc_with_every_option():
    wdbc = datasets.wdbc(rows=120)
    assert_same(wdbc.X, wdbc.y, epochs=2, eta="3/7", b0="-1/3", C=1, tau="1/4", lam="1/2",
                alpha_bound=2)


#: 0.1 + 0.2 - 0.3 of the doubles is 2^-55: a margin far below the rounding bound.
NEAR_TIE = np.array([[0.1, 0.2, -0.3], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.5, -0.25, 2.0]])


@pytest.mark.parametrize("params", [{}, {"tau": "1/1000"}, {"lam": "1/3"},
                                    {"eta": "1/3", "alpha_bound": 1}])
def test_near_ties_are_fragile_as_in_the_reference(params):
    y = np.array([1, 1, -1, 1])
    want = reference.perceptron(NEAR_TIE, y, epochs=3, **params)
    assert want.fragile  # the case is what it claims
    assert_same(NEAR_TIE, y, epochs=3, **params)


def test_the_reference_rule_decides_where_the_bracket_does_not(monkeypatch):
    """With a bracket [0, 2 S] on the reference's magnitude the engine must ask the
    reference's own rule on near ties: a wrong fallback changes the fragile list."""
    calls = []
    fallback = engine.LinearRun._reference_fragile

    def spy(self, margin, j, lam_used):
        calls.append(j)
        return fallback(self, margin, j, lam_used)

    def wide(self, K):
        return 3 * (K + self.data.n + 4) * 2.0 ** -53, 1.0

    monkeypatch.setattr(engine.LinearRun, "_reference_fragile", spy)
    monkeypatch.setattr(engine.LinearRun, "_relative_errors", wide)
    y = np.array([1, 1, -1, 1])
    assert_same(NEAR_TIE, y, epochs=3)
    assert calls


def test_a_wrong_fallback_would_be_seen(monkeypatch):
    """The same run with the fallback answering the opposite: the traces differ."""
    monkeypatch.setattr(engine.LinearRun, "_relative_errors",
                        lambda self, K: (3 * (K + 7) * 2.0 ** -53, 1.0))
    fallback = engine.LinearRun._reference_fragile
    monkeypatch.setattr(engine.LinearRun, "_reference_fragile",
                        lambda self, margin, j, lam_used: not fallback(self, margin, j,
                                                                       lam_used))
    y = np.array([1, 1, -1, 1])
    got = engine.perceptron(NEAR_TIE, y, epochs=3)
    assert got.fragile != reference.perceptron(NEAR_TIE, y, epochs=3).fragile


@pytest.mark.parametrize("scale", [2.0 ** -1070, 2.0 ** -1000, 1e-300, 1e300, 2.0 ** 1000])
def test_extreme_magnitudes(scale):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((12, 4)) * scale
    y = np.where(rng.standard_normal(12) > 0, 1, -1)
    assert_same(X, y, epochs=2)
    assert_same(X, y, epochs=2, b0=1, tau="1/8")


def test_subnormal_and_mixed_exponents():
    X = np.array([[5e-324, 1.0, -3.0], [1e308, -2.0 ** -1074, 0.0], [0.0, 0.0, 0.0],
                  [-1.5, 2.0 ** -60, 1e-200]])
    y = np.array([1, -1, 1, -1])
    assert_same(X, y, epochs=3)
    assert_same(X, y, epochs=2, lam=2, C="1/3")


def test_exact_ties_on_integer_data():
    X = np.array([[1.0, 2.0], [2.0, 4.0], [-1.0, -2.0], [3.0, 1.0], [0.0, 0.0]])
    y = np.array([1, -1, 1, -1, 1])
    want = reference.perceptron(X, y, epochs=4)
    assert not want.fragile  # float64 is exact here: ties are compared, not excused
    assert_same(X, y, epochs=4)
    assert_same(X, y, epochs=4, tau=2, b0="1/2", C=-1)


def test_rows_through_exact_data():
    """Lists of ints and Fractions (a denominator that is not a power of two)."""
    X = [[1, Fraction(1, 3)], [Fraction(-2, 7), 5], [3, -1], [0, Fraction(1, 9)]]
    y = [1, -1, -1, 1]
    assert_same(X, y, epochs=3)
    assert_same(X, y, epochs=3, eta="1/3", tau="1/5")


def test_followed_branches_and_the_filter():
    """A followed trial in the middle of a block the filter would certify."""
    wdbc = datasets.wdbc(rows=60)
    for trials in ({5}, {7, 64, 65}, {119}):
        with following(trials):
            want = reference.perceptron(wdbc.X, wdbc.y, epochs=2)
            got = engine.perceptron(wdbc.X, wdbc.y, epochs=2)
        assert got.to_dict() == want.to_dict()


@pytest.mark.parametrize("X,y,message", [
    (np.array([[1.0, np.nan]]), np.array([1]), "NaN"),
    (np.array([[1.0, 2.0]]), np.array([2]), "not -1 or +1"),
    (np.zeros((2, 2)), np.array([1]), "labels"),
])
def test_bad_data_as_the_reference(X, y, message):
    with pytest.raises(Exception) as want:
        reference.perceptron(X, y)
    with pytest.raises(type(want.value)) as got:
        engine.perceptron(X, y)
    assert str(got.value) == str(want.value) and message in str(got.value)


@pytest.mark.parametrize("params", [{}, {"eta": "1/2", "b0": "3/4", "tau": "1/8", "lam": 2},
                                    {"eta": "1/3"}, {"C": "1/1024", "b0": 5}])
@pytest.mark.parametrize("X", [
    np.array([[1.0, 2.0], [2.0, -4.0], [0.5, 0.25]]),
    np.array([[0.1, 0.2], [1e10, -3.0], [2.0 ** -40, 7.0]]),
    [[1, Fraction(1, 3)], [Fraction(-2, 7), 5]],
    [[3, 1], [-1, Fraction(1, 8)]],
], ids=["small-dyadic", "wide", "non-dyadic", "integers"])
def test_float64_exactness_is_the_references(X, params):
    """The engine's R^2 / dyadic-exponent form of ``_float64_is_exact`` decides as the
    reference's over the Fraction rows."""
    y = [1] * len(X)
    rows, _ = exact_data(X, y)
    data = engine.IntegerData.read(X, np.array(y))
    data.floats()
    p = reference.PARAMS.read(params)
    for updates in (1, 10, 2**40):
        assert engine._float64_is_exact(LINEAR, data, p, updates) == \
            reference._float64_is_exact(LINEAR, rows, p, updates)


@pytest.mark.parametrize("strategy", sorted(SEQUENCES))
@settings(max_examples=20)
@given(data=st.data())
def test_filtered_run_matches_reference_on_draws(strategy, data):
    """The generic suite records every score (every trial exact); without scores the
    filter certifies trials: the same trace."""
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    params = data.draw(ALGORITHMS["perceptron"].draw_params(), label="params")
    epochs = data.draw(st.integers(1, 3), label="epochs")
    want = reference.perceptron(seq.X, seq.y, epochs=epochs, **params)
    got = engine.perceptron(seq.X, seq.y, epochs=epochs, **params)
    assert got.to_dict() == want.to_dict()


@pytest.mark.parametrize("kernel,params", [
    ("poly:degree=1,coef0=0,gamma=1", {}),                      # the near ties again
    ("poly:degree=2,coef0=1,gamma=1", {"lam": "1/3", "tau": "1/8"}),
    ("poly:degree=3,coef0=1/2,gamma=1/2", {"C": 1, "b0": "-1/3", "alpha_bound": 1}),
])
def test_polynomial_kernels_in_the_dual(kernel, params):
    y = np.array([1, 1, -1, 1])
    if kernel.startswith("poly:degree=1"):
        assert reference.perceptron(NEAR_TIE, y, epochs=3, kernel=kernel).fragile
    assert_same(NEAR_TIE, y, epochs=3, kernel=kernel, **params)
    wdbc = datasets.wdbc(rows=40)
    assert_same(wdbc.X, wdbc.y, epochs=2, kernel=kernel, **params)


def test_polynomial_bracket_falls_back_to_the_reference(monkeypatch):
    """A bracket [0, 2 S_hi] on the reference's magnitude: the engine must ask the
    reference's rule, and its answer must be the reference's fragile list."""
    calls = []
    bracket = engine._KernelRun._magnitude_bracket
    fallback = engine.LinearRun._reference_fragile

    def wide(self, j, lam_used):
        found = bracket(self, j, lam_used)
        return None if found is None else (0.0, 2 * found[1], 0.0, 2 * found[3])

    def spy(self, margin, j, lam_used):
        calls.append(j)
        return fallback(self, margin, j, lam_used)

    monkeypatch.setattr(engine._KernelRun, "_magnitude_bracket", wide)
    monkeypatch.setattr(engine.LinearRun, "_reference_fragile", spy)
    y = np.array([1, 1, -1, 1])
    assert_same(NEAR_TIE, y, epochs=3, kernel="poly:degree=1,coef0=0,gamma=1", lam="1/3")
    assert calls
