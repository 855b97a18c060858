"""Branch-following comparison: past a fragile trial where an implementation decides the other
way, the exact run takes its branch and every later trial is still judged.

Golden cases with a fragile trial early in the run, one per family that has one: an honest
implementation that takes the other branch there passes, judged on every trial; the same
with a real bug planted after it (a decision flipped at a trial that is not fragile on that
branch) fails, naming that trial, where ``compare`` alone stops at the fragile trial and
passes.  The implementations are the exact run itself, told to take other branches
(``reference.common.following``).
"""

from __future__ import annotations

import pytest

from perceptron_oracle import compare as compare_module
from perceptron_oracle import golden, verify
from perceptron_oracle.compare import compare, follow_branches, judge_run
from perceptron_oracle.reference.common import following
from perceptron_oracle.registry import get


def _early_fragile_cases() -> list:
    """Per algorithm, the first golden case whose first fragile trial lies in the first
    third of the run and where the exact run can take the other branch there."""
    seen: dict[str, object] = {}
    for case in golden.load():
        total = case.expected.n_examples * case.expected.epochs
        fragile = case.expected.fragile or []
        if case.algorithm in seen or not fragile or fragile[0] >= total // 3:
            continue
        if _run(case, {fragile[0]}).updates != case.expected.updates:
            seen[case.algorithm] = case
    return [pytest.param(case, id=f"{case.algorithm}:{case.name}") for case in seen.values()]


def _run(case, flipped):
    with following(flipped):
        return get(case.algorithm).exact_run()(case.X, case.y, epochs=case.epochs,
                                         kernel=case.kernel, **case.params)


def _judge(case, actual):
    return judge_run(case.algorithm, case.X, case.y, actual, epochs=case.epochs,
                     kernel=case.kernel, params=case.params, expected=case.expected,
                     bounds=case.tolerance)


CASES = _early_fragile_cases()


def test_cases_cover_several_families() -> None:
    assert len(CASES) >= 3, [c.id for c in CASES]


@pytest.mark.parametrize("case", CASES)
def test_the_other_branch_at_a_fragile_trial_is_judged_to_the_end(case) -> None:
    t0 = case.expected.fragile[0]
    branch = _run(case, {t0})
    result = _judge(case, branch)
    assert result.ok and result.judged_every_trial, result.describe()
    assert result.branches == [t0]
    assert f"following its branch at fragile trial {t0}" in result.describe()
    assert verify.judge(case, branch).ok


@pytest.mark.parametrize("case", CASES)
def test_a_bug_after_the_branch_is_found(case) -> None:
    t0 = case.expected.fragile[0]
    branch = _run(case, {t0})
    total = case.expected.n_examples * case.expected.epochs
    t1 = next(t for t in range(t0 + 1, total) if t not in (branch.fragile or []))
    wrong = _run(case, {t0, t1})
    assert compare(case.expected, wrong, bounds=case.tolerance).ok   # stops at t0
    result = _judge(case, wrong)
    assert not result.ok
    assert result.first_divergence == t1 and result.branches == [t0]
    assert f"trial {t1} " in result.describe()
    verdict = verify.judge(case, wrong)
    assert not verdict.ok and verdict.first_divergence == t1 and verdict.branches == [t0]


@pytest.mark.parametrize("case", CASES)
def test_a_bug_at_a_trial_that_is_not_fragile_is_found_without_a_branch(case) -> None:
    total = case.expected.n_examples * case.expected.epochs
    t1 = next(t for t in range(total) if t not in (case.expected.fragile or []))
    result = _judge(case, _run(case, {t1}))
    assert not result.ok and result.first_divergence == t1 and result.branches == []


@pytest.mark.parametrize("case", CASES[:1])
def test_a_branch_the_exact_run_cannot_take_ends_the_judging_and_says_so(case) -> None:
    """A rerun that does not take the branch (as where the update problem is infeasible,
    exactly): accepted at that trial, the verdict saying the later trials were not judged."""
    t0 = case.expected.fragile[0]
    result = follow_branches(case.expected, _run(case, {t0}), lambda trials: case.expected,
                             case.X, case.tolerance)
    assert result.ok and result.excused and result.first_divergence == t0
    assert result.unfollowed and not result.judged_every_trial
    assert "later trials not judged" in result.describe()


@pytest.mark.parametrize("case", CASES[:1])
def test_branches_beyond_the_limit_end_the_judging(case, monkeypatch) -> None:
    monkeypatch.setattr(compare_module, "MAX_BRANCHES", 0)
    t0 = case.expected.fragile[0]
    result = _judge(case, _run(case, {t0}))
    assert result.ok and result.first_divergence == t0 and not result.judged_every_trial
    assert result.unfollowed == "0 branches followed already"
