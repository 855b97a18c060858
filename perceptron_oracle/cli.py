"""The command line (CONTRACT.md): ``perceptron-oracle run ALGORITHM --data FILE ...``.

Bad input gets one line on stderr naming the problem and exit status 2, never a traceback.

Each command imports what it runs inside its function, the one place in the package that
does so for a reason other than an optional extra: ``--help``, ``--version`` and a usage
error answer in about 0.1 s, where importing every command's modules takes 1.5-2 s (the
registry alone: every family's declaration, hypothesis, scipy).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import atomic, budget, kernels
from .errors import OracleInputError
from .interrupts import one_line
from .numbers import to_fraction
from .params import parse_assignment
from .usage import OneLineParser

#: The options of ``verify --fuzz`` alone.
_FUZZ_OPTIONS = ("fuzz_examples", "fuzz_seed", "fuzz_out")


def _build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="perceptron-oracle", description="Exact reference and fast "
                           "forms of perceptron-family learners.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = commands.add_parser("run", help="run one algorithm on a data file")
    run.add_argument("algorithm")
    run.add_argument("--data", required=True,
                     help="a .npz (X, y), .csv (label last) or svmlight file; or "
                          "builtin:NAME for a data set shipped with the package (builtin:list "
                          "describes them)")
    run.add_argument("--impl", choices=("reference", "exact", "fast"), default="reference",
                     help="the readable exact reference, the exact engine (the same trace, "
                          "faster), or a fast float64 form")
    run.add_argument("--form", default=None)
    run.add_argument("--kernel", default="linear")
    run.add_argument("--epochs", type=int, default=1)
    run.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    run.add_argument("--normalize", default=None, metavar="P|none",
                     help="scale each instance to unit P-norm first (float64); by default "
                          "only for higher_order and pnorm_perceptron, to the run's p-norm")
    run.add_argument("--add-bias", action="store_true",
                     help="append a constant 1 coordinate first (float64)")
    run.add_argument("--multiclass", choices=("ovr",), default=None,
                     help="one-vs-rest (Khardon & Wachman, section 2.7): the labels are "
                          "classes (any integers), one binary learner per class")
    run.add_argument("--out", default=None, metavar="TRACE.json",
                     help="write the trace (atomically: the old file or the new one, whole)")
    run.add_argument("--max-seconds", type=_positive_seconds,
                     default=budget.DEFAULT_MAX_SECONDS, metavar="S",
                     help="refuse an exact-reference run whose estimated time exceeds S "
                          f"seconds (default {budget.DEFAULT_MAX_SECONDS:g}; inf: no "
                          "limit; the estimate is an upper bound, perceptron_oracle.budget)")

    check = commands.add_parser("check", help="every fast form against every golden case "
                                               "(the main job)")
    check.add_argument("--golden", default=None, metavar="DIR",
                       help="the golden files (default: conformance_data/)")
    check.add_argument("--algorithm", action="append", default=None,
                       help="only the cases of this algorithm (repeatable)")

    golden = commands.add_parser("golden", help="regenerate the golden files from the "
                                                 "reference")
    golden.add_argument("--check", action="store_true",
                        help="regenerate into a temporary directory and fail if any byte "
                             "differs")
    golden.add_argument("--golden", default=None, metavar="DIR")

    verify = commands.add_parser("verify", help="check another implementation against the "
                                                 "golden cases")
    source = verify.add_mutually_exclusive_group(required=True)
    source.add_argument("--results", metavar="DIR",
                        help="trace files DIR/<file>-<id>.json written by the implementation "
                             "(with --data: the trace FILE it wrote on that data)")
    source.add_argument("--impl", metavar="MODULE:CALLABLE",
                        help="a Python implementation, called once per case")
    verify.add_argument("--golden", default=None, metavar="DIR")
    verify.add_argument("--data", default=None, metavar="FILE",
                        help="instead of the golden cases: the implementation on this data "
                             "set (CSV, svmlight, npz, builtin:NAME), every trial judged "
                             "against the exact run; give one --algorithm")
    verify.add_argument("--epochs", type=int, default=None, metavar="N",
                        help="--data: passes over the data (default 1)")
    verify.add_argument("--param", action="append", default=None, metavar="NAME=VALUE",
                        help="--data: a parameter of the algorithm (repeatable)")
    verify.add_argument("--algorithm", action="append", default=None,
                        help="only the cases of this algorithm (repeatable)")
    verify.add_argument("--kernel", action="append", default=None, metavar="NAME",
                        help="only the cases with this kernel (its name: linear, poly, rbf "
                             "or another registered kernel; repeatable)")
    verify.add_argument("--quiet", action="store_true", help="print failures only")
    for name, text in (("peers", "scikit-learn's and river's Perceptrons through the oracle "
                                 "(needs the peers extra)"),
                       ("fragility", "the share of fragile trials on real data and on the "
                                     "golden set, per algorithm"),
                       ("experiment", "rerun a paper's experiment: table, CSV and figure "
                                      "(experiment --list)")):
        sub = commands.add_parser(name, help=text, add_help=False)
        sub.add_argument("rest", nargs=argparse.REMAINDER)
    verify.add_argument("--strict", action="store_true",
                        help="a case that is not applicable, or a final-state key that is not "
                             "reported, is a failure")
    verify.add_argument("--report", default=None, metavar="FILE.json",
                        help="write the verdicts as JSON, one record per case")
    verify.add_argument("--fuzz", action="store_true",
                        help="with --impl, instead of the golden cases: draw data sets until "
                             "the implementation and the exact reference disagree, shrink the "
                             "first disagreement and write it as a replayable case")
    verify.add_argument("--fuzz-examples", type=int, default=None, metavar="N",
                        help="--fuzz: draws per algorithm (default 200)")
    verify.add_argument("--fuzz-seed", type=int, default=None, metavar="S",
                        help="--fuzz: hypothesis' seed (default 0)")
    verify.add_argument("--fuzz-out", default=None, metavar="DIR",
                        help="--fuzz: the replay directory (default: a new temporary one)")
    verify.add_argument("--case-timeout", type=float, default=None, metavar="SECONDS",
                        help="--impl: seconds one call of the implementation may take, a "
                             "golden case or a fuzz draw (default 30); past it the call "
                             "fails and its worker process is replaced")
    verify.add_argument("--memory-limit", type=int, default=None, metavar="MIB",
                        help="--impl: the data segment the implementation's worker process "
                             "may use, in MiB (default 4096)")
    verify.add_argument("--show-output", action="store_true",
                        help="--impl: show what the implementation wrote to stdout and "
                             "stderr, under each case's line (--report records it anyway)")
    return parser


def _positive_seconds(text: str) -> float:
    """``--max-seconds``: a positive number of seconds, or inf."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds or inf, "
                                         f"got {text!r}")
    return value


