"""ALMA's fast exact engine (``exact/alma.py``) where the generic engine suite
(tests/test_exact_engines.py) cannot reach: raw Wdbc, the scoped precision, data whose
trials the float64 filter cannot settle (the reference's trial is then taken), inputs that
are not float64 arrays, and the integer arithmetic that rounds as mpmath rounds."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from mpmath.libmp import mpf_add, mpf_div, mpf_mul, mpf_sqrt, round_nearest

from perceptron_oracle import datasets
from perceptron_oracle.errors import DataError
from perceptron_oracle.exact import alma as engine
from perceptron_oracle.numbers import precision
from perceptron_oracle.reference.alma import alma as reference
from perceptron_oracle.reference.alma import linear_score

F = Fraction


def assert_same_run(X, y, **run) -> None:
    want = reference(X, y, record_scores=True, **run)
    got = engine.alma(X, y, record_scores=True, **run)
    assert got.to_dict() == want.to_dict()
    assert got == want
    assert got.final_bounds == want.final_bounds


@pytest.fixture
def reference_trials(monkeypatch) -> list[int]:
    """The trials the engine hands to the reference's trial (its filter did not settle)."""
    taken: list[int] = []
    take = engine._reference_trial

    def counted(run, record, t, j, label):
        taken.append(t)
        take(run, record, t, j, label)

    monkeypatch.setattr(engine, "_reference_trial", counted)
    return taken


def test_raw_wdbc_one_epoch_is_the_reference_run(reference_trials) -> None:
    """Raw Wdbc (features up to ~4,250), one pass: the same trace, scores and bounds; the
    filter settles every trial but the first (w = 0)."""
    data = datasets.wdbc()
    assert_same_run(data.X, data.y)
    assert reference_trials == [0]


@pytest.mark.parametrize("bits", [53, 64, 300])
def test_scoped_precision(bits: int) -> None:
    """The reference's rounding and its own allowance follow the scoped precision; the
    engine's bounds on them too (at 53 bits the allowance is wide)."""
    data = datasets.wdbc(rows=120)
    with precision(bits):
        assert_same_run(data.X, data.y, epochs=2)


@pytest.mark.parametrize("params", [{}, {"alpha": F(1)}, {"alpha": F(1, 2), "B": F(1),
                                                         "C": F(1, 2)}])
