"""HO_p(c) and the p-norm Perceptron: the reference's decisions, the invariants of
``properties.higher_order`` (SPEC.md, the higher_order chapter, "Invariants checked") and,
for each invariant, a planted wrong implementation it catches (``tests/wrong_higher_order.py``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

import wrong_higher_order as W
from perceptron_oracle.errors import ParamError
from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.properties import higher_order as P
from perceptron_oracle.properties.strategies import (
    SEQUENCES,
    higher_order_params,
    small_integers,
    sphere,
)
from perceptron_oracle.reference import higher_order as ho
from perceptron_oracle.reference.common import exact_data
from perceptron_oracle.reference.higher_order import final_error_bounds
from perceptron_oracle.reference.perceptron import perceptron
from perceptron_oracle.reference.pnorm_perceptron import pnorm_perceptron
from perceptron_oracle.registry import get
from perceptron_oracle.trace import Trace

# the exact runs as the registry gives them: with their shadow runs (SPEC.md section 3)
higher_order = get("higher_order").implementation("reference")

# searching for a counterexample: no shrinking (a found example is all the test needs)
FIND = settings(max_examples=300, database=None, derandomize=True,
                phases=[Phase.generate], suppress_health_check=list(HealthCheck))


@st.composite
def labelled_sphere(draw):
    """Exactly unit-norm rational points (the sphere strategy) labelled by a drawn unit u,
    exactly: y = +1 iff u.x > 0.  Returns (rows, y, u)."""
    seq = draw(sphere(), label="points")
    n = len(seq.exact[0])
    u = np.array(draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n), label="u"))
    u = np.eye(n)[0] if np.linalg.norm(u) < 1e-3 else u / np.linalg.norm(u)
    uq = [Fraction(v) for v in u]
    y = [1 if sum(a * b for a, b in zip(uq, x)) > 0 else -1 for x in seq.exact]
    return seq.exact, y, u


_unit_params = st.fixed_dictionaries({
    "rho": st.sampled_from(["c/k", "theorem1"]),
    "c": st.sampled_from([Fraction(1, 10), Fraction(2, 5), Fraction(3, 4), Fraction(9, 10)]),
    "sparse": st.booleans(),
})


def _caught(check, mutation, strategy, **fixed):
    """Some draw of ``strategy`` makes ``check`` fail on ``mutation``'s run (hypothesis
    searches; NoSuchExample fails the test)."""
    def violates(case):
        rows, y, u, params = case
        run = W.observe(mutation, rows, y, epochs=3, **{**params, **fixed})
        try:
            check(run, u)
        except P.InvariantViolation:
            return True
        return False
    return find(strategy, violates, settings=FIND)


def _unit_cases(params=_unit_params):
    return st.tuples(labelled_sphere(), params).map(lambda t: (*t[0], t[1]))


# -- the definition's decisions ---------------------------------------------------------
def test_zero_score_is_a_mistake_and_the_first_trial_always_errs():
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, -1])
    trace = higher_order(X, y, record_scores=True)
    assert trace.scores[:2] == [0, 0] and trace.mistakes == [0, 1]  # x_1 . x_0 = 0 too


def test_rho_is_indexed_from_one_and_listed_per_mistake():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    trace = higher_order(X, np.array([1, -1, 1]), c=Fraction(1, 2))
    assert trace.final["rho"][:2] == [Fraction(1, 2), Fraction(1, 4)]
    assert len(trace.final["rho"]) == len(trace.mistakes) == len(trace.updates)


def test_sparse_at_zero_first_order_score_updates_the_matrix():
    # the first mistake has v_0 = 0, so y s = 0 >= 0: rho_1 = c, not 0
    trace = higher_order(np.array([[1.0, 0.0]]), np.array([1]), sparse=True)
    assert trace.final["rho"] == [Fraction(2, 5)]


def test_parameter_ranges():
    X, y = np.array([[1.0, 0.0]]), np.array([1])
    for bad in (dict(p=1), dict(c=1), dict(c=-1), dict(rho="theorem1", c=0),
                dict(rho="constant", c=1), dict(rho="1/k"), dict(sparse="maybe")):
        with pytest.raises(ParamError):
            higher_order(X, y, **bad)
    higher_order(X, y, rho="theorem1", c=1)  # c = 1: rho = 0, the Perceptron
    with pytest.raises(ParamError, match="p = 2"):
        higher_order(X, y, p=3, kernel="rbf:gamma=1")
    with pytest.raises(ParamError, match="linear"):
        pnorm_perceptron(X, y, kernel="poly:degree=2")
    with pytest.raises(ParamError):
        pnorm_perceptron(X, y, p=Fraction(3, 2))


def test_final_layout_and_json_round_trip():
    rng = np.random.default_rng(5)
    X, y = rng.uniform(-1, 1, (12, 3)), np.where(rng.uniform(size=12) < 0.5, 1, -1)
    for kwargs, keys in ((dict(), {"w", "v", "rho"}), (dict(p=3), {"w", "v", "rho"}),
                         (dict(kernel="poly:degree=2,coef0=1,gamma=1"),
                          {"support", "g", "rho"}),
                         (dict(kernel="rbf:gamma=1/2"), {"support", "g", "rho"})):
        trace = higher_order(X, y, epochs=2, **kwargs)
        assert set(trace.final) == keys
        assert Trace.from_json(trace.to_json()).to_json() == trace.to_json()
        if "support" in keys:
            assert trace.final["support"] == [t % 12 for t in trace.mistakes]
        bounds = final_error_bounds(trace, X)
        assert {k.split(".")[1] for k in bounds} == keys - {"support"}  # ints: exact
    assert set(pnorm_perceptron(X, y, p=4).final) == {"w", "v"}


def test_pnorm_integer_p_decides_ties_exactly():
    # v = x_0 = (1, -1) after the first mistake; x_1 = (1, 1): numerator 1^3 - 1^3 = 0
    X, y = np.array([[1.0, -1.0], [1.0, 1.0]]), np.array([1, 1])
    for run in (pnorm_perceptron(X, y, p=4, record_scores=True),
                higher_order(X, y, p=4, c=0, record_scores=True)):
        assert run.scores[1] == 0 and 1 in run.mistakes


def test_exact_ties_with_identity_matrix_are_compared_not_excused():
    rng = np.random.default_rng(1)
    X, y = rng.integers(-2, 3, (20, 3)).astype(float), np.where(rng.uniform(size=20) < .5, 1, -1)
    trace = higher_order(X, y, epochs=3, c=0, record_scores=True)
    assert any(s == 0 for s in trace.scores[1:]) and trace.fragile == []


def test_a_fragile_sparse_decision_flags_every_later_trial():
    # v = x_0 after the first mistake; x_1 . x_0 = 0.1*0.3 - 0.3*0.1 = 0 exactly, but a
    # float64 form rounds each product: the sparse test is within rounding of 0
    X = np.array([[0.1, 0.3], [0.3, -0.1], [0.5, 0.2], [-0.2, 0.7]])
    y = np.array([1, 1, -1, 1])
    trace = higher_order(X, y, epochs=2, sparse=True)
    assert trace.mistakes[:2] == [0, 1]
    assert trace.fragile == list(range(1, 8))
    bounds = final_error_bounds(trace, X)
    assert bounds["final.w"] == [ho.ANY_STATE] * 2
    plain = higher_order(X, y, epochs=2)   # not sparse: no branch, no tail
    assert plain.fragile != list(range(1, 8))


@settings(max_examples=40)
@given(seq=SEQUENCES["separable"](), params=higher_order_params(p2_only=True),
       epochs=st.integers(1, 2))
def test_the_dual_recursions_are_the_primal_algorithm(seq, params, epochs):
    """The reference's dual path (D, h, g over the mistakes; the spec of the dual form) and
    its integer twin give the primal path's trace exactly, scores and fragile flags too."""
    rows, labels = exact_data(seq.X, seq.y)
    resolved = ho.resolve_params(params)
    lin = parse_kernel("linear")
    traces = [ho.run_loop(rows, labels, epochs, lin, resolved, engine=e,
                          record_scores=True) for e in (ho.Primal, ho.Dual, ho.IntDual)]
    for t in traces[1:]:
        assert (t.mistakes, t.final, t.scores, t.fragile) == \
            (traces[0].mistakes, traces[0].final, traces[0].scores, traces[0].fragile)
    poly = parse_kernel("poly:degree=2,coef0=1/2,gamma=1")
    a, b = (ho.run_loop(rows, labels, epochs, poly, resolved, engine=e, record_scores=True)
            for e in (ho.Dual, ho.IntDual))
    assert (a.mistakes, a.final, a.scores, a.fragile) == (b.mistakes, b.final, b.scores,
                                                          b.fragile)


