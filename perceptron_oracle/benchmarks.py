"""Every fast form against its floor and its peers, each time measured in one run.

One command, every time measured in one run on one machine (ratios survive a noisy machine
better than times):

    python -m perceptron_oracle.benchmarks                       # full size, every case
    python -m perceptron_oracle.benchmarks --size 0.1            # a tenth of the rows
    python -m perceptron_oracle.benchmarks --only "ho ,sop"      # cases naming either text
    python -m perceptron_oracle.benchmarks --json run.json       # also write the ratios
    python -m perceptron_oracle.benchmarks --compare tests/benchmarks/baseline.json

Cases: every registered family's ``benchmarks`` (``registry.ALGORITHMS``, in its order; each
a ``benchmark_cases.Benchmark``, declared as data: its data, the fast form and its
parameters, its floor, its peers).  The papers' families' cases, their data, floors and
peers are described in ``perceptron_oracle.benchmark_cases``; the measured update rate is
printed beside each.

Columns, in microseconds per trial (best of ``--repeat`` runs, of more while they add up to
less than ``MIN_SECONDS``; every path runs once before its timing, which loads numba's cache
or compiles):

- ``fast``: the fast form as shipped (``engine="auto"`` where the form's declaration says it
  takes the keyword), and ``numpy``: its block-ahead path (``engine="numpy"``);
- ``floor``: the case's floor (``Benchmark.floor``: one ``X @ w`` pass for the perceptron,
  p-norm, ROMMA and PUMMA primal forms, the bare BLAS calls of the run's updates for HO's
  and SOP's primal forms, the T x |S| kernel block for the duals, ...); a case that declares
  none prints its floor and fast/floor as "-";
- the peers (``Benchmark.peers``): ``sklearn`` (scikit-learn's ``Perceptron``, one epoch),
  ``np loop`` (the algorithm as a per-trial numpy loop), ``numba loop`` (the plain loop
  compiled by numba), ``primal`` (the fast primal form of the same algorithm on the same
  data), ``primal np loop`` (ROMMA's and PUMMA's primal numpy loops on their dual rows'
  data).  Every peer's mistakes (``Benchmark.key``; ROMMA/PUMMA: updates; ALMA:
  corrections) are checked against the fast form's, and so are the other engines': a
  difference stops the run;
- ``peak MiB``: the dual forms' (``Benchmark.dual``) tracemalloc peak during one run
  (shipped engine / numpy engine), beside the kernel cache cap
  ``kernels.KERNEL_CACHE_BYTES`` printed in the header.  Numba's own allocations are not
  traced (the compiled loops allocate their arrays in numpy before the call).

Threads: the whole run holds every BLAS library loaded (numpy's, scipy's) to ``--threads``
threads through threadpoolctl (default 1: the loops and numba use one core, and a second
BLAS thread competes with them on a shared machine); the header prints what was set.

``--exact`` prints instead the exact engines' table (``exact_rows``): per family, on raw Wdbc
(569 x 30, 10 epochs) and raw digits 3-against-the-rest (1,797 x 64, ``EXACT_DIGITS_EPOCHS``
epochs; ``--size`` takes a fraction of their rows), the trials per second of the readable
reference, of the exact engine and of the fast float64 form (the default form), each with
the family's default parameters, and the time ratios reference/engine (how much faster the
engine is) and engine/fast (how much slower).  The reference runs one epoch only
(``--reference-epochs``: ten take minutes to hours on these data): its rate is over its
first epoch, where its state is smallest (and ROMMA's and PUMMA's precision lowest), so the
reference/engine ratio understates the engine's gain.  Every engine's trace is checked
against the reference's on the epochs both ran (mistakes and updates: a run of E epochs
begins with those of fewer), and the fast form against the engine (``compare.judge_run``).

Ratios: fast/floor and fast/peer (lower is faster).  ``--compare BASELINE`` fails (exit 1)
when a ratio is worse than the baseline's by more than ``--margin`` (default 1.5: machines are
noisy); a case missing from either side is reported, not failed ("only in the run": a case
added since the baseline was written, as ALMA's rows are for tests/benchmarks/baseline.json;
"only in the baseline": a case left out by ``--only`` or removed).  Needs numba and
scikit-learn for the peer columns (a missing one is printed as "-").
"""