def _load(spec: str, classes: bool = False) -> Any:
    from . import data, datasets

    if spec.startswith("builtin:"):
        return datasets.builtin(spec[len("builtin:"):])
    return data.load(spec, classes=classes)


def _run(args: argparse.Namespace) -> int:
    from . import preprocessing
    from .registry import get, run

    if args.data == "builtin:list":
        from .datasets import builtin_list

        print(builtin_list())
        return 0
    if args.epochs < 1:
        raise OracleInputError(f"--epochs must be at least 1, got {args.epochs}")
    dataset = _load(args.data, classes=args.multiclass is not None)
    X = dataset.X
    params: dict[str, Any] = dict(parse_assignment(text) for text in args.param)
    norm = args.normalize
    # A family declared normalized_by_default (HO and the p-norm Perceptron: their paper
    # defines them on normalised instances) is normalised to the run's p-norm unless told
    # --normalize none; the library call never normalises.
    if norm is None and get(args.algorithm).normalized_by_default:
        norm = str(params.get("p", 2))
    steps = []
    if norm is not None and norm != "none":
        try:
            order = float("inf") if norm == "inf" else float(to_fraction(norm))
            X = preprocessing.normalize(X, order)
        except (ValueError, ZeroDivisionError, OracleInputError):
            raise OracleInputError(f"--normalize takes a number p >= 1 or none, "
                                   f"got {norm!r}") from None
        steps.append(f"normalized to unit {norm}-norm")
    if args.add_bias:
        X = preprocessing.add_bias(X)
        steps.append("bias coordinate added")
    if args.impl in ("reference", "exact") and hasattr(X, "toarray"):
        X = X.toarray()
    prepared = f" ({', '.join(steps)})" if steps else ""
    if args.multiclass == "ovr":
        return _run_one_vs_rest(args, dataset, X, params, prepared)
    start = time.perf_counter()
    trace = run(args.algorithm, X, dataset.y, impl=args.impl, form=args.form,
                epochs=args.epochs, kernel=args.kernel, max_seconds=args.max_seconds, **params)
    seconds = time.perf_counter() - start
    total = trace.n_examples * trace.epochs
    fragile = f", {len(trace.fragile)} fragile" if trace.fragile else ""
    form = "exact engine" if args.impl == "exact" else trace.form
    print(f"{trace.algorithm} {form} {trace.kernel} on {dataset.source}{prepared}: "
          f"{trace.n_examples} examples x {trace.epochs} epochs, "
          f"{len(trace.mistakes)} mistakes, {len(trace.updates)} updates in {total} trials"
          f"{fragile}, {seconds:.3f} s")
    if args.out:
        atomic.write_text(args.out, trace.to_json() + "\n")
    return 0