# -- item 4: c = 0 is the first-order algorithm -----------------------------------------
@settings(max_examples=60)
@given(seq=st.one_of(small_integers(), SEQUENCES["separable"](), SEQUENCES["duplicates"]()),
       p=st.sampled_from([2, 3, 4, 7]), rho=st.sampled_from(["c/k", "constant"]),
       epochs=st.integers(1, 3))
def test_c_zero_is_the_perceptron_and_the_pnorm_perceptron(seq, p, rho, epochs):
    P.check_reduces_to_first_order(higher_order, seq.X, seq.y, epochs=epochs, p=p, rho=rho)
    if p == 2:
        assert pnorm_perceptron(seq.X, seq.y, epochs=epochs).mistakes == \
            perceptron(seq.X, seq.y, epochs=epochs).mistakes


def _first_order_caught(mutation, p):
    def violates(seq):
        impl = lambda X, y, **kw: W.wrong(mutation, "higher_order", X, y,  # noqa: E731
                                          epochs=kw.pop("epochs"), kernel=kw.pop("kernel"),
                                          params=kw)
        try:
            P.check_reduces_to_first_order(impl, seq.X, seq.y, epochs=2, p=p)
        except P.InvariantViolation:
            return True
        return False
    return find(small_integers(), violates, settings=FIND)


