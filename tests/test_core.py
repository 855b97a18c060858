"""The core package: traces, numbers, parameters, kernels, data loading, preprocessing."""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from perceptron_oracle import data, numbers, preprocessing, rounding
from perceptron_oracle.errors import DataError, KernelSpecError, ParamError, TraceFormatError
from perceptron_oracle.fast import perceptron as fp
from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.params import Param, ParamSchema
from perceptron_oracle.trace import Trace, plain_value

# -- traces ---------------------------------------------------------------------------------

_values = st.recursive(
    st.one_of(st.integers(-10**30, 10**30), st.fractions(), st.booleans(), st.none(),
              st.floats(allow_nan=False, allow_infinity=False),
              st.text(alphabet="abcxyz_", max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(alphabet="abc", max_size=3), inner,
                                            max_size=4)),
    max_leaves=12)


def _normalise(value):
    """What decoding yields: a Fraction for every exact number, else the value itself."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


@given(final=st.dictionaries(st.text(alphabet="wbk", min_size=1, max_size=2), _values,
                             max_size=4),
       mistakes=st.sets(st.integers(0, 19)), epochs=st.integers(1, 4))
def test_trace_json_round_trip_is_lossless(final, mistakes, epochs):
    trace = Trace("perceptron", "primal", {"eta": Fraction(1, 10), "alpha_bound": None},
                  5, epochs, sorted(m for m in mistakes if m < 5 * epochs),
                  sorted(m for m in mistakes if m < 5 * epochs), final, fragile=[0])
    again = Trace.from_json(trace.to_json())
    assert again == trace
    for key, value in final.items():  # and the types survive: floats stay floats
        assert type(again.final[key]) is type(_normalise(value))


def test_trace_writes_exact_numbers_as_strings():
    trace = Trace("perceptron", "reference", {"eta": Fraction(1, 3)}, 1, 1, [0], [0],
                  {"w": [Fraction(-7, 2), Fraction(4)], "b": 0.5, "k": 3})
    doc = json.loads(trace.to_json())
    assert doc["format"] == "perceptron-oracle/trace@1"
    assert doc["params"]["eta"] == "1/3"
    assert doc["final"] == {"w": ["-7/2", "4"], "b": 0.5, "k": 3}


def test_a_fast_forms_arrays_compare_and_write_as_the_lists_they_hold():
    """A fast form's final holds numpy arrays (float64, int64 counts): a trace equals the
    same trace with lists, is unequal when one number differs, and writes the same JSON."""
    arrays = Trace("perceptron", "primal", {}, 3, 1, [0], [0],
                   {"w": np.array([0.5, -2.0]), "alpha": np.array([1, 0, 0]), "b": 1.0,
                    "averaged": {"w": np.array([1.5, 0.0]), "total_votes": 3}})
    lists = Trace("perceptron", "primal", {}, 3, 1, [0], [0],
                  {"w": [0.5, -2.0], "alpha": [1, 0, 0], "b": 1.0,
                   "averaged": {"w": [1.5, 0.0], "total_votes": 3}})
    assert arrays == lists and lists == arrays
    assert plain_value(arrays.final) == lists.final
    assert type(plain_value(arrays.final)["alpha"][0]) is int
    assert arrays.to_json() == lists.to_json()
    assert Trace.from_json(arrays.to_json()) == arrays
    arrays.final["averaged"]["w"][1] = 2.0**-60
    assert arrays != lists
    assert fp.primal(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, -1])).final["w"].dtype \
        == np.float64


def test_trace_writes_mpf_exactly():
    ctx = numbers.number_context(80)
    value = ctx.exp(ctx.mpf(-1))
    trace = Trace("perceptron", "reference", {}, 1, 1, [], [], {"s": value, "t": -value})
    back = Trace.from_json(trace.to_json()).final
    assert back["s"] == numbers.to_fraction(value) == -back["t"]  # the sign of an mpf too
    assert numbers.to_fraction(ctx.mpf(-3) / 4) == Fraction(-3, 4)


@pytest.mark.parametrize("value", [Fraction(3**20000, 2**9000 + 1), Fraction(-(10**8000)),
                                   Fraction(-(10**4000) + 1, 7), Fraction(10**4000, 3)],
                         ids=["huge/huge", "-10^8000", "-(10^4000-1)/7", "10^4000/3"])
def test_numbers_beyond_pythons_4300_digit_limit_round_trip(value):
    """Exact states outgrow str(int)'s default limit (HO with a constant rho does)."""
    text = numbers.format_exact(value)
    assert numbers.to_fraction(text) == value
    trace = Trace("perceptron", "reference", {}, 1, 1, [], [], {"w": [value]})
    assert Trace.from_json(trace.to_json()).final["w"] == [value]


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("updates"), "lacks updates"),
    (lambda d: d.update(format="trace@0"), "format"),
    (lambda d: d.update(form="side ways"), "form must be an identifier"),
    (lambda d: d.update(mistakes=[2, 1]), "ascending"),
    (lambda d: d.update(mistakes=[99]), "outside"),
    (lambda d: d.update(epochs=0), "epochs"),
    (lambda d: d.update(extra=1), "unknown trace field"),
])
def test_malformed_traces_are_named(mutate, message):
    doc = Trace("perceptron", "primal", {}, 3, 1, [0], [0], {}).to_dict()
    mutate(doc)
    with pytest.raises(TraceFormatError, match=message):
        Trace.from_dict(doc)
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        Trace.from_json("{")