from __future__ import annotations

import json
import math
import sys
import time
import tracemalloc
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any

import numpy as np

from . import datasets, registry
from .benchmark_cases import Benchmark
from .compare import judge_run
from .errors import OracleInputError
from .fast.driver import FloatRangeError
from .interrupts import one_line
from .kernels import KERNEL_CACHE_BYTES, parse_kernel
from .registry import Family
from .usage import OneLineParser

DEFAULT_MARGIN = 1.5
WARM_ROWS = 2000    # paths other than the shipped one are warmed up on this many rows


# -- the cases --------------------------------------------------------------------------------
def cases(only: str | None = None) -> list[tuple[Family, Benchmark]]:
    """Every registered family's benchmark cases, in the registry's order (with ``only``:
    those whose name contains one of its comma-separated texts)."""
    wanted = [w.strip() for w in only.split(",") if w.strip()] if only else []
    return [(family, case) for family in registry.ALGORITHMS.values()
            for case in family.benchmarks
            if not wanted or any(w in case.name for w in wanted)]


class Plan:
    """One case's runs: ``run(engine, X, y)`` the fast form (a Trace) through the registry,
    ``engines`` the extra engines timed beside the shipped one ("numpy" when the form's
    declaration takes ``engine``), ``peers`` the case's peers that can run here."""

    def __init__(self, family: Family, case: Benchmark):
        form, kernel = family.form(case.form), parse_kernel(case.kernel)  # parsed once
        self.case, self.peers = case, case.peer_runs()
        self.engines: tuple[str, ...] = ("numpy",) if form.engine else ()

        def run(engine: str, X: Any, y: Any) -> Any:
            if form.engine:
                return form.run(X, y, kernel=kernel, engine=engine, **case.params)
            return form.run(X, y, kernel=kernel, **case.params)
        self.run = run


# -- measuring --------------------------------------------------------------------------------
#: A path whose calls are short is called until its calls add up to this many seconds (at
#: most ``MAX_CALLS`` calls), as ``timeit``'s autorange does: the best of three runs of a few
#: milliseconds moved the p-norm rows' ratios by a quarter between runs.
MIN_SECONDS = 0.25
MAX_CALLS = 50


def best_time(fn: Callable[[], Any], repeat: int, min_seconds: float = 0.0
              ) -> tuple[float, Any]:
    """The best time of at least ``repeat`` calls, more while they add up to less than
    ``min_seconds`` (up to ``MAX_CALLS``), and the last call's output."""
    best, out, spent, calls = np.inf, None, 0.0, 0
    while calls < repeat or (spent < min_seconds and calls < MAX_CALLS):
        out = None   # the previous call's output is freed before the clock starts
        start = time.perf_counter()
        out = fn()
        took = time.perf_counter() - start
        best, spent, calls = min(best, took), spent + took, calls + 1
    return best, out


def peak_mib(fn: Callable[[], Any]) -> float:
    """tracemalloc's peak (MiB) during one call."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


class Disagreement(Exception):
    """An engine or a peer made other mistakes (updates) than the fast form."""


def _check(name: str, peer: str, out: Any, trace: Any, key: str) -> None:
    """A peer must make the fast form's mistakes (scikit-learn: end with its weights)."""
    if isinstance(out, list):
        if out != getattr(trace, key):
            raise Disagreement(f"{name}: {peer} makes other {key}")
    elif not np.allclose(out.coef_.ravel(), trace.final["w"], rtol=1e-9, atol=1e-9):
        raise Disagreement(f"{name}: {peer} ends with other weights")