def test_first_order_check_catches_the_wrong_tie_rule():
    _first_order_caught("tie_rule", 2)


def test_first_order_check_catches_a_wrong_gradient_exponent():
    _first_order_caught("gradient_exponent", 3)


# -- item 4: the rho schedule and the sparse rule, on every strategy ---------------------
@settings(max_examples=60)
@given(data=st.data(), strategy=st.sampled_from(sorted(SEQUENCES)), epochs=st.integers(1, 3))
def test_rho_schedule_and_sparse_rule(data, strategy, epochs):
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    params = data.draw(higher_order_params(), label="params")
    run = P.observe(seq.X, seq.y, epochs=epochs, **params)
    P.check_rho_schedule(run)
    P.check_sparse_rule(run)


_any_params = st.fixed_dictionaries({
    "rho": st.sampled_from(["c/k", "theorem1"]),
    "c": st.sampled_from([Fraction(1, 10), Fraction(2, 5), Fraction(3, 4)]),
    "sparse": st.booleans(), "p": st.sampled_from([2, 3])})


@pytest.mark.parametrize("mutation", ["rho_index_shifted", "rho_not_decayed",
                                      "theorem1_no_abs"])
def test_rho_schedule_check_catches(mutation):
    _caught(lambda run, u: P.check_rho_schedule(run), mutation, _unit_cases(_any_params))


def test_sparse_check_catches_the_inverted_rule():
    _caught(lambda run, u: P.check_sparse_rule(run), "sparse_inverted",
            _unit_cases(_any_params), sparse=True)


# -- item 4: Theorem 1's quantities on unit-norm data -------------------------------------
@settings(max_examples=60)
@given(case=labelled_sphere(), params=_unit_params, epochs=st.integers(1, 3))
def test_unit_norm_invariants(case, params, epochs):
    rows, y, u = case
    run = P.observe(rows, y, epochs=epochs, **params)
    assert P.check_r_range(run) == len(run.mistakes) > 0
    assert P.check_eq3(run) == len(run.mistakes)
    assert P.check_matrix(run) == len(run.mistakes)
    assert P.check_theorem1(run, u) > 0
    P.check_sparse_rule(run)


@pytest.mark.parametrize("check,mutation", [
    (lambda run, u: P.check_r_range(run), "rho_not_decayed"),
    (lambda run, u: P.check_r_range(run), "theorem1_no_abs"),
    (lambda run, u: P.check_eq3(run), "label_sign"),
    (lambda run, u: P.check_matrix(run), "rho_squared_dropped"),
    (lambda run, u: P.check_matrix(run), "factor_sign"),
    (P.check_theorem1, "label_sign"),
], ids=["r_range:rho_not_decayed", "r_range:theorem1_no_abs", "eq3:label_sign",
        "matrix:rho_squared_dropped", "matrix:factor_sign", "theorem1:label_sign"])
def test_unit_norm_checks_catch(check, mutation):
    _caught(check, mutation, _unit_cases())