# -- numbers and parameters -----------------------------------------------------------------

def test_decimal_strings_are_read_exactly():
    assert numbers.to_fraction("0.1") == Fraction(1, 10)
    assert numbers.to_fraction("-3/4") == Fraction(-3, 4)
    assert numbers.to_fraction("1e-3") == Fraction(1, 1000)
    assert numbers.to_fraction(0.1) == Fraction(3602879701896397, 36028797018963968)
    for bad in ("nan", "1/0x", float("inf"), True, "abc"):
        with pytest.raises((ValueError, TypeError)):
            numbers.to_fraction(bad)


def test_precision_is_scoped_not_global():
    before = mpmath.mp.prec
    with numbers.precision(100):
        assert numbers.number_context().prec == 100
        with numbers.precision(300):
            assert numbers.number_context().prec == 300
        assert numbers.number_context().prec == 100
    assert numbers.number_context().prec == numbers.DEFAULT_PRECISION
    assert mpmath.mp.prec == before
    with pytest.raises(ValueError):
        with numbers.precision(10):
            pass


def test_param_schema_reads_checks_and_names_problems():
    schema = ParamSchema(Param("eta", "rational", Fraction(1), "", check=lambda v: v > 0,
                               requirement="> 0"),
                         Param("bound", "count", None, ""), Param("flag", "bool", False, ""),
                         Param("rho", "name", "c/k", "", choices=("c/k", "theorem1")))
    assert schema.resolve({"eta": "0.1", "bound": "3", "flag": "true", "rho": "theorem1"}) == {
        "eta": Fraction(1, 10), "bound": 3, "flag": True, "rho": "theorem1"}
    assert schema.resolve({}) == {"eta": 1, "bound": None, "flag": False, "rho": "c/k"}
    for given_, message in [({"zeta": 1}, "unknown parameter"), ({"eta": "-1"}, "> 0"),
                            ({"bound": "1.5"}, "positive integer"), ({"flag": "yes"}, "true"),
                            ({"rho": "x"}, "one of"), ({"eta": "nan"}, "eta")]:
        with pytest.raises(ParamError, match=message):
            schema.resolve(given_)


# -- kernels --------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["linear", "poly:degree=3,coef0=1/2,gamma=2",
                                  "rbf:gamma=0.5"])
def test_kernel_exact_and_float_agree(spec):
    kernel = parse_kernel(spec)
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    fast = kernel.matrix(A, B)
    ctx = numbers.number_context(200)
    for i in range(4):
        for j in range(5):
            exact = kernel.exact([Fraction(v) for v in A[i]], [Fraction(v) for v in B[j]], ctx)
            assert abs(float(exact) - fast[i, j]) <= 1e-12 * max(1.0, abs(float(exact)))
    assert np.allclose(kernel.diagonal(A), np.diag(kernel.matrix(A, A)))
    assert np.allclose(kernel.matrix(sp.csr_matrix(A), sp.csr_matrix(B)), fast)
    assert parse_kernel(kernel.spec) == kernel


def test_kernel_spec_parsing():
    assert parse_kernel("rbf:gamma=0.5").gamma == Fraction(1, 2)
    assert parse_kernel("poly:degree=2").spec == "poly:degree=2,coef0=1,gamma=1"
    for bad, message in [("sigmoid", "unknown kernel"), ("poly:degree=1.5", "degree"),
                         ("rbf:gamma=-1", "gamma"), ("rbf:sigma=1", "no parameter"),
                         ("poly:degree", "NAME=VALUE")]:
        with pytest.raises(KernelSpecError, match=message):
            parse_kernel(bad)


# -- rounding -------------------------------------------------------------------------------

def test_dyadic_grid():
    assert rounding.dyadic_exponent(Fraction(3, 8)) == 3
    assert rounding.dyadic_exponent(Fraction(1, 10)) is None
    assert rounding.exact_in_float64(0, 2.0 ** 51)
    assert not rounding.exact_in_float64(0, 2.0 ** 53)
    assert not rounding.exact_in_float64(2000, 1.0)  # no overflow, just False
    assert rounding.score_error_bound(10, 0.0) == 0  # no nonzero term: exact
    assert rounding.score_error_bound(10, 1e-320) >= 20 * 2.0 ** -1074  # the underflow term
    assert rounding.magnitude_float(Fraction(1, 10**400)) == 5e-324
    assert rounding.score_error_bound(10, 1.0) < 1e-14


# -- data loading ---------------------------------------------------------------------------