def _time_paths(name: str, plan: Plan, X: Any, y: np.ndarray, repeat: int,
                min_seconds: float) -> tuple[dict[str, float], Any]:
    """Times (seconds) of the shipped form, its other engines, the floor (when the case
    has one) and the peers, each path warmed up first; the shipped form's trace."""
    key = plan.case.key
    warm = min(WARM_ROWS, X.shape[0])
    for engine in plan.engines:
        plan.run(engine, X[:warm], y[:warm])
    plan.run("auto", X, y)  # the shipped path on the full data (numba's cache loads here)
    times: dict[str, float] = {}
    times["fast"], trace = best_time(lambda: plan.run("auto", X, y), repeat, min_seconds)
    for engine in plan.engines:
        times[engine], other = best_time(partial(plan.run, engine, X, y),
                                         max(1, repeat - 1), min_seconds)
        if getattr(other, key) != getattr(trace, key):
            raise Disagreement(f"{name}: engine {engine} differs")
    if plan.case.floor is not None:
        floor = plan.case.floor(X, y, trace)
        floor()
        times["floor"], _ = best_time(floor, repeat + 2, min_seconds)
    for peer, fn in plan.peers.items():
        fn(X[:warm], y[:warm])  # compile / load numba's cache outside the timings
        times[peer], out = best_time(partial(fn, X, y),
                                     *((1, 0.0) if peer == "np loop" else (repeat, min_seconds)))
        _check(name, peer, out, trace, key)
    return times, trace


def measure(family: Family, case: Benchmark, X: Any, y: np.ndarray, repeat: int,
            min_seconds: float = MIN_SECONDS) -> dict[str, Any]:
    """Times (us per trial), ratios and, for a dual form, peak memory of ``case`` (of
    ``family``) on (X, y); raises Disagreement on an engine or a peer whose mistakes differ
    from the fast form's."""
    T = X.shape[0]
    plan = Plan(family, case)
    times, trace = _time_paths(case.name, plan, X, y, repeat, min_seconds)
    ratios = {"fast/floor": times["fast"] / times["floor"]} if "floor" in times else {}
    for other in times:
        if other not in ("fast", "floor"):
            ratios[f"fast/{other}"] = times["fast"] / times[other]
    row: dict[str, Any] = {
        "rows": T, "columns": X.shape[1], "update_rate": len(trace.updates) / T,
        "us_per_trial": {k: v / T * 1e6 for k, v in times.items()}, "ratios": ratios}
    if case.dual:
        row["peak_mib"] = {engine: peak_mib(partial(plan.run, engine, X, y))
                           for engine in ("auto", *plan.engines)}
    return row


def run_all(size: float = 1.0, repeat: int = 3, only: str | None = None,
            out: Any = sys.stdout, min_seconds: float = MIN_SECONDS) -> dict[str, Any]:
    """Every registered family's cases (or those whose name contains one of the
    comma-separated texts of ``only``), each printed as it finishes."""
    results: dict[str, Any] = {}
    for family, case in cases(only):
        X, y = case.data(size)
        row = measure(family, case, X, y, repeat, min_seconds)
        results[case.label] = row
        if out is not None:
            print(format_row(case.label, row), file=out, flush=True)
    return results


# -- threads ----------------------------------------------------------------------------------
def limit_threads(threads: int) -> tuple[AbstractContextManager[Any], str]:
    """Every BLAS library loaded (numpy's, scipy's; loaded here first) held to ``threads``
    threads for the run, and a line saying what was set."""
    import scipy.linalg  # noqa: F401  (loads scipy's BLAS, so that the limit reaches it)
    try:
        import sklearn.linear_model  # noqa: F401  (its OpenMP runtime, likewise)
    except ImportError:
        pass
    try:
        from threadpoolctl import (  # type: ignore[import-untyped]
            threadpool_info,
            threadpool_limits,
        )
    except ImportError:
        return nullcontext(), "threads: not set (threadpoolctl is not installed)"
    limits = threadpool_limits(limits=threads)
    libs = ", ".join(f"{i['internal_api']} {i['num_threads']} ({i['filepath'].split('/')[-1]})"
                     for i in threadpool_info())
    return limits, f"threads: {threads} per library (threadpoolctl): {libs}"


