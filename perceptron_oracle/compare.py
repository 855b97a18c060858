"""Comparing a trace with the reference's, trial for trial (SPEC.md, "Comparing traces").

Trials are compared in order: each must agree on "mistake?" and "update?".  A trial where
they disagree is a failure unless the exact run flagged it fragile (its exact score lies
within float64 rounding distance of a threshold): there either branch is right.  ``compare``
alone stops at such a trial, accepted; ``follow_branches`` (and ``judge_run``, which runs the
exact engine itself) has the exact run take the implementation's branch there
(``reference.common.following``) and goes on judging every later trial exactly along it,
with that branch's own fragile trials.  When every trial agrees, the final states are
compared: integers exactly, numbers within the bounds that the algorithm's reference module
derives from the data (``final_error_bounds``), never within a blanket tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .numbers import approximate, brief, is_mpf, to_fraction
from .reference.common import following
from .registry import get
from .trace import Trace, plain_value

#: The problems :meth:`Comparison.describe` lists; the rest are counted.
MAX_PROBLEMS_SHOWN = 3


@dataclass
class Comparison:
    ok: bool
    trials_compared: int
    first_divergence: int | None = None   # the first trial that differs, if any
    excused: bool = False                 # that trial is fragile: either branch is right
    problems: list[str] = field(default_factory=list)
    not_reported: list[str] = field(default_factory=list)  # expected keys the trace lacks
    branches: list[int] = field(default_factory=list)     # fragile trials whose branch it took
    fragile: int | None = None            # the exact run's fragile trials (on the branch)
    unfollowed: str = ""                  # why the exact run cannot take the branch at
    #                                       first_divergence (judging ended there)
    exact: Trace | None = None            # the exact run judged against (the last branch)

    def describe(self) -> str:
        on = (f" (following its branch at fragile trial{'s' * (len(self.branches) > 1)} "
              f"{_trials(self.branches)})" if self.branches else "")
        if self.ok and self.first_divergence is None:
            return f"identical over {self.trials_compared} trials{on}"
        if self.ok:
            if self.unfollowed:
                return (f"identical up to fragile trial {self.first_divergence}{on}, where "
                        f"either branch is right; the exact run cannot take its branch "
                        f"({self.unfollowed}): later trials not judged")
            return (f"identical up to fragile trial {self.first_divergence}, where either "
                    "branch is right")
        shown = self.problems[:MAX_PROBLEMS_SHOWN]
        more = len(self.problems) - len(shown)
        return "; ".join(shown) + (f"; and {more} more difference{'s' * (more != 1)}"
                                   if more else "") + on

    @property
    def judged_every_trial(self) -> bool:
        """Every trial was judged on the exact run (along the branches it followed)."""
        return self.ok and self.first_divergence is None


def _trials(trials: list[int]) -> str:
    shown = ", ".join(str(t) for t in trials[:5])
    return shown + (f" and {len(trials) - 5} more" if len(trials) > 5 else "")


def compare(expected: Trace, actual: Trace, X: Any = None,
            bounds: dict[str, Any] | None = None, partial: bool = False,
            excused: frozenset[int] = frozenset()) -> Comparison:
    """``expected`` is a reference trace; ``actual`` any trace of the same run.  The final
    state is compared within ``bounds`` (a golden case states them), or within the bounds
    derived from ``X``, the run's data.

    With ``partial`` (an outside implementation that keeps only part of the state, say w and
    b), a key of the expected final state that ``actual`` lacks is listed in
    ``not_reported`` and not compared; without it, a missing key is a failure.  The
    decisions at the ``excused`` trials (fragile ones, already judged by
    ``follow_branches``) are not compared."""
    total = expected.n_examples * expected.epochs
    header = [f"{name}: expected {_brief(getattr(expected, name))}, got "
              f"{_brief(getattr(actual, name))}"
              for name in ("algorithm", "n_examples", "epochs", "kernel")
              if getattr(expected, name) != getattr(actual, name)]
    if header:
        return Comparison(False, 0, problems=header)
    fragile = set(expected.fragile or ())
    events = []
    for label, exp, act in (("mistake", expected.mistakes, actual.mistakes),
                            ("update", expected.updates, actual.updates)):
        exp_set, act_set = set(exp), set(act)
        differ = (exp_set ^ act_set) - excused
        if differ:
            t = min(differ)
            events.append((t, label, t in exp_set))
    if events:
        t, label, expected_yes = min(events)
        if t in fragile:
            return Comparison(True, t, first_divergence=t, excused=True)
        what = f"{label}" if expected_yes else f"no {label}"
        score = ""
        if expected.scores is not None and t < len(expected.scores):
            score = f" (exact score {_show(expected.scores[t])})"
        return Comparison(False, t, first_divergence=t,
                          problems=[f"trial {t} (example {t % expected.n_examples}): "
                                    f"expected {what}{score}, got the opposite"])
    if bounds is None and X is not None:
        bounds = get(expected.algorithm).final_error_bounds(expected, X)
    problems: list[str] = []
    missing: list[str] | None = [] if partial else None
    exp_final, act_final = plain_value(expected.final), plain_value(actual.final)
    hidden = _votes_part_at_fragile(expected, exp_final, act_final, fragile)
    if hidden is not None:  # the vote statistics follow the hidden branch: not compared
        exp_final = {k: v for k, v in exp_final.items() if k not in VOTE_KEYS}
        act_final = {k: v for k, v in act_final.items() if k not in VOTE_KEYS}
    _compare_values("final", exp_final, act_final, bounds or {}, problems,
                    loose=bounds is None, missing=missing)
    if hidden is not None and not problems:
        return Comparison(True, total, first_divergence=hidden, excused=True,
                          not_reported=missing or [])
    return Comparison(not problems, total, problems=problems, not_reported=missing or [],
                      fragile=len(fragile))


#: At most this many branches are followed in one comparison; beyond, judging ends there.
MAX_BRANCHES = 64


def follow_branches(expected: Trace, actual: Trace, rerun: Callable[[frozenset[int]], Trace],
                    X: Any = None, bounds: dict[str, Any] | None = None,
                    partial: bool = False) -> Comparison:
    """``compare``, going on past every fragile trial where ``actual`` decides the other way.

    There both branches are right: a mistake decision alone changes no state, and is passed;
    a different update decision is followed, ``rerun(trials)`` giving the exact run that
    takes the other branch at ``trials`` (``reference.common.following``), and every later
    trial is judged on it, with that branch's fragile trials.  ``bounds`` hold for
    ``expected`` only: on a branch the final state is judged within the bounds derived from
    ``X``.  A branch the exact run cannot take (the update problem infeasible there, exactly)
    ends the judging at that trial, accepted, and the comparison says so; so does a
    MAX_BRANCHES-th branch."""
    excused: set[int] = set()
    followed: list[int] = []
    while True:
        result = compare(expected, actual, X, bounds, partial, frozenset(excused))
        result.branches, result.exact = list(followed), expected
        t = result.first_divergence
        if not (result.excused and t is not None and result.trials_compared == t):
            return result   # agreed, failed, or a vote statistic only (the final state)
        excused.add(t)
        if (t in expected.updates) == (t in actual.updates):
            continue       # the mistake test alone: no state parts
        if len(followed) == MAX_BRANCHES:
            result.unfollowed = f"{MAX_BRANCHES} branches followed already"
            return result
        followed.append(t)
        expected, bounds = rerun(frozenset(followed)), None
        if (t in expected.updates) != (t in actual.updates):
            result.branches = followed[:-1]
            result.unfollowed = "its update is infeasible there, exactly"
            return result


def judge_run(algorithm: str, X: Any, y: Any, actual: Trace, *, epochs: int = 1,
              kernel: Any = "linear", params: dict[str, Any] | None = None,
              expected: Trace | None = None, bounds: dict[str, Any] | None = None,
              partial: bool = False) -> Comparison:
    """``actual``, a trace of ``algorithm`` on (X, y), judged on every trial against the
    exact run (``expected``, if already run: it must be the exact run of these arguments),
    following ``actual``'s branch at each fragile trial where it decides the other way
    (``follow_branches``).  The exact runs record their scores (for the failure's message)
    unless ``expected`` is given without them."""
    run = get(algorithm).exact_run()
    given = dict(params or {})

    scores = expected is None or expected.scores is not None

    def rerun(trials: frozenset[int]) -> Trace:
        with following(trials):
            return run(X, y, epochs=epochs, kernel=kernel, record_scores=scores, **given)

    return follow_branches(rerun(frozenset()) if expected is None else expected, actual,
                           rerun, X, bounds, partial)


#: The final keys that follow from the votes (the Perceptron's Figure 2 statistics).
VOTE_KEYS = ("votes", "longest_survivor", "averaged")


def _votes_part_at_fragile(expected: Trace, exp_final: Any, act_final: Any,
                           fragile: set[int]) -> int | None:
    """A branch that mistakes and updates do not show: a trial the alpha-bound blocks
    neither updates nor votes, one whose margin clears tau votes, so at a fragile trial
    (margin within rounding of tau) of an example at its bound the two forms may count
    different votes with identical updates.  Returns the first fragile trial that explains
    ``act_final``'s votes where they differ from ``exp_final``'s (each hypothesis's votes within
    the count of fragile trials in its span), or None (votes equal, or not so explained)."""
    exp_votes = exp_final.get("votes") if isinstance(exp_final, dict) else None
    act_votes = act_final.get("votes") if isinstance(act_final, dict) else None
    if not isinstance(exp_votes, list) or not isinstance(act_votes, list) \
            or len(exp_votes) != len(act_votes) or exp_votes == act_votes:
        return None
    bounds = [-1, *expected.updates, expected.n_examples * expected.epochs]
    first = None
    for k, (e, a) in enumerate(zip(exp_votes, act_votes)):
        if not isinstance(a, int) or isinstance(a, bool):
            return None
        span = [t for t in fragile if bounds[k] < t < bounds[k + 1]]
        if abs(a - e) > len(span):
            return None
        if a != e:
            first = min(span) if first is None else min(first, min(span))
    return first


def _compare_values(path: str, exp: Any, act: Any, bounds: dict[str, Any],
                    problems: list[str], loose: bool, missing: list[str] | None) -> None:
    """Compare ``act`` with ``exp`` under ``path``; a key ``act`` lacks goes to ``missing``
    (partial comparison) or, when ``missing`` is None, to ``problems``."""
    if isinstance(exp, dict):
        if not isinstance(act, dict):
            problems.append(f"{path}: expected an object")
            return
        for name in exp:
            if name in act:
                _compare_values(f"{path}.{name}", exp[name], act[name], bounds, problems,
                                loose, missing)
            elif missing is not None:
                missing.append(f"{path}.{name}")
            else:
                problems.append(f"{path}.{name}: missing")
        return
    if isinstance(exp, list):
        if not isinstance(act, list) or len(act) != len(exp):
            problems.append(f"{path}: expected a list of {len(exp)}")
            return
        bound = bounds.get(path)
        for i, (e, a) in enumerate(zip(exp, act)):
            b = bound[i] if isinstance(bound, list) else bound
            _compare_number(f"{path}[{i}]", e, a, b, problems, loose)
        return
    _compare_number(path, exp, act, bounds.get(path), problems, loose)


def _compare_number(path: str, exp: Any, act: Any, bound: Any, problems: list[str],
                    loose: bool) -> None:
    if not _is_number(exp) or (isinstance(exp, int) and isinstance(act, int)):
        if exp != act or type(exp) is not type(act) and (
                not _is_number(exp) or isinstance(act, bool)):
            problems.append(f"{path}: expected {_brief(exp)}, got {_brief(act)}")
        return
    if not _is_number(act):
        problems.append(f"{path}: expected a number, got {_brief(act)}")
        return
    if isinstance(act, float) and not math.isfinite(act):
        problems.append(f"{path}: expected {_show(exp)}, got {act} (not a finite number)")
        return
    diff = abs(to_fraction(exp) - to_fraction(act))
    if bound is not None:
        allowed = to_fraction(float(bound))
    elif loose:  # no data, no derived bound: a relative check only (SPEC.md)
        allowed = abs(to_fraction(exp)) / 10**9
    else:
        allowed = Fraction(0)
    if diff > allowed:
        problems.append(f"{path}: expected {_show(exp)}, got {_show(act)} "
                        f"(off by {_approx(diff, 3)}, allowed {_approx(allowed, 3)})")


def _is_number(value: Any) -> bool:
    # an mpmath mpf (the mpmath mode of a reference) is an exact dyadic rational
    return (isinstance(value, (int, float, Fraction)) or is_mpf(value)) and \
        not isinstance(value, bool)


def _show(value: Any) -> str:
    """A number for a message, short whatever its size (``numbers.brief``: ``p/q
    (~double)``, or the size and an approximation of a long exact number)."""
    if not _is_number(value):
        return _brief(value)
    return brief(value, 17)


def _approx(value: Fraction, digits: int) -> str:
    """``value`` to ``digits`` significant digits, also beyond the float64 range."""
    return approximate(value, digits)


def _brief(value: Any) -> str:
    """``repr(value)`` cut to about 60 characters."""
    if _is_number(value):
        return _show(value)
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}...({len(text)} characters)"
