"""The p-norm Perceptron's fast exact engine (``exact/pnorm_perceptron.py``) where the generic
suite (tests/test_exact_engines.py) cannot show it: raw Wdbc, near ties, the fragile rule's
magnitude against the reference's ``pnorm_magnitude``, extreme floats, followed branches."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perceptron_oracle import datasets
from perceptron_oracle.exact import pnorm_perceptron as engine
from perceptron_oracle.properties.strategies import SEQUENCES
from perceptron_oracle.reference import pnorm_perceptron as reference
from perceptron_oracle.reference.common import following


def assert_same(X, y, **run) -> None:
    want = reference.pnorm_perceptron(X, y, record_scores=True, **run)
    got = engine.pnorm_perceptron(X, y, record_scores=True, **run)
    assert got.to_dict() == want.to_dict()
    assert got == want
    quiet = engine.pnorm_perceptron(X, y, **run)  # the filtered path (no scores to record)
    want.scores = None
    assert quiet.to_dict() == want.to_dict()


def test_raw_wdbc_is_the_reference_trace():
    wdbc = datasets.wdbc()
    want = reference.pnorm_perceptron(wdbc.X, wdbc.y, epochs=2)
    got = engine.pnorm_perceptron(wdbc.X, wdbc.y, epochs=2)
    assert got.to_dict() == want.to_dict()
    assert len(want.mistakes) > 100


def test_unit_wdbc_with_scores():
    wdbc = datasets.wdbc(normalized=True, rows=150)
    assert_same(wdbc.X, wdbc.y, epochs=2)


#: 0.1 + 0.2 - 0.3 of the doubles is 2^-55: a score far below the rounding bound.
NEAR_TIE = np.array([[0.1, 0.2, -0.3], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.5, -0.25, 2.0]])


def test_near_ties_are_fragile_as_in_the_reference():
    y = np.array([1, 1, -1, 1])
    assert reference.pnorm_perceptron(NEAR_TIE, y, epochs=3).fragile
    assert_same(NEAR_TIE, y, epochs=3)


@pytest.mark.parametrize("p", [3, "5/2"])
def test_p_above_two_is_the_reference(p):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((10, 3))
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
    assert_same(X, y, epochs=2, p=p)


@pytest.mark.parametrize("scale", [2.0 ** -1070, 1e-300, 1e300])
def test_extreme_magnitudes(scale):
    rng = np.random.default_rng(11)
    X = rng.standard_normal((12, 4)) * scale
    y = np.where(rng.standard_normal(12) > 0, 1, -1)
    assert_same(X, y, epochs=2)


def test_magnitude_is_the_references(monkeypatch):
    """The engine's sum_i fl(V_i |x_i|) at every exact trial, subnormal products included,
    is the reference's ``pnorm_magnitude`` bit for bit."""
    seen = []
    magnitude = engine._TwoNormRun._magnitude

    def compare(self, j):
        got = magnitude(self, j)
        want = reference.pnorm_magnitude(self.V_f.tolist(), self.A[j].tolist(), Fraction(2),
                                         1.0)
        seen.append(got == want)
        return got

    monkeypatch.setattr(engine._TwoNormRun, "_magnitude", compare)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((20, 5)) * np.array([1.0, 1e-170, 1e-160, 3.0, 2.0 ** -1070])
    y = np.where(rng.standard_normal(20) > 0, 1, -1)
    assert_same(X, y, epochs=3)
    assert seen and all(seen)


def test_exact_ties_on_integer_data():
    X = np.array([[1.0, 2.0], [2.0, 4.0], [-1.0, -2.0], [3.0, 1.0], [0.0, 0.0]])
    y = np.array([1, -1, 1, -1, 1])
    assert not reference.pnorm_perceptron(X, y, epochs=4).fragile
    assert_same(X, y, epochs=4)


def test_rows_through_exact_data():
    X = [[1, Fraction(1, 3)], [Fraction(-2, 7), 5], [3, -1], [0, Fraction(1, 9)]]
    assert_same(X, [1, -1, -1, 1], epochs=3)


def test_followed_branches_and_the_filter():
    wdbc = datasets.wdbc(rows=60)
    for trials in ({5}, {7, 64, 65}, {119}):
        with following(trials):
            want = reference.pnorm_perceptron(wdbc.X, wdbc.y, epochs=2)
            got = engine.pnorm_perceptron(wdbc.X, wdbc.y, epochs=2)
        assert got.to_dict() == want.to_dict()


@pytest.mark.parametrize("strategy", sorted(SEQUENCES))
@settings(max_examples=20)
@given(data=st.data())
def test_filtered_run_matches_reference_on_draws(strategy, data):
    """Without scores the filter certifies trials: the same trace as the reference."""
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    epochs = data.draw(st.integers(1, 3), label="epochs")
    want = reference.pnorm_perceptron(seq.X, seq.y, epochs=epochs)
    got = engine.pnorm_perceptron(seq.X, seq.y, epochs=epochs)
    assert got.to_dict() == want.to_dict()
