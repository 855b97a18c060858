"""Real data (the shipped Wdbc and digits files): every algorithm's reference and fast forms
end with a trace or one clear line, never a traceback or a leaked warning, also on raw Wdbc
whose features (up to ~4,250) drive the Higher-Order Perceptron's matrix beyond float64's
range; and where both run, the fast forms agree with the reference (SPEC.md sections 3-4)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from perceptron_oracle import datasets
from perceptron_oracle.compare import compare
from perceptron_oracle.errors import OracleInputError
from perceptron_oracle.registry import ALGORITHMS, run

#: (algorithm, params): every family, with a p > 2 member where the family has one.
RUNS = [("perceptron", {}), ("higher_order", {}), ("higher_order", {"p": 3}),
        ("pnorm_perceptron", {}), ("pnorm_perceptron", {"p": 3}), ("second_order", {}),
        ("second_order", {"pseudoinverse": True}), ("romma", {}),
        ("pumma", {"delta": "1/10"}), ("pumma", {"p": 3}), ("alma", {}), ("alma", {"p": 3})]
ROWS = 150


@pytest.fixture(scope="module")
def raw():
    return datasets.wdbc(rows=ROWS)


def test_shipped_files_read_back():
    full = datasets.wdbc()
    assert full.X.shape == (569, 30) and sorted(set(full.y.tolist())) == [-1, 1]
    assert full.X.max() > 4000 and int((full.y == 1).sum()) == 357   # benign
    hand = datasets.digits(rows=None, normalized=False)
    assert hand.X.shape == (1797, 64) and hand.X.max() == 16
    assert int((hand.y == 1).sum()) == 183                            # threes
    unit = datasets.builtin("wdbc-unit")
    assert np.allclose(np.linalg.norm(unit.X, axis=1), 1)


@pytest.mark.parametrize("algorithm,params", RUNS,
                         ids=[f"{a}-{i}" for i, (a, _) in enumerate(RUNS)])
def test_raw_wdbc_ends_cleanly(raw, algorithm, params):
    if params.get("pseudoinverse"):  # the exact pseudoinverse state is slow: fewer rows
        raw = datasets.wdbc(rows=50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = run(algorithm, raw.X, raw.y, **params)
        assert len(expected.mistakes) > 0
        for form in ALGORITHMS[algorithm].forms_for("linear", params):
            try:
                actual = run(algorithm, raw.X, raw.y, impl="fast", form=form, **params)
            except OracleInputError as exc:
                message = str(exc)
                assert "\n" not in message and "trial" in message and "normalise" in message
                trial = int(message.split()[1])
                # the float64 state overflowed: the reference cannot ask a decision there
                assert trial in expected.fragile, (form, message)
                continue
            result = compare(expected, actual, raw.X)
            assert result.ok, (form, result.describe())


def test_higher_order_overflow_is_named(raw):
    """HO_2(2/5) on raw Wdbc: |B| leaves float64's range; the fast forms stop with one line,
    the reference ends (exactly) and flags every trial from there on."""
    with pytest.raises(OracleInputError, match=r"^trial \d+ \(example \d+\): the float64 "):
        run("higher_order", raw.X, raw.y, impl="fast", form="primal")
    trace = run("higher_order", raw.X, raw.y)
    assert trace.fragile and trace.fragile[-1] == ROWS - 1
