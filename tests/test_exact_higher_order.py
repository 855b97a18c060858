"""The fast exact engine of HO_p(c) (``exact/higher_order.py``) where the generic suite
(tests/test_exact_engines.py) does not reach: raw Wdbc, whose exact state grows by ~250
bits a mistake and whose float magnitudes overflow (the engine's ``saturated`` shortcut),
data that overflow or underflow float64 at once, non-dyadic rationals (an odd keep factor),
exact ties, the integer form of the fragile test, and the Fractions the engine builds.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq, fmpz

from perceptron_oracle import datasets
from perceptron_oracle.exact import higher_order as engine
from perceptron_oracle.registry import get
from perceptron_oracle.rounding import within

ALGO = get("higher_order")
# both exact runs as the registry gives them: with their shadow runs (SPEC.md section 3)
reference = ALGO.implementation("reference")
exact = ALGO.implementation("exact")


def assert_same_run(X, y, **run) -> None:
    want = reference(X, y, record_scores=True, **run)
    got = exact(X, y, record_scores=True, **run)
    assert got.to_dict() == want.to_dict()
    assert got == want
    assert ALGO.final_error_bounds(got, X) == ALGO.final_error_bounds(want, X)


def test_raw_wdbc_one_epoch_equals_the_reference() -> None:
    """Raw Wdbc, the first 200 rows: 86 mistakes, the float magnitudes overflow (every
    later trial fragile), scores of ~20,000 bits."""
    data = datasets.wdbc(rows=200)
    want = reference(data.X, data.y, record_scores=True)
    got = exact(data.X, data.y, record_scores=True)
    assert got == want and got.to_dict() == want.to_dict()
    assert len(got.mistakes) > 50 and got.fragile[-1] == 199  # the saturated path ran


@pytest.mark.parametrize("params", [{"rho": "theorem1", "c": Fraction(1, 2)},
                                    {"rho": "constant", "c": Fraction(1, 10),
                                     "sparse": True}])
def test_raw_wdbc_other_rho_rules_equal_the_reference(params) -> None:
    data = datasets.wdbc(rows=80)
    assert_same_run(data.X, data.y, epochs=2, **params)


def test_unit_norm_wdbc_equals_the_reference() -> None:
    """Finite magnitudes all along: every fragile decision is the integer comparison."""
    data = datasets.wdbc(rows=60, normalized=True)
    assert_same_run(data.X, data.y, epochs=3)


@pytest.mark.parametrize("scale", [1e150, 1e-160, 5e-324])
def test_data_beyond_float64_range_equal_the_reference(scale) -> None:
    """|A| overflows at the first factor (1e150), or the rows hold numbers near or at the
    smallest subnormal: dx = 2^1074, a keep factor of 2^4296 applied as a shift."""
    rng = np.random.default_rng(3)
    X = rng.integers(-4, 5, size=(12, 3)).astype(float)
    X[:, 0] *= scale
    y = np.where(rng.random(12) < 0.5, 1, -1)
    assert_same_run(X, y, epochs=2)


def test_non_dyadic_rationals_equal_the_reference() -> None:
    """Rows of Fractions with denominators 3, 7, 9: keep = rd^2 dx^4 has an odd part."""
    X = [[Fraction(1, 3), Fraction(-2, 7)], [Fraction(5, 9), Fraction(1, 3)],
         [Fraction(-1, 7), Fraction(4, 3)], [Fraction(2, 3), Fraction(2, 3)]]
    assert_same_run(X, [1, -1, 1, -1], epochs=3)
    assert_same_run(X, [1, -1, 1, -1], epochs=3, rho="theorem1", c=Fraction(1, 3))


def test_exact_ties_on_integer_data_equal_the_reference() -> None:
    """Integer rows whose exact scores hit 0 after updates (a mistake at a tie)."""
    X = [[1, 0], [0, 1], [1, 1], [-1, -1], [1, -1], [2, 0]]
    y = [1, 1, -1, 1, -1, 1]
    want = reference(X, y, epochs=3, record_scores=True)
    assert any(s == 0 for s in want.scores[len(X):])
    assert_same_run(X, y, epochs=3)
    assert_same_run(X, y, epochs=3, c=Fraction(0))


@pytest.mark.parametrize("num,den,bound", [
    (3, 4, 0.75), (-3, 4, 0.75), (3, 4, 0.7499999999999999), (0, 1, 0.0),
    (10**400 + 1, 10**400, 1.0), (10**400, 10**400 + 1, 1.0), (5, 1, math.inf),
    (5, 1, math.nan), (1, 3, 1 / 3)])
def test_within_ratio_is_rounding_within(num, den, bound) -> None:
    """The engine's fragile comparison on (numerator, denominator) is ``rounding.within``
    of the Fraction, at the edge (|score| = bound) too."""
    assert engine.within_ratio(fmpz(num), fmpz(den), bound) == within(Fraction(num, den),
                                                                     bound)


@pytest.mark.parametrize("num,den", [(6, 4), (-6, 4), (0, 7), (14, 7), (-2**300 * 3, 2**301)])
def test_score_fraction_is_the_reduced_fraction(num, den) -> None:
    got = engine.score_fraction(fmpz(num), fmpz(den))
    want = Fraction(num, den)
    assert got == want
    assert (got.numerator, got.denominator) == (want.numerator, want.denominator)
    assert hash(got) == hash(want) and str(got) == str(want)
    assert engine.coprime_fraction(fmpq(num, den)) + 1 == want + 1


@pytest.mark.parametrize("bits", [0, 10**9])
def test_python_and_flint_integers_give_the_same_trace(monkeypatch, bits) -> None:
    """The state moves from Python integers to ``fmpz`` past BIG_STATE_BITS: at once (0) or
    never, the trace is the reference's."""
    monkeypatch.setattr(engine, "BIG_STATE_BITS", bits)
    data = datasets.wdbc(rows=40)
    assert_same_run(data.X, data.y, epochs=2)
    assert_same_run(data.X, data.y, epochs=2, rho="theorem1", c=Fraction(3, 4), sparse=True)


@pytest.mark.parametrize("normalized,rows", [(True, 60), (False, 120)])
def test_without_recorded_scores_equals_the_reference(normalized, rows) -> None:
    """record_scores=False: the engine reduces its scores only where the shadow runs read
    them (a fragile trial, not sparse); the trace is the reference's either way."""
    data = datasets.wdbc(rows=rows, normalized=normalized)
    for params in ({}, {"sparse": True}):
        want = reference(data.X, data.y, epochs=2, **params)
        got = exact(data.X, data.y, epochs=2, **params)
        assert got.scores is None and got == want and got.to_dict() == want.to_dict()