COLUMNS = ("fast", "numpy", "floor", "sklearn", "np loop", "numba loop", "primal",
           "primal np loop")
RATIOS = ("floor", "sklearn", "np loop", "numba loop", "primal", "primal np loop")


def header() -> str:
    return (f"{'case':<30}{'rows':>7}{'cols':>6}{'upd':>7} | "
            + "".join(f"{c[:9]:>10}" for c in COLUMNS)
            + " | fast/" + "".join(f"{r[:8]:>9}" for r in RATIOS) + " | peak MiB")


def format_row(key: str, row: dict[str, Any]) -> str:
    us, r = row["us_per_trial"], row["ratios"]

    def cell(value: float | None, width: int, digits: int) -> str:
        return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"
    peak = row.get("peak_mib")
    memory = " / ".join(f"{v:.1f}" for v in peak.values()) if peak else "-"
    return (f"{key:<30}{row['rows']:>7}{row.get('columns', 0):>6}{row['update_rate']:>7.2%} | "
            + "".join(cell(us.get(c), 10, 3) for c in COLUMNS)
            + " |      " + "".join(cell(r.get(f"fast/{c}"), 9, 3) for c in RATIOS)
            + f" | {memory}")


def legend(results: dict[str, Any]) -> list[str]:
    """What the table's floor and peak columns are, for the cases run."""
    lines = []
    if any("fast/floor" in row["ratios"] for row in results.values()):
        lines.append(
            "floor: X @ w pass (perceptron, pnorm, romma/pumma primal; pumma p > 2: plus "
            "its updates' Newton solves by the compiled solver alone); BLAS calls of one "
            "update x mistakes (ho primal/implicit, sop primal: fast/floor is per mistake); "
            "X @ w pass + row p-norms + one correction's calls x corrections (alma primal); "
            "T x |S| kernel block (every dual; SOP, HO: plus the packed BLAS per mistake)")
    floorless = [key for key, row in results.items() if "fast/floor" not in row["ratios"]]
    if floorless:
        lines.append(f"floor -: no floor declared ({'; '.join(floorless)}): its floor and "
                     f"fast/floor columns are absent")
    if any("peak_mib" in row for row in results.values()):
        lines.append(f"peak MiB: tracemalloc peak of one run, engine auto / numpy; kernel "
                     f"cache cap KERNEL_CACHE_BYTES = {KERNEL_CACHE_BYTES / 2**20:.0f} MiB")
    return lines


def compare(run: dict[str, Any], baseline: dict[str, Any], margin: float
            ) -> tuple[list[str], list[str]]:
    """(failures, notes): a ratio worse than the baseline's by more than ``margin``."""
    failures, notes = [], []
    for key in sorted(set(run) | set(baseline)):
        if key not in run or key not in baseline:
            notes.append(f"{key}: only in the {'run' if key in run else 'baseline'}")
            continue
        for ratio, value in run[key]["ratios"].items():
            base = baseline[key]["ratios"].get(ratio)
            if base is None:
                notes.append(f"{key}: {ratio} not in the baseline")
            elif value > margin * base:
                failures.append(f"{key}: {ratio} {value:.3f} > {margin} x baseline {base:.3f}")
    return failures, notes


# -- the exact engines -------------------------------------------------------------------------
#: Epochs of the exact engines' runs (``--exact``): raw Wdbc, raw digits 3-against-the-rest.
EXACT_WDBC_EPOCHS = 10
EXACT_DIGITS_EPOCHS = 3
#: Every path runs once on this many rows before it is timed.
WARM_UP_ROWS = 20