def test_every_mutation_is_caught_by_some_test():
    covered = {"rho_index_shifted", "rho_not_decayed", "theorem1_no_abs", "sparse_inverted",
               "label_sign", "rho_squared_dropped", "factor_sign", "tie_rule",
               "gradient_exponent"}
    assert covered == set(W.MUTATIONS) - {""}


def test_mutants_follow_the_verify_protocol():
    rng = np.random.default_rng(2)
    X, y = rng.uniform(-1, 1, (10, 3)), np.where(rng.uniform(size=10) < .5, 1, -1)
    for mutant in W.MUTANTS.values():
        for algorithm, params in (("higher_order", {"c": Fraction(1, 2)}),
                                  ("pnorm_perceptron", {"p": 3})):
            trace = mutant(algorithm, X, y, epochs=2, kernel="linear", params=params)
            assert trace.algorithm == algorithm
    ref = higher_order(X, y, epochs=2, c=Fraction(1, 2))
    same = W.MUTANTS[""]("higher_order", X, y, epochs=2, kernel="linear",
                         params={"c": Fraction(1, 2)})
    assert (same.mistakes, same.final) == (ref.mistakes, ref.final)


def test_an_underflowing_pnorm_score_is_fragile():
    """x_9 = (0.71, 5e-324) against v = x_0 = (5e-324, -0.23), p = 7: the exact score is
    -1.1e-324, below float64's range, and its magnitude underflows too; the trial must be
    flagged (SPEC.md 3), and the fast form (score 0.0, a mistake) is excused there."""
    from perceptron_oracle.compare import compare
    from perceptron_oracle.fast.pnorm_perceptron import primal

    X = np.array([[5e-324, -0.22920927], [-0.58449006, -0.13884268], [-0.28601833, 1.0],
                  [0.0, 1.0], [-0.95728294, 0.75560948], [0.4346227, 3.54506238e-242],
                  [-0.78975257, 0.96342986], [0.04233228, 0.11219047],
                  [0.02472955, 0.12350747], [0.70765384, 5e-324]])
    y = np.array([1, 1, -1, -1, -1, -1, -1, -1, -1, -1])
    expected = pnorm_perceptron(X, y, p=7, record_scores=True)
    assert expected.mistakes == [0] and 9 in expected.fragile
    assert compare(expected, primal(X, y, p=7), X).ok


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_pnorm_final_bounds_survive_a_tiny_v(engine):
    """p = 7, v = (0, 4.8e-100) after -x_0 + x_1 with x_0 = (0.5, 0): |v_i|^7 underflows in
    float64, which once made the final bound of w_1 0 (allowed 2e-322) where a float64 form
    is one ulp off; the bound is computed on v / max|v| and scaled back (found by the
    thorough profile)."""
    from perceptron_oracle.compare import compare
    from perceptron_oracle.fast import _compiled
    from perceptron_oracle.registry import run

    if engine == "numba" and not _compiled.available():
        pytest.skip("numba is not installed: no compiled engine to test")
    X = np.array([[5.00000001e-001, 0.0], [5.00000001e-001, 4.78383402e-100]])
    y = np.array([-1, 1])
    expected = run("pnorm_perceptron", X, y, p=7)
    actual = run("pnorm_perceptron", X, y, p=7, impl="fast", engine=engine)
    assert compare(expected, actual, X).ok


@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_pnorm_final_bounds_when_v_is_exactly_zero(engine):
    """v = a + 1 - 1 - a = 0 exactly (a = 0.046875000046875, p = 5/2), but float64 sums it
    to -2^-54 and w_3 = g(v)_3 = v_3: the bound on w is then the size of v's error, not 0
    (found by the thorough profile)."""
    from perceptron_oracle.compare import compare
    from perceptron_oracle.fast import _compiled
    from perceptron_oracle.registry import run

    if engine == "numba" and not _compiled.available():
        pytest.skip("numba is not installed: no compiled engine to test")
    a = 0.046875000046875004
    X = np.zeros((12, 4))
    X[:, 3] = [a, 1, a, a, a, a, a, 1, 1, a, a, a]
    y = np.array([1, 1, 1, 1, 1, 1, 1, -1, 1, 1, 1, -1])
    expected = run("pnorm_perceptron", X, y, p="5/2")
    assert expected.final["v"] == [0, 0, 0, 0]
    actual = run("pnorm_perceptron", X, y, p="5/2", impl="fast", engine=engine)
    assert actual.final["v"][3] != 0
    assert compare(expected, actual, X).ok
