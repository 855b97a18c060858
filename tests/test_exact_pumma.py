"""PUMMA's fast exact engine (``exact.pumma``) beyond the generic suite
(tests/test_exact_engines.py): raw Wdbc (hard and soft margin, p = 2 and p > 2) and Newton's
``NotConverged`` raised where the reference raises it."""

from __future__ import annotations

from fractions import Fraction

import pytest

from perceptron_oracle import datasets
from perceptron_oracle.exact import pumma as engine
from perceptron_oracle.reference import pumma as reference
from perceptron_oracle.reference import pumma_states
from perceptron_oracle.reference.maximum_margin import NotConverged


def assert_same(X, y, **run) -> None:
    want = reference.pumma(X, y, record_scores=True, **run)
    got = engine.pumma(X, y, record_scores=True, **run)
    assert got.to_dict() == want.to_dict()
    assert got == want
    assert reference.final_error_bounds(got, X) == reference.final_error_bounds(want, X)


def test_raw_wdbc_first_200_rows_one_epoch() -> None:
    data = datasets.wdbc(rows=200)
    assert_same(data.X, data.y, epochs=1)


@pytest.mark.parametrize("params", [dict(C=Fraction(1, 10)), dict(C=3, delta=Fraction(1, 4)),
                                    dict(numbers="fraction", C=2),
                                    dict(numbers="mpmath:64")])
def test_soft_margin_and_numbers_on_raw_wdbc_rows(params: dict) -> None:
    data = datasets.wdbc(rows=40)
    assert_same(data.X, data.y, epochs=2, **params)


def test_kernels_with_the_soft_margin() -> None:
    data = datasets.wdbc(rows=30)
    assert_same(data.X, data.y, epochs=2, kernel="poly:degree=2,coef0=1/3,gamma=1/3", C=3)
    assert_same(data.X, data.y, epochs=1, kernel="rbf:gamma=1/1000000", C=Fraction(1, 2))


def test_p_above_2_on_raw_wdbc_rows() -> None:
    data = datasets.wdbc(rows=30)
    assert_same(data.X, data.y, epochs=1, p=Fraction(5, 2))
    assert_same(data.X, data.y, epochs=1, p=3, C=1)


def test_not_converged_where_the_reference_raises_it(monkeypatch) -> None:
    """A Newton that stalls (here: made to) raises NotConverged from both, with the same
    message (``run_modes`` retries at twice the bits, twice, then raises)."""
    def stalled(*args, **kwargs):
        raise NotConverged("Newton on the dual (18) stalled")

    monkeypatch.setattr(pumma_states, "newton_dual", stalled)
    X = [[1.0, 2.0], [-1.0, 0.5], [2.0, -1.0], [-2.0, -0.25]]
    y = [1, -1, 1, -1]
    with pytest.raises(NotConverged) as want:
        reference.pumma(X, y, epochs=2, p=3)
    with pytest.raises(NotConverged) as got:
        engine.pumma(X, y, epochs=2, p=3)
    assert str(got.value) == str(want.value)
