"""Long runs: every fast form against the exact reference over many trials (10^5 by default).

For every algorithm of the registry, every fast form that takes the run (``forms_for``) and
every engine a form declares (``numpy`` and ``numba`` for a form with the keyword
``engine``), one exact run (the family's exact engine, or its reference) and one of the fast
form on the same data, judged by ``compare.judge_run`` (SPEC.md chapter 4): the form must
agree trial for trial; at a trial the exact run flags fragile it may take the other branch,
and is judged on that branch from there on.  Kernel forms run with a polynomial and a Gaussian
kernel; a family with p runs at p = 2 and at one p != 2.

The data keeps the exact reference affordable and the updates coming: a few features,
instances on the dyadic grid 2^-10 (integers over 8, each coordinate moved by a multiple of
2^-10 as the golden files' jittered groups are: no exact ties, short sums exact in float64),
labels from a fixed hyperplane with a share flipped (noise), the examples presented for many
epochs.  HO at p = 2 and SOP, whose exact references (Fractions) slow down with every
mistake, run on separable data (their mistakes stop), and once more with noisy labels over
5,000 trials (about a thousand updates of their running matrices); ROMMA runs on separable
data too (its float64 state overflows on noisy labels); ROMMA's and PUMMA's references run
in mpmath at 256 bits.  Each run's size is in its family's declaration
(``Family.long_runs``).

    python -m perceptron_oracle.long_runs                  # 10^5 trials, every form
    python -m perceptron_oracle.long_runs --trials 2000 --only perceptron,alma

One line per run; exit status 1 when any run fails.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .compare import judge_run
from .errors import OracleInputError
from .family import Family, LongRun
from .fast.driver import FloatRangeError
from .fast.higher_order import numba_available
from .interrupts import one_line
from .registry import ALGORITHMS
from .trace import Trace
from .usage import OneLineParser

#: The default number of trials of each run.
TRIALS = 100_000


def grid_data(T: int, n: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """T instances on the grid 2^-10 in [-0.51, 0.51]^n (integers -4..4 over 8, moved by
    -8..8 times 2^-10), labelled by a fixed hyperplane, a ``noise`` share flipped."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-4, 5, size=(T, n)) / 8 + rng.integers(-8, 9, size=(T, n)) / 1024
    u = rng.integers(-3, 4, size=n) + 0.5
    y = np.where(X @ u > 0, 1, -1)
    return X, np.where(rng.random(T) < noise, -y, y)


def stop_excused(expected: Trace, stop: FloatRangeError) -> bool:
    """A fast form that stopped with ``FloatRangeError`` (its float64 state left the range)
    is accepted only at or after a trial the reference flags fragile: it may have parted
    from the exact path there (SPEC.md chapter 3, "Beyond float64's range")."""
    return stop.trial is not None and any(t <= stop.trial for t in expected.fragile or ())


@dataclass
class Outcome:
    """One fast run against its reference: ``ok`` and the line's verdict."""

    ok: bool
    verdict: str
    mistakes: int | None = None


def judge(expected: Trace, run_fast: Any, X: Any, y: Any, kernel: str,
          params: dict[str, Any]) -> Outcome:
    """Run ``run_fast()`` and judge its trace against the exact run ``expected`` on every
    trial, following the form's branch at a fragile trial where it decides the other way
    (``compare.judge_run``, chapter 4)."""
    try:
        actual = run_fast()
    except FloatRangeError as stop:
        if stop_excused(expected, stop):
            return Outcome(True, f"stopped (float64 range) at trial {stop.trial}, after a "
                                 "flagged trial")
        return Outcome(False, f"FAILED: FloatRangeError at trial {stop.trial}, no flagged "
                              "trial before it")
    except Exception as exc:  # noqa: BLE001 - a form that breaks fails on its line
        return Outcome(False, f"FAILED: {type(exc).__name__}: {exc}")
    result = judge_run(expected.algorithm, X, y, actual, epochs=expected.epochs, kernel=kernel,
                       params=params, expected=expected)
    mistakes = len(actual.mistakes)
    if not result.ok:
        return Outcome(False, f"FAILED at trial {result.first_divergence}: "
                              f"{result.describe()}", mistakes)
    if result.excused:
        return Outcome(True, f"parted at flagged trial {result.first_divergence}, "
                             f"not judged beyond: {result.unfollowed}", mistakes)
    if result.branches:
        return Outcome(True, f"agreed on its branches at flagged trial(s) "
                             f"{result.branches[:3]}", mistakes)
    return Outcome(True, "agreed", mistakes)