def exact_data(size: float = 1.0) -> list[tuple[str, Any, int]]:
    """The exact engines' data sets: (name, Dataset, epochs); ``size``: the fraction of
    their rows (the first ones)."""
    def rows(total: int) -> int | None:
        return None if size >= 1 else max(WARM_UP_ROWS, int(total * size))
    return [("wdbc raw", datasets.wdbc(rows=rows(569)), EXACT_WDBC_EPOCHS),
            ("digits 3/rest raw", datasets.digits(3, rows=rows(1797), normalized=False),
             EXACT_DIGITS_EPOCHS)]


def _prefix(trace: Any, trials: int) -> list[list[int]]:
    """The mistakes and updates of ``trace`` before trial ``trials`` (a run of more epochs
    begins with them; its fragile trials may not: the stated rule's bound grows with the
    number of trials)."""
    return [[t for t in trial_list if t < trials] for trial_list in (trace.mistakes,
                                                                     trace.updates)]


def exact_rows(reference_epochs: int = 1, only: str | None = None, size: float = 1.0,
               out: Any = sys.stdout) -> dict[str, Any]:
    """The ``--exact`` table: one row per (family, data set), printed as measured."""
    results: dict[str, Any] = {}
    print(f"{'family':<18}{'data':<19}{'trials':>7}{'ref t/s':>10}{'exact t/s':>11}"
          f"{'fast t/s':>11}{'ref/exact':>10}{'exact/fast':>11}", file=out, flush=True)
    for family in registry.ALGORITHMS.values():
        if only and not any(w.strip() in family.name for w in only.split(",")):
            continue
        for name, data, epochs in exact_data(size):
            if family.exact is None:
                print(f"{family.name:<18}{name:<19} no exact engine", file=out, flush=True)
                continue
            row = _exact_row(family, data, epochs, min(reference_epochs, epochs))
            results[f"{family.name} {name}"] = row
            fast = (f"{row['fast']:>11.0f}", f"{row['fast'] / row['exact']:>10.1f}x") \
                if row["fast"] else (f"{'-':>11}", f"{'-':>11}")
            print(f"{family.name:<18}{name:<19}{row['trials']:>7}{row['reference']:>10.0f}"
                  f"{row['exact']:>11.0f}{fast[0]}{row['exact'] / row['reference']:>9.0f}x"
                  f"{fast[1]}{row['fast_note']}", file=out, flush=True)
    return results


def _exact_row(family: Family, data: Any, epochs: int, reference_epochs: int
               ) -> dict[str, Any]:
    """Trials per second of the reference (``reference_epochs``), the exact engine and the
    fast form (``epochs``; 0 where its float64 state leaves the range: ``fast_note`` says
    where); the engine checked against both."""
    X, y = data.X, data.y
    T = len(y)

    def timed(impl: str, e: int) -> tuple[Any, float]:
        registry.run(family.name, X[:WARM_UP_ROWS], y[:WARM_UP_ROWS], impl=impl)  # numba's
        start = time.perf_counter()                          # cache, FLINT's first calls
        trace = registry.run(family.name, X, y, impl=impl, epochs=e)
        return trace, time.perf_counter() - start

    reference, ref_s = timed("reference", reference_epochs)
    exact, exact_s = timed("exact", epochs)
    if _prefix(exact, T * reference_epochs) != _prefix(reference, T * reference_epochs):
        raise Disagreement(f"{family.name}: the exact engine's trace is not the reference's "
                           f"over the first {reference_epochs} epoch(s)")
    row = {"trials": T * epochs, "reference": T * reference_epochs / ref_s,
           "exact": T * epochs / exact_s, "fast": 0.0, "fast_note": "",
           "reference_epochs": reference_epochs, "epochs": epochs}
    try:
        fast, fast_s = timed("fast", epochs)
    except FloatRangeError as stop:
        row["fast_note"] = f"  fast form: float64 overflow at trial {stop.trial}"
        return row
    verdict = judge_run(family.name, X, y, fast, epochs=epochs, expected=exact)
    if not verdict.ok:
        raise Disagreement(f"{family.name}: the fast form against the exact engine: "
                           f"{verdict.describe()}")
    row["fast"] = T * epochs / fast_s
    return row