def _run_one_vs_rest(args: argparse.Namespace, dataset: Any, X: Any, params: dict[str, Any],
                     prepared: str) -> int:
    """``run --multiclass ovr``: one binary learner per class, each trial for trial the
    binary run on (X, +1 for its class, -1 elsewhere): the fast forms share each block's
    product (``multiclass.one_vs_rest``), the reference runs K times.  ``--out`` writes
    ``{"format": "perceptron-oracle/one-vs-rest@1", "classes": [...], "traces": [...]}``."""
    import json

    from .fast.multiclass import relabel
    from .multiclass import one_vs_rest
    from .registry import get, run

    start = time.perf_counter()
    if args.impl == "fast":
        classes, traces = one_vs_rest(args.algorithm, X, dataset.y, form=args.form,
                                      kernel=args.kernel, epochs=args.epochs, **params)
    else:
        classes, Y = relabel(dataset.y)
        if Y.shape[1]:  # K runs of the same size: refused before the first if K of them are
            family = get(args.algorithm)
            if family.cost is not None:
                budget.check(args.algorithm, family.cost, X, epochs=args.epochs,
                             kernel=args.kernel, max_seconds=args.max_seconds,
                             runs=Y.shape[1], **family.params.resolve(params))
        traces = [run(args.algorithm, X, Y[:, k], epochs=args.epochs, kernel=args.kernel,
                      **params) for k in range(Y.shape[1])]
    seconds = time.perf_counter() - start
    first = traces[0]
    fragile = sum(len(t.fragile or []) for t in traces)
    print(f"{first.algorithm} {first.form} {first.kernel} one-vs-rest on {dataset.source}"
          f"{prepared}: {len(classes)} classes, {first.n_examples} examples x "
          f"{first.epochs} epochs, mistakes per class "
          f"{[len(t.mistakes) for t in traces]}, {sum(len(t.updates) for t in traces)} "
          f"updates in all{f', {fragile} fragile' if fragile else ''}, {seconds:.3f} s")
    if args.out:
        record = {"format": "perceptron-oracle/one-vs-rest@1", "classes": classes.tolist(),
                  "traces": [t.to_dict() for t in traces]}
        atomic.write_text(args.out, json.dumps(record) + "\n")
    return 0


def _golden_dir(args: argparse.Namespace) -> Any:
    import pathlib

    from . import golden

    return pathlib.Path(args.golden) if args.golden else golden.default_directory()


def _check(args: argparse.Namespace) -> int:
    """One row per (algorithm, form, group): cases, passed, excused at a fragile trial, time.
    The forms are every registered fast form that takes the case's kernel and parameters
    (``verify.forms_for``, from the registry's declarations)."""
    from . import golden, verify
    from .registry import get

    cases = golden.load(_golden_dir(args))
    if args.algorithm:
        for name in args.algorithm:
            get(name)  # an unknown name is an input error, not "nothing to check"
        cases = [c for c in cases if c.algorithm in args.algorithm]
    jobs = [(case, form) for case in cases for form in verify.forms_for(case)]
    rows: dict[tuple[str, str, str, int, str], list[verify.CaseResult]] = {}
    progress = verify.progress_bar()
    failures = []
    for i, (case, form) in enumerate(jobs):
        result = verify.verify([case], functools.partial(verify.run_fast_form, form=form),
                               partial=False)[0]
        key = (case.algorithm, form, case.file, case.group, case.group_comment)
        rows.setdefault(key, []).append(result)
        if not result.ok:
            failures.append(f"FAIL {case.algorithm}:{form}:{case.name} ({case.comment}): "
                            f"{result.message}")
        if progress:
            progress(i + 1, len(jobs))
    width = max([10, *(len(form) + 2 for _, form in jobs)])   # a registered form's name
    print(f"{'algorithm':<18}{'form':<{width}}{'group':<22}{'cases':>6}{'pass':>6}"
          f"{'fragile':>8}{'seconds':>9}  comment")
    for (algorithm, form, file, group, comment), results in sorted(rows.items()):
        passed = sum(r.ok for r in results)
        excused = sum(r.excused for r in results)
        short = comment if len(comment) <= 48 else comment[:45] + "..."
        print(f"{algorithm:<18}{form:<{width}}{f'{file}#{group}':<22}{len(results):>6}"
              f"{passed:>6}{excused:>8}{sum(r.seconds for r in results):>9.3f}  {short}")
    for line in failures:
        print(line)
    total = len(jobs)
    print(f"{total - len(failures)} passed, {len(failures)} failed")
    if not jobs:
        print("nothing was checked: no golden case with a registered fast form taking it",
              file=sys.stderr)
        return 1
    return 1 if failures else 0


