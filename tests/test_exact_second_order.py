"""The Second-Order Perceptron's fast exact engine (``exact/second_order.py``) where the
generic suite (tests/test_exact_engines.py, scores recorded: the integer run) cannot show it:
the filtered run (scores not returned) on raw Wdbc and on drawn data, with the shadow runs,
and its fallback to the integer run where a ball does not decide (an exact cancellation)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from flint import ctx
from hypothesis import given
from hypothesis import strategies as st

from perceptron_oracle import datasets
from perceptron_oracle.exact import second_order as engine
from perceptron_oracle.properties.strategies import SEQUENCES
from perceptron_oracle.reference.common import exact_data, reporting_progress
from perceptron_oracle.registry import ALGORITHMS

SOP = ALGORITHMS["second_order"]


def runs(X, y, **run):
    """The reference's and the engine's traces, both given the family's shadow runs."""
    want = SOP.implementation("reference")(X, y, **run)
    got = SOP.implementation("exact")(X, y, **run)
    return want, got


@pytest.fixture
def no_integer_run(monkeypatch):
    """Fail if the engine falls back to its integer run."""
    def refuse(*args, **kwargs):
        raise AssertionError("the filtered run did not decide")
    monkeypatch.setattr(engine.Run, "exact", refuse)


@pytest.fixture
def integer_runs(monkeypatch):
    """Count the engine's integer runs."""
    calls = []
    exact = engine.Run.exact

    def counted(self, *args, **kwargs):
        calls.append(1)
        return exact(self, *args, **kwargs)
    monkeypatch.setattr(engine.Run, "exact", counted)
    return calls


def test_raw_wdbc_one_epoch_is_the_reference_trace(no_integer_run):
    wdbc = datasets.wdbc()
    want, got = runs(wdbc.X, wdbc.y)
    assert got.to_dict() == want.to_dict()
    assert got == want
    assert len(want.mistakes) > 40


@pytest.mark.parametrize("params", [dict(a_growth="linear"), dict(a="1/1000")])
def test_raw_wdbc_filtered_with_other_parameters(no_integer_run, params):
    """Adaptive a (M inverted afresh per mistake); a small a, whose stated rule flags
    nearly every trial, so the shadows' filtered test decides hundreds of candidates."""
    wdbc = datasets.wdbc(rows=200 if params.get("a") else 40)
    want, got = runs(wdbc.X, wdbc.y, epochs=2, **params)
    assert got.to_dict() == want.to_dict()
    if params.get("a"):
        assert len(want.fragile) > 50


def test_raw_wdbc_with_scores_recorded():
    wdbc = datasets.wdbc(rows=120)
    want, got = runs(wdbc.X, wdbc.y, epochs=2, record_scores=True)
    assert got.to_dict() == want.to_dict()
    assert got == want


def test_an_exact_cancellation_falls_back_to_the_integer_run(integer_runs):
    """x . A^{-1} v = 0 exactly after one mistake on (1, 1), for x = (1, -1) orthogonal to
    it, while the balls of A^{-1} hold 1/3: the filtered run cannot decide the tie, and the
    integer run takes it as a mistake (y score <= 0), as the reference does.  The zero rows
    before them (exact zeros in both runs) carry the run past a progress report."""
    X = [[0.0, 0.0]] * 300 + [[1.0, 1.0], [1.0, -1.0], [2.0, 0.5]]
    y = [1] * 300 + [1, 1, -1]
    seen: list[list] = [[], []]
    traces = []
    for i, impl in enumerate(("reference", "exact")):
        with reporting_progress(lambda done, total, i=i: seen[i].append((done, total))):
            traces.append(SOP.implementation(impl)(X, y))
    want, got = traces
    assert integer_runs == [1]
    assert got.to_dict() == want.to_dict()
    assert 301 in want.mistakes
    assert seen[1] == seen[0]  # progress goes on from where the filtered run stopped


def test_float64_data_are_read_as_exact_data_reads_them():
    """The integer rows of a float64 array without Fractions: subnormals, huge and tiny
    exponents, signed zeros, integers; D z the same rationals as ``exact_data``'s."""
    X = np.array([[5e-324, -1.5, 1e300], [-0.0, 2.0 ** -1074 * 3, 0.1],
                  [123456789.0, -2.0 ** 60, 0.0]])
    y = np.array([1, -1, 1])
    D, z, labels, abs_X = engine.float64_data(X, y)
    rows, want_labels = exact_data(X, y)
    assert labels == want_labels
    assert [[Fraction(v, D) for v in row] for row in z] == rows
    assert abs_X.tolist() == [[abs(float(v)) for v in row] for row in rows]
    assert engine.float64_data(np.ones((3, 3), dtype=np.float32), y) is None
    assert engine.float64_data(X, np.array([1, 0, 1])) is None


def test_subnormal_data_match_the_reference():
    X = np.array([[5e-324, 1.0], [-3e-320, 2.0 ** -30], [1e-310, -1.0]])
    y = np.array([1, -1, 1])
    want, got = runs(X, y, epochs=2)
    assert got.to_dict() == want.to_dict()


def test_the_working_precision_is_restored():
    prec = ctx.prec
    wdbc = datasets.wdbc(rows=30)
    engine.second_order(wdbc.X, wdbc.y)
    assert ctx.prec == prec


@given(data=st.data())
@pytest.mark.parametrize("strategy", sorted(SEQUENCES))
def test_filtered_run_matches_reference_on_draws(strategy, data) -> None:
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    params = data.draw(SOP.draw_params(), label="params")
    epochs = data.draw(st.integers(1, 3), label="epochs")
    want, got = runs(seq.X, seq.y, epochs=epochs, **params)
    assert got.to_dict() == want.to_dict()
    assert got == want