def _parser() -> OneLineParser:
    parser = OneLineParser(prog="python -m perceptron_oracle.benchmarks",
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=1.0,
                        help="fraction of the full row counts (default 1)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="best of this many runs at least")
    parser.add_argument("--min-seconds", type=float, default=MIN_SECONDS,
                        help="call a path until its calls add up to this many seconds (at "
                             f"most {MAX_CALLS} calls; default {MIN_SECONDS})")
    parser.add_argument("--only", help="only the cases whose name contains one of these "
                        "comma-separated texts")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads per library during the run (default 1)")
    parser.add_argument("--json", help="write the results (times and ratios) to this file")
    parser.add_argument("--compare", metavar="BASELINE",
                        help="fail when a ratio is worse than this baseline's by --margin")
    parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                        help=f"allowed worsening factor (default {DEFAULT_MARGIN})")
    parser.add_argument("--exact", action="store_true",
                        help="the exact engines' table instead: reference, exact engine and "
                             "fast form on raw Wdbc and digits (--only names families)")
    parser.add_argument("--reference-epochs", type=int, default=1,
                        help="--exact: epochs the readable reference runs (default 1)")
    return parser


@one_line("python -m perceptron_oracle.benchmarks")
def main(argv: list[str] | None = None) -> int:
    try:  # a usage error is one line, as the command line's are
        args = _parser().parse_args(argv)
    except OracleInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if (args.size <= 0 or args.repeat < 1 or args.margin < 1 or args.threads < 1
            or not 0 <= args.min_seconds < math.inf):
        print("error: --size must be > 0, --repeat >= 1, --margin >= 1, --threads >= 1, "
              "--min-seconds a finite number >= 0", file=sys.stderr)
        return 2
    if args.exact:
        if args.reference_epochs < 1:
            print("error: --reference-epochs must be at least 1", file=sys.stderr)
            return 2
        start = time.perf_counter()
        try:
            results = exact_rows(args.reference_epochs, args.only, args.size)
        except Disagreement as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"total {time.perf_counter() - start:.0f} s")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump({"exact": results}, handle, indent=1)
        return 0
    if args.only and not cases(args.only):
        print(f"error: --only {args.only!r} names no case", file=sys.stderr)
        return 2
    baseline = None
    if args.compare:
        try:
            with open(args.compare, encoding="utf-8") as handle:
                baseline = json.load(handle)["results"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"error: {args.compare}: not a benchmark baseline ({exc})", file=sys.stderr)
            return 2
    limits, threads = limit_threads(args.threads)
    print(f"size {args.size}, best of {args.repeat} or more calls (short calls: until "
          f"{args.min_seconds} s); {threads}", flush=True)
    print(header(), flush=True)
    start = time.perf_counter()
    with limits:
        try:
            results = run_all(args.size, args.repeat, args.only, out=sys.stdout,
                              min_seconds=args.min_seconds)
        except Disagreement as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    for line in legend(results):
        print(line)
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"size": args.size, "repeat": args.repeat,
                       "min_seconds": args.min_seconds, "threads": args.threads,
                       "results": results}, handle, indent=1)
    if baseline is not None:
        failures, notes = compare(results, baseline, args.margin)
        for line in notes:
            print(f"note: {line}")
        for line in failures:
            print(f"WORSE: {line}")
        print(f"{len(failures)} ratio(s) worse than the baseline by more than {args.margin}x")
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