def test_exact_ties_on_integer_data_take_the_reference_trial(params, reference_trials) -> None:
    """Orthogonal integer instances give scores that are exactly 0 (and, alpha = 1,
    exactly the threshold 0), a zero instance a zero x^: the filter cannot settle those
    trials and the reference's trial decides them (its ties, its fragile flags)."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0], [0.0, 0.0]])
    y = np.array([1, -1, 1, -1, 1])
    assert_same_run(X, y, epochs=3, **params)
    assert len(reference_trials) > 1


def test_subnormal_and_huge_features(reference_trials) -> None:
    """Features from 5e-324 to 2e300 in one run: x^ has coordinates below float64's
    normal range (their doubles go through mpmath's conversion) and the state is lost."""
    X = np.array([[1e-310, 3e-320, 1.0], [1e300, -2e300, 1e-300], [5e-324, 0.0, 0.0],
                  [1.0, 2.0, 3.0]])
    y = np.array([1, -1, 1, -1])
    assert_same_run(X, y, epochs=3)


def test_rows_that_are_not_float64() -> None:
    """Fractions that are not dyadic (x^ by the reference's ``normalized``), integer lists."""
    assert_same_run([[F(1, 3), F(2, 7)], [F(-1, 10), F(5)], [F(1), F(1)]], [1, -1, 1],
                    epochs=3)
    assert_same_run([[3, 4], [1, 0], [-2, 5]], [-1, 1, 1], epochs=2)


def test_p_above_2_and_kernels_are_the_reference_run() -> None:
    X, y = np.array([[1.0, 2.0], [2.0, -1.0], [-1.0, 0.5]]), np.array([1, -1, 1])
    assert_same_run(X, y, epochs=2, p=F(3))
    assert_same_run(X, y, epochs=2, kernel="poly:degree=2,coef0=1,gamma=1")


@pytest.mark.parametrize("X,y", [
    (np.array([[1.0, np.nan]]), np.array([1])),
    (np.array([[1.0, 2.0]]), np.array([True])),
    (np.array([[1.0, 2.0]]), np.array([2])),
    (np.array([[1.0, 2.0]]), np.array([1, -1])),
    (np.zeros((0, 2)), np.array([], dtype=int)),
    (np.array([1.0, 2.0]), np.array([1, -1])),
])
def test_bad_data_is_the_reference_error(X, y) -> None:
    with pytest.raises(DataError) as want:
        reference(X, y)
    with pytest.raises(DataError) as got:
        engine.alma(X, y)
    assert str(got.value) == str(want.value)


# -- the integer arithmetic against mpmath's ---------------------------------------------------

def value(a) -> Fraction:
    return Fraction(a[0]) * Fraction(2) ** a[1]


def mpmath_op(op, a, b, prec):
    return engine.from_raw(op(engine.to_raw(a), engine.to_raw(b), prec, round_nearest))


@pytest.mark.parametrize("prec", [53, 256])
def test_operations_round_as_mpmath(prec: int) -> None:
    """Sums, products, quotients and square roots, random and at exact ties (quotients and
    square roots of (prec + 1)-bit odd results, exact quotients), as mpmath rounds them."""
    rng = random.Random(prec)
    for _ in range(3000):
        a = (rng.getrandbits(rng.randint(1, prec)) * rng.choice([1, -1]), rng.randint(-400, 99))
        b = (rng.getrandbits(rng.randint(1, prec)) | 1, rng.randint(-400, 99))
        tie = rng.getrandbits(prec + 1) | 1 | (1 << prec)
        exact = (b[0] * rng.choice([tie, rng.getrandbits(20)]), a[1])
        assert value(engine.added(a, b, prec)) == value(mpmath_op(mpf_add, a, b, prec))
        assert value(engine.rounded(a[0] * b[0], a[1] + b[1], prec)) == \
            value(mpmath_op(mpf_mul, a, b, prec))
        for top in (a, exact):
            want = value(mpmath_op(mpf_div, top, b, prec))
            assert value(engine.divided(top, b, prec)) == want
            assert value(engine.quotients([top], b, prec)[0]) == want
        for radicand in ((abs(a[0]), a[1]), (tie * tie, b[1])):
            want = value(engine.from_raw(mpf_sqrt(engine.to_raw(radicand), prec, round_nearest)))
            assert value(engine.square_root(radicand, prec)) == want


def test_quotients_fall_back_at_ties(monkeypatch) -> None:
    """A quotient that is a tie at prec bits is not settled by the reciprocal: ``divided``
    rounds it (this test fails if that fallback rounds differently from mpmath)."""
    prec, N = 64, ((1 << 63) + 12345, -70)
    tie = (1 << 64) | 1                                 # 65 bits, odd: a tie at 64 bits
    fallbacks: list = []
    divided = engine.divided
    monkeypatch.setattr(engine, "divided", lambda *a: fallbacks.append(a) or divided(*a))
    got = engine.quotients([(N[0] * tie, 3), (-N[0] * tie, 3)], N, prec)
    assert len(fallbacks) == 2
    for g, sign in zip(got, (1, -1)):
        want = mpmath_op(mpf_div, (sign * N[0] * tie, 3), N, prec)
        assert value(g) == value(want)


def test_doubles_below_the_normal_range_round_as_mpmath() -> None:
    tiny = [(3, -1076), (-(1 << 60) - 1, -1130), (5, 0)]
    want = [float(engine.to_float(engine.to_raw(v), rnd=round_nearest)) for v in tiny]
    assert engine.doubles(tiny) == want
    assert [engine.to_double(v) for v in tiny] == want


def run_after_corrections(rows: int = 60):
    """The engine's state after the reference's corrections on the first Wdbc rows."""
    data = datasets.wdbc(rows=rows)
    X, y = engine.checked_data(data.X, data.y)
    par = engine.PARAMS.read({"p": 2, "alpha": F(1, 10), "B": None, "C": None})
    run = engine._Euclidean(X, y, par, engine.number_context(), engine.parse_kernel("linear"))
    for j in range(rows):
        run.update(j, run.make_mpf(run.exact_score(j)))
    return run


def test_score_double_is_the_double_of_the_reference_score() -> None:
    run = run_after_corrections()
    run.sync()
    for j in range(len(run.rows)):
        assert run.score_double(j) == float(linear_score(run.w, run.xhat(j)))


def test_a_wide_score_interval_takes_the_exact_score(monkeypatch) -> None:
    """Where the two ends of the settled score's interval leave different D, R, E, the
    bookkeeping takes the double of the reference's score (``score_double``)."""
    run = run_after_corrections()
    j = 7
    exact = run.score_double(j)
    asked: list[int] = []
    score_double = run.score_double
    monkeypatch.setattr(run, "score_double", lambda i: asked.append(i) or score_double(i))
    carried = (run.w_float, 1.25, 1.0, 1e-15, 0.1, 1.0, 1.0, 1e-14)
    before = (run.D, run.R, run.E)
    run._carry_euclidean(*carried, exact)
    want = (run.D, run.R, run.E)
    run.D, run.R, run.E = before
    run.settled = (exact, abs(exact) / 2)
    run._carry_settled(j, carried, None)
    assert (run.D, run.R, run.E) == want
    assert asked == [j]