def engines(algo: Family, form: str) -> tuple[str | None, ...]:
    """The engines to run a form with: numpy and numba where it takes ``engine``."""
    return ("numpy", "numba") if algo.form(form).engine else (None,)


def run_setup(algo: Family, setup: LongRun, trials: int, seed: int,
              forms: Sequence[str] | None, out: Any) -> bool:
    """Every form of ``algo`` that takes ``setup``, against one reference run; prints one
    line per (form, engine) and returns whether all passed."""
    trials = min(trials, setup.trials or trials)
    T = max(1, min(setup.examples, trials))
    epochs = max(1, trials // T)
    X, y = grid_data(T, setup.n, setup.noise, seed)
    todo = [f for f in algo.forms_for(setup.kernel, setup.params)
            if forms is None or f in forms]
    if not todo:
        return True
    head = f"{algo.name:<16} {setup.label:<22}"
    start = time.perf_counter()
    try:
        expected = algo.exact_run()(
            X, y, epochs=epochs, kernel=setup.kernel, record_scores=True, **setup.params)
    except Exception as exc:  # noqa: BLE001 - reported on its line, never a traceback
        print(f"{head} reference: FAILED to run: {type(exc).__name__}: {exc}", file=out,
              flush=True)
        return False
    ref_s = time.perf_counter() - start
    ok = True
    for form in todo:
        for engine in engines(algo, form):
            extra = {} if engine is None else {"engine": engine}
            tag = f"{form:<8} {engine or '-':<5}"
            if engine == "numba" and not numba_available():
                print(f"{head} {tag} not run: numba is not installed", file=out, flush=True)
                continue
            start = time.perf_counter()
            outcome = judge(expected, functools.partial(
                algo.implementation("fast", form), X, y, epochs=epochs,
                kernel=setup.kernel, **setup.params, **extra), X, y, setup.kernel,
                setup.params)
            fast_s = time.perf_counter() - start
            ok &= outcome.ok
            print(f"{head} {tag} {T * epochs:>7} trials {len(expected.mistakes):>6} mistakes"
                  f" {len(expected.fragile or ()):>6} flagged  exact {ref_s:8.1f} s  fast "
                  f"{fast_s:6.2f} s  {outcome.verdict}", file=out, flush=True)
    return ok


@one_line("python -m perceptron_oracle.long_runs")
def main(argv: Sequence[str] | None = None, out: Any = None) -> int:
    out = out or sys.stdout
    parser = OneLineParser(
        prog="python -m perceptron_oracle.long_runs",
        description="every fast form against the exact reference over long runs")
    parser.add_argument("--trials", type=int, default=TRIALS,
                        help=f"trials per run (default {TRIALS})")
    parser.add_argument("--only", default=None, help="FAMILY[,FAMILY..] (default: all)")
    parser.add_argument("--forms", default=None, help="FORM[,FORM..] (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="the data's seed (default 0)")
    try:  # a usage error is one line, as the command line's are
        args = parser.parse_args(argv)
        if args.trials < 1:
            parser.error("--trials must be at least 1")
        families = args.only.split(",") if args.only else list(ALGORITHMS)
        unknown = [f for f in families if f not in ALGORITHMS]
        if unknown:
            parser.error(f"unknown family {', '.join(unknown)} "
                         f"(known: {', '.join(ALGORITHMS)})")
    except OracleInputError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    forms = args.forms.split(",") if args.forms else None
    start = time.perf_counter()
    ok = True
    for name in families:
        for setup in ALGORITHMS[name].long_runs:
            ok &= run_setup(ALGORITHMS[name], setup, args.trials, args.seed, forms, out)
    print(f"total {time.perf_counter() - start:.1f} s; "
          f"{'every run passed' if ok else 'FAILED'}", file=out, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