def _golden(args: argparse.Namespace) -> int:
    from . import golden

    directory = _golden_dir(args)
    start = time.perf_counter()
    if args.check:
        if not (directory / "manifest.json").is_file():
            raise OracleInputError(f"--golden {directory}: no golden files there (no "
                                   "manifest.json) to check")
        differ = golden.check_generated(directory, log=print)
        seconds = time.perf_counter() - start
        if differ:
            print(f"golden files differ from a fresh generation: {', '.join(differ)} "
                  f"({seconds:.1f} s)")
            return 1
        print(f"golden files are exactly what the reference generates ({seconds:.1f} s)")
        return 0
    golden.generate(directory, log=print)
    print(f"wrote {directory} in {time.perf_counter() - start:.1f} s")
    return 0


def _verify(args: argparse.Namespace) -> int:
    """PASS, FAIL or N/A per case, then one summary row per algorithm (CONTRACT.md, partial
    conformance).  Exit 1 on any failure, and when no case at all was checked."""
    import hashlib
    import json
    import pathlib

    from . import golden, verify

    if args.data is not None:
        return _verify_data(args)
    if args.fuzz:
        return _fuzz(args)
    for option in ("epochs", "param"):
        if getattr(args, option) is not None:
            raise OracleInputError(f"--{option} applies with --data only")
    for option in _FUZZ_OPTIONS:
        if getattr(args, option) is not None:
            raise OracleInputError(f"--{option.replace('_', '-')} applies with --fuzz only")
    if args.results:
        for option in ("case_timeout", "memory_limit", "show_output"):
            if getattr(args, option) not in (None, False):
                raise OracleInputError(f"--{option.replace('_', '-')} applies with --impl "
                                       "only")
    directory = _golden_dir(args)
    cases = golden.load(directory)
    if args.algorithm:
        from .registry import get

        for name in args.algorithm:
            get(name)  # an unknown name is an input error, not "nothing to check"
        cases = [c for c in cases if c.algorithm in args.algorithm]
    if args.kernel:
        unknown = sorted(set(args.kernel) - set(kernels.KERNELS))
        if unknown:
            raise OracleInputError(f"--kernel {', '.join(unknown)}: no such kernel (known: "
                                   f"{', '.join(kernels.KERNELS)})")
        cases = [c for c in cases if c.kernel.partition(":")[0] in args.kernel]
    box = None
    if args.impl:
        box = _sandbox(args)
        produce = verify.sandboxed(box, cases)
    else:
        results_dir = pathlib.Path(args.results)
        if not results_dir.is_dir():
            raise OracleInputError(f"--results {results_dir}: not a directory")
        produce = lambda c: verify.read_result_file(results_dir, c)  # noqa: E731
    try:
        results = verify.verify(cases, produce, verify.progress_bar(),
                                output=None if box is None else lambda: box.output)
    finally:
        if box is not None:
            box.close()
    if args.strict:
        for r in results:
            if r.status == verify.NOT_APPLICABLE:
                r.status, r.message = verify.FAIL, f"not applicable (--strict): {r.message}"
            elif r.ok and r.not_reported:
                r.status = verify.FAIL
                r.message = f"final state not reported (--strict): {', '.join(r.not_reported)}"
    labels = {verify.PASS: "PASS", verify.FAIL: "FAIL", verify.NOT_APPLICABLE: "N/A "}
    for r in results:
        if r.status == verify.FAIL or not args.quiet:
            print(f"{labels[r.status]} {r.case.name} [{r.case.algorithm}] {r.case.comment}: "
                  f"{_clip_line(r.message)}")
            if args.impl and args.show_output:
                _show_output(r.output)
    wrote = sum(1 for r in results if any(r.output))
    if wrote and not args.show_output:
        print(f"the implementation wrote to stdout or stderr in {wrote} case(s): "
              "--show-output shows it, --report records it", file=sys.stderr)
    summaries = verify.summarize(results)
    print(f"\n{'algorithm':<18}{'passed':>7}{'failed':>7}{'n/a':>6}  not applicable (cases), "
          "final-state keys not reported (cases)")
    for algorithm, s in summaries.items():
        reasons = "; ".join(f"{reason} ({n})" for reason, n in s.not_applicable.most_common())
        keys = ", ".join(f"{key} ({n})" for key, n in s.not_reported.most_common())
        print(f"{algorithm:<18}{s.passed:>7}{s.failed:>7}{sum(s.not_applicable.values()):>6}  "
              f"{reasons or '-'}" + (f"\n{'':<40}keys not reported: {keys}" if keys else ""))
    missing = [r for r in results if r.message == verify.NO_TRACE_FILE]
    if args.results and missing:
        example = verify.result_file(pathlib.Path(args.results), missing[0].case)
        print(f"{len(missing)} case(s) had no trace file: case FILE.json:ID is read from "
              f"DIR/FILE-ID.json (for {missing[0].case.name}: {example})")
    digest = hashlib.sha256((directory / "manifest.json").read_bytes()).hexdigest()[:16]
    passed = sum(s.passed for s in summaries.values())
    failed = sum(s.failed for s in summaries.values())
    not_applicable = len(results) - passed - failed
    print(f"golden set {directory} (manifest sha256 {digest}...): {passed} passed, "
          f"{failed} failed, {not_applicable} not applicable")
    if args.report:
        atomic.write_text(args.report, json.dumps(
            {"format": "perceptron-oracle/verify-report@1", "golden_manifest_sha256": digest,
             "strict": args.strict, "cases": [r.record() for r in results]}, indent=1) + "\n")
    if failed:
        return 1
    if passed == 0:
        print("nothing was checked: every selected case is not applicable", file=sys.stderr)
        return 1
    return 0