def test_loaders_read_the_same_data(tmp_path):
    X = np.array([[0.5, 0.0, -1.25], [0.0, 2.0, 0.0]])
    y = np.array([1, -1])
    np.savez(tmp_path / "d.npz", X=X, y=y)
    (tmp_path / "d.csv").write_text("a,b,c,label\n0.5,0,-1.25,1\n0,2,0,-1\n")
    (tmp_path / "d.svm").write_text("+1 1:0.5 3:-1.25 # comment\n-1 2:2\n")
    for name in ("d.npz", "d.csv", "d.svm"):
        dataset = data.load(tmp_path / name)
        dense = dataset.X.toarray() if sp.issparse(dataset.X) else dataset.X
        assert np.array_equal(dense, X) and np.array_equal(dataset.y, y), name
        assert dataset.y.dtype == np.int64
    assert sp.isspmatrix_csr(data.load(tmp_path / "d.svm").X)
    assert data.load(tmp_path / "d.svm", n_features=5).X.shape == (2, 5)


@pytest.mark.parametrize("content, message", [
    ("1 1:0.5\n0 2:1\n", "label 0"),
    ("1 1:0.5\n2 2:1\n", "label 2"),
    ("1 0:0.5\n", "1-based"),
    ("1 2:1 1:1\n", "ascend"),
    ("1 1:x\n", "malformed feature"),
    ("1 qid:3 1:1\n", "qid"),
    ("", "empty"),
    ("1 1:nan\n", "NaN"),
    ("1 1:inf\n", "infinity"),
])
def test_bad_svmlight_files_are_named(tmp_path, content, message):
    path = tmp_path / "bad.svm"
    path.write_text(content)
    with pytest.raises(DataError, match=message) as info:
        data.load(path)
    assert "bad.svm" in str(info.value)


@pytest.mark.parametrize("content, message", [
    ("1,2,1\n1,2\n", "2 fields, expected 3"),
    ("1,2,1\n1,x,1\n", "not a number"),
    ("1,2,0.5\n", "label 0.5"),
    ("1\n", "features and a label"),
])
def test_bad_csv_files_are_named(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        data.load(path)


def test_bad_npz_and_unknown_files(tmp_path):
    np.savez(tmp_path / "a.npz", X=np.ones((2, 2)))
    with pytest.raises(DataError, match="lacks array"):
        data.load(tmp_path / "a.npz")
    (tmp_path / "b.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="not a readable"):
        data.load(tmp_path / "b.npz")
    with pytest.raises(DataError, match="no such file"):
        data.load(tmp_path / "missing.csv")
    (tmp_path / "c.parquet").write_text("")
    with pytest.raises(DataError, match="unknown data format"):
        data.load(tmp_path / "c.parquet")
    (tmp_path / "d.csv").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DataError, match="not a text file"):
        data.load(tmp_path / "d.csv")


@pytest.mark.parametrize("X, y, message", [
    (np.ones((2, 2)), [1, 0], "label 0"),
    (np.ones((2, 2)), [True, False], "labels must be"),
    (np.ones((2, 2)), [1, -1, 1], "2 rows but y has 3"),
    (np.array([[1.0, np.nan], [0, 0]]), [1, -1], "NaN"),
    (np.array([[1.0, np.inf], [0, 0]]), [1, -1], "infinity"),
    (np.ones((0, 2)), [], "empty"),
    (np.ones(3), [1, 1, 1], "2-dimensional"),
    (np.ones((2, 0)), [1, 1], "no features"),
    ([["a", "b"]], [1], "not numeric"),
])
def test_validate_names_the_problem(X, y, message):
    with pytest.raises(DataError, match=message):
        data.validate(X, y)


def test_validate_converts_without_changing_its_input():
    X = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([1.0, -1.0])
    X2, y2 = data.validate(X, y)
    assert X2.dtype == np.float64 and y2.dtype == np.int64 and X2.flags.c_contiguous
    X2[0, 0] = 99
    assert X[0, 0] == 0
    huge = np.full((2, 2), 1e308)  # finite values whose sum overflows are still accepted
    assert data.validate(huge, [1, -1])[0] is huge


# -- preprocessing --------------------------------------------------------------------------

def test_normalize_and_add_bias_dense_and_sparse():
    X = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, -1.0]])
    unit = preprocessing.normalize(X)
    assert np.allclose(np.linalg.norm(unit, axis=1), [1, 0, 1])
    assert np.allclose(np.abs(preprocessing.normalize(X, p=4)).max(axis=1) > 0, [1, 0, 1])
    assert np.allclose(np.linalg.norm(preprocessing.normalize(X, 4), 4, axis=1), [1, 0, 1])
    assert np.allclose(preprocessing.normalize(sp.csr_matrix(X)).toarray(), unit)
    biased = preprocessing.add_bias(X)
    assert biased.shape == (3, 3) and np.all(biased[:, -1] == 1)
    assert np.array_equal(preprocessing.add_bias(sp.csr_matrix(X)).toarray(), biased)
    assert X[0, 0] == 3.0  # the input is untouched
    with pytest.raises(DataError, match="p must be"):
        preprocessing.normalize(X, 0.5)
