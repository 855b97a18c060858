"""The check library for outside implementations (properties/checks.py), one
InvariantViolation for every family, and Theorem 2 of Ishibashi, Hatano & Takeda (2008)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings

import fast_protocol
import wrong_alma
import wrong_perceptrons
import wrong_romma_pumma
from perceptron_oracle import properties, run
from perceptron_oracle.properties import (
    checks,
    higher_order,
    perceptron,
    romma_pumma,
    second_order,
)
from perceptron_oracle.properties.romma_pumma import check_theorem2, optimum_2norm, theorem3_bound
from perceptron_oracle.registry import ALGORITHMS, get
from perceptron_oracle.verify import check_implementation

F = Fraction


def test_one_invariant_violation_for_every_family():
    cls = properties.InvariantViolation
    assert issubclass(cls, AssertionError)
    for module in (perceptron, higher_order, second_order, romma_pumma, checks):
        assert module.InvariantViolation is cls


def test_every_family_declares_checks_with_one_signature():
    ids = []
    for algorithm, family in ALGORITHMS.items():
        found = family.invariant_checks
        assert found, algorithm
        for check in found:
            assert check.algorithm == algorithm and check.max_examples <= 20
            assert check.paper in checks.PAPERS.values() and check.theorem
            assert isinstance(check.needs, tuple) and hasattr(check.strategy, "example")
            assert check.schema is family.params    # the defaults the impl is called with
            ids.append(check.id)
    assert len(ids) == len(set(ids))


def test_the_alma_check_rejects_a_dropped_bias():
    """ALMA's corrections bound (Theorem 3) passes the fast forms and rejects the planted
    bug that drops the bias coordinate from the score."""
    check = get("alma").invariant_checks[0]
    assert checks.run_check(check, _fast, max_examples=20).ok
    failed = checks.run_check(check, wrong_alma.bias_dropped, max_examples=20)
    assert failed.status == "fail" and "Theorem 3" in failed.message


def _fast(algorithm, X, y, *, epochs, kernel, params):
    return run(algorithm, X, y, impl="fast", epochs=epochs, kernel=kernel, **params)


def _plain(algorithm, X, y, *, epochs, kernel, params):
    """w and b only, no NotImplementedError: a check needing more is not applicable."""
    if kernel != "linear" or params.get("tau") or params.get("lam") or \
            params.get("alpha_bound") is not None:
        raise NotImplementedError("a plain Perceptron")
    w, b = np.zeros(X.shape[1]), 0.0
    mistakes = []
    for t in range(epochs * len(y)):
        x, label = X[t % len(y)], y[t % len(y)]
        if label * (x @ w + b) <= 0:
            mistakes.append(t)
            w += float(params["eta"]) * label * x
            b += float(params["eta"]) * label * float(params["C"])
    return {"format": "perceptron-oracle/trace@1", "algorithm": algorithm, "form": "primal",
            "kernel": "linear", "params": {}, "n_examples": len(y), "epochs": epochs,
            "mistakes": mistakes, "updates": mistakes, "final": {"w": w.tolist(), "b": b}}


def test_missing_final_keys_and_not_implemented_are_not_applicable_never_a_keyerror():
    results = {r.check.id: r for r in check_implementation(_plain, ["perceptron"])}
    assert results["perceptron:textbook"].ok and results["perceptron:novikoff"].ok
    assert results["perceptron:bookkeeping"].status == "not_applicable"
    assert "final.alpha" in results["perceptron:bookkeeping"].message
    assert "final.votes" in results["perceptron:longest_survivor"].message

    def nothing(algorithm, X, y, *, epochs, kernel, params):
        raise NotImplementedError("nothing at all")

    for result in check_implementation(nothing, ["romma", "second_order"]):
        assert result.status == "not_applicable" and "nothing at all" in result.message


def test_a_failing_check_names_the_theorem_the_paper_and_the_draw():
    [textbook] = [c for c in get("perceptron").invariant_checks if c.name == "textbook"]
    result = checks.run_check(textbook, wrong_perceptrons.tie_rule)
    assert result.status == "fail"
    assert "textbook Perceptron" in result.message
    assert 'Khardon and G. Wachman, "Noise Tolerant Variants' in result.message
    assert "Data(" in result.message                     # hypothesis' falsifying draw


def test_romma_checks_catch_a_planted_bug_and_pass_the_fast_form():
    for check in get("romma").invariant_checks:
        assert checks.run_check(check, fast_protocol.run).ok, check.id
    lemma = next(c for c in get("romma").invariant_checks if c.name == "lemma4")
    result = checks.run_check(lemma, wrong_romma_pumma.lambda_sign, shrink=False)
    assert result.status == "fail" and "Li and P. M. Long" in result.message


def test_a_bad_trace_is_a_violation():
    def garbage(algorithm, X, y, *, epochs, kernel, params):
        return {"format": "something else"}

    [textbook] = [c for c in get("perceptron").invariant_checks if c.name == "textbook"]
    result = checks.run_check(textbook, garbage, max_examples=2, shrink=False)
    assert result.status == "fail" and "no valid trace" in result.message


# -- Theorem 2 and Theorem 3's bound --------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(data=checks._small_separable(bias=True, max_T=6, max_n=2))
def test_theorem2_max_margin_of_z_equals_that_of_x(data):
    u, b = check_theorem2(data.X, data.y)
    assert all(l * (sum(a * F(c) for a, c in zip(u, x)) + b) >= 1
               for x, l in zip(data.X.tolist(), data.y.tolist()))


def test_theorem2_check_catches_a_wrong_optimum():
    X, y = np.array([[3.0], [1.0]]), np.array([1, -1])
    assert check_theorem2(X, y) == ([F(1)], F(-2))

    def homogeneous_only(X, y, bias=True):
        return optimum_2norm(X, y, bias=False)

    with pytest.raises(properties.InvariantViolation, match="Theorem 2"):
        check_theorem2(X, y, optimum=homogeneous_only)

    def doubled(X, y, bias=True):
        out = optimum_2norm(X, y, bias=bias)
        return out if bias is False or out is None else ([2 * v for v in out[0]], out[1],
                                                         4 * out[2])

    with pytest.raises(properties.InvariantViolation, match="differs from the one over Z"):
        check_theorem2(np.array([[3.0, 0.0], [1.0, 1.0], [4.0, 2.0]]),
                       np.array([1, -1, 1]), optimum=doubled)


def test_theorem3_bound_is_the_proofs():
    # PUMMA: 2 + (4 (p-1) R^2 ||u||^2 - 4) / delta^2, at least 4/delta^2 - 0 below the
    # former 2 + 4 (p-1) R^2 ||u||^2 / delta^2
    assert theorem3_bound("pumma", 2, F(1, 4), 9, F(1, 2)) == 2 + (18 - 4) * 16
    assert theorem3_bound("pumma", 3, F(1, 2), 1, 1) == 2 + (8 - 4) * 4
    assert theorem3_bound("romma", 2, F(1, 2), 4, 1) == 1 + 3 * 4
    with pytest.raises(ValueError):
        theorem3_bound("romma", 2, 0, 1, 1)
