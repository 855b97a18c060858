"""The p-norm Perceptron's compiled loop (``fast._numba_pnorm.pnorm_primal``) beyond the
reference comparisons of tests/test_engines.py: the gradient's vectorised passes against the
numpy gradient on every path they take (and the scalar passes they hand v = 0, subnormal,
huge or non-finite v to), NaN in X named before an overflow (dense X is not summed up
front: the loop's scores are the check; NaN and infinity alone: tests/test_engines.py).
Both engines on a longer run: tests/test_long_engine_runs.py.  Without numba every item is
skipped (reason stated).
"""

from __future__ import annotations

import numpy as np
import pytest

from fast_protocol import ENGINES, needs_numba
from perceptron_oracle.errors import DataError
from perceptron_oracle.fast import _compiled
from perceptron_oracle.fast import pnorm_perceptron as pn
from perceptron_oracle.pnorm_float import link_inverse as numpy_gradient

pytestmark = needs_numba

# p: integer p - 1 up to 8 (repeated products), p = 4 (square root), larger integers and a
# non-integer p (pow)
POWERS = [3.0, 4.0, 5.0, 9.0, 10.0, 2.5, 7.25]


def _vectors() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(5)
    base = rng.standard_normal(37)
    base[[3, 11]] = 0.0
    return [("unit", base), ("tiny", base * 1e-300), ("huge", base * 1e300),
            ("subnormal", base * 1e-310), ("at 2^1023", base / np.abs(base).max() * 2.0**1023),
            ("just below 2^1023", base / np.abs(base).max() * 2.0**1022),
            ("zero", np.zeros(9)), ("one entry", np.array([0.0, -3.5, 0.0]))]


@pytest.mark.parametrize("p", POWERS)
def test_gradient_passes_match_the_numpy_gradient(p):
    """Within a few units of rounding of ``pnorm_float.link_inverse`` (the same
    scale, powers and normaliser; another summation order) on every path."""
    g = _compiled.kernels().link_inverse
    for name, v in _vectors():
        w = np.full_like(v, np.nan)
        g(v, p, w)
        with np.errstate(all="ignore"):
            expected = numpy_gradient(v, p)
        assert np.array_equal(np.isnan(w), np.isnan(expected)), name
        assert np.allclose(w, expected, rtol=1e-13, atol=0.0, equal_nan=True), (name, p)
        assert np.array_equal(np.signbit(w[v != 0]), np.signbit(expected[v != 0])), name


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_v_keeps_the_scalar_passes_report(bad):
    """A NaN or infinity in v reaches w as the numpy gradient lets it (a NaN at least where
    v is not finite), so the next score is not finite."""
    v = np.array([0.5, bad, -2.0, 0.0])
    w = np.zeros(4)
    _compiled.kernels().link_inverse(v, 4.0, w)
    with np.errstate(all="ignore"):
        expected = numpy_gradient(v, 4.0)
    assert np.array_equal(np.isnan(w), np.isnan(expected)) and np.isnan(w[1])
    assert np.array_equal(w, expected, equal_nan=True)


def test_non_finite_x_after_an_overflow_is_still_named_first():
    """An overflow stops the loop before the row with the NaN is scored: X is checked
    before the overflow is reported, as validation did before the run."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((40, 3)) * 1e300
    X[35, 1] = np.nan
    y = np.where(rng.random(40) < 0.5, 1, -1)
    for engine in ENGINES:
        with pytest.raises(DataError, match="X contains NaN"):
            pn.primal(X, y, p=3, epochs=2, engine=engine)