def _verify_data(args: argparse.Namespace) -> int:
    """``verify --data FILE``: the implementation (--impl, or the trace file --results) on
    the user's data, every trial judged against the exact run (``verify.verify_on``); one
    verdict line, exit 1 on a failure or when nothing was checked."""
    import json

    from . import trace as trace_files
    from . import verify

    for option in ("golden", "strict", "fuzz", "show_output") + _FUZZ_OPTIONS:
        if getattr(args, option) not in (None, False):
            raise OracleInputError(f"--{option.replace('_', '-')} does not apply with --data")
    if not args.algorithm or len(args.algorithm) != 1:
        raise OracleInputError("--data needs one --algorithm")
    if args.kernel is not None and len(args.kernel) != 1:
        raise OracleInputError("--data takes one --kernel (a kernel spec, say "
                               "poly:degree=2)")
    epochs = 1 if args.epochs is None else args.epochs
    if epochs < 1:
        raise OracleInputError(f"--epochs must be at least 1, got {epochs}")
    params = dict(parse_assignment(text) for text in args.param or [])
    dataset = _load(args.data)
    if args.results is not None:
        impl: Any = trace_files.load_trace_file(args.results)
    else:
        impl = _sandbox(args, data_run=True)
    try:
        verdict = verify.verify_on(dataset, impl, algorithm=args.algorithm[0], epochs=epochs,
                                   kernel=(args.kernel or ["linear"])[0], params=params,
                                   progress=verify.progress_bar())
    finally:
        if args.impl:
            impl.close()
    if args.report:
        atomic.write_text(args.report, json.dumps(verdict.record(), indent=1) + "\n")
    print(_clip_line(verdict.describe()))
    if verdict.status == verify.NOT_APPLICABLE:
        print("nothing was checked: the implementation declined the run", file=sys.stderr)
    return 0 if verdict.ok else 1


