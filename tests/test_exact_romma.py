"""ROMMA's fast exact engine (``exact.romma``) beyond the generic suite
(tests/test_exact_engines.py): raw Wdbc, the mpmath arithmetic it replaces (products,
quotients, the closed forms (15)/(19)) and the filter's fallback to ``fdot``."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from mpmath.libmp import from_man_exp, mpf_div, mpf_mul, round_nearest

from perceptron_oracle import datasets
from perceptron_oracle.exact import maximum_margin as fast_mm
from perceptron_oracle.exact import romma as engine
from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.numbers import number_context
from perceptron_oracle.reference import romma as reference
from perceptron_oracle.reference.common import Gram, exact_data
from perceptron_oracle.reference.maximum_margin import Numbers, solve_2norm


def assert_same(X, y, **run) -> None:
    want = reference.romma(X, y, record_scores=True, **run)
    got = engine.romma(X, y, record_scores=True, **run)
    assert got.to_dict() == want.to_dict()
    assert got == want
    assert reference.final_error_bounds(got, X) == reference.final_error_bounds(want, X)


def test_raw_wdbc_first_200_rows_one_epoch() -> None:
    data = datasets.wdbc(rows=200)
    assert_same(data.X, data.y, epochs=1)


@pytest.mark.parametrize("numbers,rows", [("fraction", 15), ("mpmath:53", 40),
                                          ("mpmath:200", 40)])
def test_every_numbers_mode_on_raw_wdbc_rows(numbers: str, rows: int) -> None:
    """Exact fractions grow without bound (no ``auto`` cap): a few rows only."""
    data = datasets.wdbc(rows=rows)
    assert_same(data.X, data.y, epochs=2, numbers=numbers, delta=Fraction(1, 10))


def test_polynomial_kernel_with_non_dyadic_parameters_in_mpmath() -> None:
    """gamma = coef0 = 1/3: the kernel values' denominators are not powers of two, so each
    is converted as ``Numbers`` converts a Fraction (two roundings), not by from_man_exp."""
    data = datasets.wdbc(rows=50)
    assert_same(data.X, data.y, epochs=2, kernel="poly:degree=2,coef0=1/3,gamma=1/3")


def _random_odd(bits: int, rng: random.Random) -> int:
    return rng.getrandbits(bits - 1) | (1 << (bits - 1)) | 1


def test_long_products_and_quotients_round_as_mpmath() -> None:
    """``mul`` and ``div`` against mpf_mul and mpf_div, long mantissas (FLINT's branch),
    including the exact ties: a product of two odd mantissas of prec + 1 bits."""
    rng = random.Random(5)
    prec = 3000
    for k in range(300):
        a = (k % 2, _random_odd(1501 + k % 3, rng), rng.randint(-99, 99), 0)
        b = ((k // 2) % 2, _random_odd(1501, rng), rng.randint(-99, 99), 0)
        a = (a[0], a[1], a[2], a[1].bit_length())
        b = (b[0], b[1], b[2], b[1].bit_length())
        assert fast_mm.mul(a, b, prec) == mpf_mul(a, b, prec, round_nearest)
        assert fast_mm.div(a, b, prec) == mpf_div(a, b, prec, round_nearest)
        assert fast_mm.div(b, a, 64) == mpf_div(b, a, 64, round_nearest)


def test_closed_forms_equal_the_reference_solver() -> None:
    """``solve_2norm_mpf`` against ``solve_2norm`` on long mpf inputs, both cases, the
    boundary and the singular system."""
    rng = random.Random(7)
    ctx = number_context(4000)
    for k in range(60):
        vv = ctx.make_mpf(from_man_exp(_random_odd(3990, rng), -3990 + k % 5))
        zz = ctx.mpf(rng.randint(1, 10**6)) / 7
        vz = ctx.make_mpf(from_man_exp(_random_odd(3990, rng), -3995 + k % 9))
        if k % 3 == 0:
            vz = -vz
        for args in [(vv, zz, vz), (vv, zz, ctx.sqrt(vv * zz)), (ctx.zero, zz, vz),
                     (vv, zz, vv * zz)]:
            for r in (1, 2):
                assert fast_mm.solve_2norm_mpf(*args, r) == solve_2norm(*args, r, False)


def test_fdot_fallback_where_the_kernel_row_spans_beyond_twice_the_precision() -> None:
    """Rows 2^-200 apart at 64 bits: the kernel column spans more than 128 bits, so the
    filter cannot vouch for ``fdot``'s sum and the engine calls ``fdot`` (which drops the
    far term); the trace is still the reference's."""
    X = [[1.0, 0.0], [2.0 ** -200, 1.0], [-1.0, 2.0 ** -150], [0.5, -3.0]]
    y = [1, -1, -1, 1]
    rows, _ = exact_data(X, y)
    fast_rows = fast_mm.FastRows(Gram(parse_kernel("linear"), rows),
                                 Numbers("mpmath", 64), len(rows))
    assert fast_rows.column(1) is None
    assert_same(X, y, epochs=3, numbers="mpmath:64")
    assert_same(X, y, epochs=3)


def test_gaussian_kernel_bounds() -> None:
    """The Gaussian kernel's magnitudes come from the reference's Gram and must reach the
    magnitude matrix ``norm_error`` reads (found: its rows were left at 0)."""
    assert_same([[0.5], [1.0]], [1, 1], kernel="rbf:gamma=1/2")
    assert_same([[0.5, 1.0], [1.0, -2.0], [0.25, 0.0]], [1, -1, 1], epochs=3,
                kernel="rbf:gamma=1/3")


def test_huge_and_subnormal_entries() -> None:
    X = [[1e300, 5e-324], [-1e-300, 1e300], [3.0, -2.0 ** -1074], [1e-10, 1e10]]
    y = [1, -1, 1, -1]
    assert_same(X, y, epochs=3)
    assert_same(X, y, epochs=2, numbers="mpmath:64")


def test_exact_ties_on_integer_data() -> None:
    """Small integers: margins exactly 0 and exactly 1 - delta (fragile ties), repeated
    points, a zero instance."""
    X = [[1, 0], [0, 1], [1, 1], [0, 0], [2, 2], [1, 0], [-1, -1]]
    y = [1, -1, 1, 1, -1, 1, -1]
    for delta in (0, Fraction(1, 2)):
        assert_same(X, y, epochs=3, delta=delta)
        assert_same(X, y, epochs=3, delta=delta, numbers="mpmath:64")