def _sandbox(args: argparse.Namespace, data_run: bool = False) -> Any:
    """The worker process of ``verify --impl`` (sandbox.Sandbox), the callable imported in it:
    an import problem is one line, exit 2, before any case runs.  ``data_run``: one call on
    the user's data (``--data``), given ``sandbox.DATA_RUN_TIMEOUT`` by default."""
    from . import sandbox

    default = sandbox.DATA_RUN_TIMEOUT if data_run else sandbox.DEFAULT_CASE_TIMEOUT
    timeout = default if args.case_timeout is None else args.case_timeout
    if not 0 < timeout < 10**6:
        raise OracleInputError(f"--case-timeout must be a positive number of seconds, got "
                               f"{args.case_timeout}")
    memory = sandbox.DEFAULT_MEMORY_MB if args.memory_limit is None else args.memory_limit
    if memory < 64:
        raise OracleInputError(f"--memory-limit must be at least 64 (MiB), got {memory}")
    box = sandbox.Sandbox(args.impl, timeout=timeout, memory_mb=memory)
    box.start()
    return box


def _clip_line(text: str, width: int = 1000) -> str:
    """A verdict's message cut to ``width`` characters (the full one is in --report)."""
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"


def _show_output(output: tuple[str, str], lines: int = 10) -> None:
    """What the implementation wrote during one case, each line behind a "|" so that
    nothing it printed reads as the verifier's own line."""
    for name, text in zip(("stdout", "stderr"), output):
        if not text:
            continue
        rows = text.splitlines()
        more = f", the first {lines} shown" if len(rows) > lines else ""
        print(f"    {name} of the implementation ({len(rows)} line{'s' * (len(rows) != 1)}"
              f"{more}):")
        for row in rows[:lines]:
            print(f"    | {row[:200]}")


def _fuzz(args: argparse.Namespace) -> int:
    """``verify --fuzz``: perceptron_oracle.fuzz against the --impl callable, its report
    printed (a progress line per algorithm on stderr unless --quiet).  Exit 1 on a
    disagreement, and when every draw was declined (as ``verify`` when nothing was checked)."""
    from . import fuzz

    if args.results:
        raise OracleInputError("--fuzz calls the implementation on the data it draws: give "
                               "--impl MODULE:CALLABLE, not --results")
    for option in ("golden", "kernel", "strict", "report"):
        if getattr(args, option):
            raise OracleInputError(f"--{option} applies to the golden cases, not to --fuzz")
    examples = fuzz.DEFAULT_EXAMPLES if args.fuzz_examples is None else args.fuzz_examples
    if examples < 1:
        raise OracleInputError(f"--fuzz-examples must be at least 1, got {examples}")
    if args.show_output:
        raise OracleInputError("--show-output applies to the golden cases, not to --fuzz")
    if args.fuzz_out is not None:
        fuzz.check_replay_dir(args.fuzz_out)
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    with _sandbox(args) as box, fuzz.temporary_hypothesis_storage():
        report = fuzz.fuzz(box, args.algorithm, examples=examples,
                           seed=args.fuzz_seed or 0, out_dir=args.fuzz_out, log=log)
    print(report.describe(args.impl))
    if not report.ok:
        return 1
    if all(r.status == fuzz.NOT_APPLICABLE for r in report.results):
        print("nothing was checked: the implementation declined every draw", file=sys.stderr)
        return 1
    return 0


def _peers(args: argparse.Namespace) -> int:
    from . import peers

    return peers.main(args.rest)


def _fragility(args: argparse.Namespace) -> int:
    from . import fragility

    return fragility.main(args.rest)


def _experiment(args: argparse.Namespace) -> int:
    from .experiments import commands

    return commands.main(args.rest)


#: The commands that take their arguments to their own parser.
FORWARDED = {"peers": _peers, "fragility": _fragility, "experiment": _experiment}


@one_line("perceptron-oracle")
def main(argv: Sequence[str] | None = None) -> int:
    """The command line; Ctrl-C ends any command with one line and status 130, SIGTERM with
    one line and status 143, after the cleanup of ``finally`` blocks (``interrupts``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in FORWARDED:
            # argparse's REMAINDER drops a first argument that looks like an option
            # (`fragility --algorithm romma`): these commands parse their own arguments
            return FORWARDED[argv[0]](argparse.Namespace(rest=argv[1:]))
        args = _build_parser().parse_args(argv)
        commands = {"run": _run, "check": _check, "golden": _golden, "verify": _verify,
                    "peers": _peers, "fragility": _fragility, "experiment": _experiment}
        return commands[args.command](args)
    except OracleInputError as exc:
        print(f"perceptron-oracle: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print("perceptron-oracle: error: out of memory (the data, or the trials x examples "
              "of the run, beyond this machine)", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`verify ... | head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit would fail again
        return 1
    except OSError as exc:
        print(f"perceptron-oracle: error: {exc.filename or ''}: {exc.strerror}",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
