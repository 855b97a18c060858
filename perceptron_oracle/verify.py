"""Running implementations against the golden cases, and saying where they diverge.

Three sources of traces, one comparison (``compare.judge_run`` with the case's stated
tolerances, following the implementation's branch at each fragile trial where it decides the
other way, so that every trial is judged):

- the project's own fast forms (``perceptron-oracle check``, the main job);
- a Python callable named ``MODULE:CALLABLE`` (``verify --impl``, in a worker process:
  ``sandbox.Sandbox``), called as
  ``f(algorithm, X, y, *, epochs, kernel, params) -> Trace | dict`` with X a float64 array,
  y an int64 array in {-1, +1}, kernel the canonical spec string and params the group's
  parameters (Fractions, ints, bools, None, names), returning a trace (or its JSON dict),
  which is validated as a trace file is;
- trace files written by any program (``verify --results DIR``): ``DIR/<file>-<id>.json``
  for case ``id`` of golden file ``<file>.json``, in the ``perceptron-oracle/trace@1`` format.

A ``--impl`` callable runs in a worker process (perceptron_oracle/sandbox.py: a time limit
per case, a memory limit, its exits, signals and output kept from the verifier):
:func:`sandboxed` is ``verify``'s ``produce`` for it, sending each next case ahead.  A
failure of the worker is the case's FAIL (``sandbox.ImplementationFailed``), with its
message.

Partial conformance (CONTRACT.md): an outside implementation may implement part of an
algorithm.  A callable raises ``NotImplementedError(reason)`` for a case it does not support,
and a missing trace file means the case was not run: either way the case is *not
applicable*, never a pass.  Mistakes and updates are always compared; the final state on the
keys the implementation reports, and the expected keys it does not report are listed.
"""

from __future__ import annotations

import functools
import os
import pathlib
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import datasets
from . import trace as trace_files
from .compare import Comparison, judge_run
from .data import Dataset, validate
from .data import load as load_data
from .errors import DataError, TraceFormatError
from .golden import Case
from .kernels import parse_kernel
from .numbers import brief
from .properties.checks import CheckResult, run_check
from .reference.common import check_epochs, reporting_progress
from .registry import ALGORITHMS, get
from .sandbox import (
    ImplementationFailed,
    Sandbox,
    describe_exception,
    trace_document,
)
from .sandbox import load_callable as load_callable  # verify.load_callable, as before
from .trace import Trace

External = Callable[..., Any]

PASS, FAIL, NOT_APPLICABLE = "pass", "fail", "not_applicable"


@dataclass
class CaseResult:
    """The verdict on one golden case: ``status`` is PASS, FAIL or NOT_APPLICABLE;
    ``message`` says why (for a failure, the first diverging trial; for a case that does not
    apply, the implementation's reason)."""

    case: Case
    status: str
    message: str
    excused: bool = False                 # passed up to a fragile trial, not beyond
    first_divergence: int | None = None
    branches: list[int] = field(default_factory=list)  # fragile trials whose branch it took
    not_reported: list[str] = field(default_factory=list)
    seconds: float = 0.0
    output: tuple[str, str] = ("", "")    # what the implementation wrote: stdout, stderr

    @property
    def ok(self) -> bool:
        return self.status == PASS

    def record(self) -> dict[str, Any]:
        """One JSON record of ``verify --report``."""
        return {"case": self.case.name, "algorithm": self.case.algorithm,
                "kernel": self.case.kernel, "status": self.status, "message": self.message,
                "first_divergence": self.first_divergence, "excused": self.excused,
                "branches": self.branches,
                "not_reported": self.not_reported, "seconds": round(self.seconds, 6),
                "stdout": self.output[0], "stderr": self.output[1]}


@dataclass
class Summary:
    """The verdicts on one algorithm's cases."""

    passed: int = 0
    failed: int = 0
    not_applicable: Counter[str] = field(default_factory=Counter)   # reason -> cases
    not_reported: Counter[str] = field(default_factory=Counter)     # final-state path -> cases

    @property
    def checked(self) -> int:
        return self.passed + self.failed


def summarize(results: Iterable[CaseResult]) -> dict[str, Summary]:
    """Per algorithm, in the order the cases come."""
    out: dict[str, Summary] = {}
    for r in results:
        s = out.setdefault(r.case.algorithm, Summary())
        if r.status == PASS:
            s.passed += 1
        elif r.status == FAIL:
            s.failed += 1
        else:
            s.not_applicable[r.message] += 1
        s.not_reported.update(r.not_reported)
    return out


def judge(case: Case, actual: Any, partial: bool = True) -> CaseResult:
    """Compare one implementation's trace (a Trace or its JSON dict) with the case.  With
    ``partial`` the final state is compared on the keys the trace reports."""
    try:
        trace = actual if isinstance(actual, Trace) else Trace.from_dict(actual,
                                                                         numeric_final=True)
    except TraceFormatError as exc:
        return CaseResult(case, FAIL, f"not a valid trace: {exc}")
    result = judge_run(case.algorithm, case.X, case.y, trace, epochs=case.epochs,
                       kernel=case.kernel, params=case.params, expected=case.expected,
                       bounds=case.tolerance, partial=partial)
    if result.ok:
        return CaseResult(case, PASS, result.describe(), excused=result.excused,
                          first_divergence=result.first_divergence,
                          not_reported=result.not_reported, branches=result.branches)
    message = result.describe()
    if result.first_divergence is not None:
        message = _with_exact_score(case, result.first_divergence, message)
    return CaseResult(case, FAIL, message, first_divergence=result.first_divergence,
                      not_reported=result.not_reported, branches=result.branches)


def _with_exact_score(case: Case, trial: int, message: str) -> str:
    """Re-run the exact run with scores to say what the exact score was there."""
    if "exact score" in message:
        return message
    expected = get(case.algorithm).exact_run()(case.X, case.y, epochs=case.epochs,
                                         kernel=case.kernel, record_scores=True, **case.params)
    if not expected.scores or trial >= len(expected.scores):
        return message
    score = expected.scores[trial]
    label = int(case.y[trial % len(case.y)])
    return f"{message}; exact score {brief(score)}, label {label:+d}"


def run_fast_form(case: Case, form: str) -> Trace:
    return get(case.algorithm).implementation("fast", form)(
        case.X, case.y, epochs=case.epochs, kernel=case.kernel, **case.params)


def run_external(case: Case, impl: External) -> Any:
    """``impl`` (a callable of this process, or a :class:`~perceptron_oracle.sandbox.Sandbox`)
    on the case, its answer as a trace document (``sandbox.trace_document``: a Trace's
    fields, or the dict, checked for size first) that :func:`judge` validates as it
    validates a trace file."""
    result = impl(case.algorithm, case.X.copy(), case.y.copy(), epochs=case.epochs,
                  kernel=case.kernel, params=dict(case.params))
    if isinstance(impl, Sandbox):   # already plain data, checked in the worker
        return result
    return trace_document(result, len(case.y) * case.epochs)


def sandboxed(box: Sandbox, cases: list[Case]) -> Callable[[Case], Any]:
    """``produce`` for :func:`verify`: :func:`run_external` through ``box``, each case's
    successor sent to the worker as soon as the case's answer is in, so that the worker
    runs it while this process checks the case (each call keeps its own time limit)."""
    following = {id(a): b for a, b in zip(cases, cases[1:])}

    def request(case: Case) -> tuple[Any, ...]:
        return (case.algorithm, case.X, case.y, case.epochs, case.kernel, dict(case.params))

    def produce(case: Case) -> Any:
        successor = following.get(id(case))
        ahead = None if successor is None else (id(successor), request(successor))
        return box.call(request(case), key=id(case), ahead=ahead)
    return produce


def forms_for(case: Case) -> list[str]:
    """The fast forms of the case's algorithm that take its kernel and parameters."""
    return get(case.algorithm).forms_for(case.kernel, case.params)


def verify(cases: Iterable[Case], produce: Callable[[Case], Any],
           progress: Callable[[int, int], None] | None = None,
           partial: bool = True,
           output: Callable[[], tuple[str, str]] | None = None) -> list[CaseResult]:
    """Judge ``produce(case)`` on every case: a Trace (the project's own forms) as it is, a
    trace document (``run_external``, a trace file) validated first.
    ``NotImplementedError`` from ``produce`` makes the case not applicable (its message is
    the reason); ImplementationFailed (a sandboxed implementation that exited, was killed or
    ran out of time) fails it with its message, any other exception fails it.  ``output``
    gives what the implementation wrote during the call (``Sandbox.output``)."""
    cases = list(cases)
    results = []
    for i, case in enumerate(cases):
        start = time.perf_counter()
        try:
            actual = produce(case)
        except NotImplementedError as exc:
            result = CaseResult(case, NOT_APPLICABLE, str(exc) or "NotImplementedError")
        except TraceFormatError as exc:
            result = CaseResult(case, FAIL, f"not a valid trace: {exc}")
        except ImplementationFailed as exc:
            result = CaseResult(case, FAIL, exc.message)
        except Exception as exc:  # an outside implementation may raise anything
            result = CaseResult(case, FAIL, describe_exception(exc))
        else:
            try:
                result = judge(case, actual, partial)
            except (ValueError, TypeError, ArithmeticError) as exc:  # say it, and go on
                result = CaseResult(case, FAIL, f"cannot be compared: {type(exc).__name__}: "
                                                f"{exc}")
        result.seconds = time.perf_counter() - start
        if output is not None:
            result.output = output()
        results.append(result)
        if progress:
            progress(i + 1, len(cases))
    return results


@dataclass
class DataVerdict:
    """The verdict on one run of an implementation on the user's data (``verify_on``):
    ``status`` PASS, FAIL or NOT_APPLICABLE, ``message`` why, and the comparison behind it
    (None where the implementation gave no trace to compare)."""

    algorithm: str
    source: str
    n_examples: int
    epochs: int
    kernel: str
    params: dict[str, Any]
    status: str
    message: str
    comparison: Comparison | None = None
    seconds_exact: float = 0.0
    seconds_impl: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == PASS

    @property
    def trials(self) -> int:
        return self.n_examples * self.epochs

    def describe(self) -> str:
        """One line: the verdict, what was judged, and why."""
        run = (f"{self.algorithm} on {self.source} ({self.n_examples} examples x "
               f"{self.epochs} epoch{'s' * (self.epochs != 1)}, {self.kernel})")
        c = self.comparison
        if c is None or self.status != PASS:
            return f"{self.status.upper()} {run}: {self.message}"
        judged = (f"every one of {self.trials} trials judged" if c.judged_every_trial
                  else f"{c.first_divergence} of {self.trials} trials judged")
        return (f"PASS {run}: {judged}, {c.fragile or 0} fragile on the exact run; "
                f"{self.message}")

    def record(self) -> dict[str, Any]:
        """The JSON record of ``verify --data --report``."""
        c = self.comparison
        return {"format": "perceptron-oracle/verify-data-report@1",
                "algorithm": self.algorithm, "data": self.source,
                "n_examples": self.n_examples, "epochs": self.epochs, "kernel": self.kernel,
                "params": trace_files.encode_value(self.params), "status": self.status,
                "message": self.message, "trials": self.trials,
                "judged_every_trial": bool(c and c.judged_every_trial),
                "first_divergence": c.first_divergence if c else None,
                "fragile": c.fragile if c else None, "branches": c.branches if c else [],
                "not_reported": c.not_reported if c else [],
                "seconds_exact": round(self.seconds_exact, 6),
                "seconds_impl": round(self.seconds_impl, 6)}


def verify_on(data: Any, impl: Any, *, algorithm: str, epochs: int = 1,
              kernel: str = "linear", params: dict[str, Any] | None = None,
              partial: bool = True, progress: Callable[[int, int], None] | None = None
              ) -> DataVerdict:
    """``impl`` against the exact run of ``algorithm`` on ``data``, every trial judged.

    ``data``: a data file's path (CSV, svmlight, npz; ``builtin:NAME``), a ``Dataset`` or
    an (X, y) pair, y in {-1, +1}.  ``impl``: a callable in verify's protocol
    (``f(algorithm, X, y, *, epochs, kernel, params)``, a ``Sandbox`` too), or the trace
    (a Trace or its JSON dict) the user's own code wrote on that data.  ``params``: the
    algorithm's parameters, passed to ``impl`` with the defaults filled in, as the golden
    cases pass them.  The exact run is the family's exact engine (or its reference), reporting
    ``progress(done, total)``; at a fragile trial where ``impl`` decides the other way it
    follows ``impl``'s branch (``compare.judge_run``).  NotImplementedError from ``impl``:
    NOT_APPLICABLE; anything else it raises, or a trace that is not one: FAIL."""
    family = get(algorithm)
    dataset = _dataset(data)
    spec = parse_kernel(kernel).spec
    resolved = family.params.resolve(dict(params or {}))
    verdict = functools.partial(DataVerdict, algorithm, dataset.source, len(dataset.y),
                                check_epochs(epochs), spec, resolved)
    X = dataset.X.toarray() if hasattr(dataset.X, "toarray") else dataset.X
    start = time.perf_counter()
    with reporting_progress(progress):
        expected = get(algorithm).exact_run()(X, dataset.y, epochs=epochs, kernel=spec,
                                              **resolved)
    seconds_exact = time.perf_counter() - start
    start = time.perf_counter()
    try:
        answer = impl if isinstance(impl, (Trace, dict)) else impl(
            algorithm, dataset.X.copy(), dataset.y.copy(), epochs=epochs, kernel=spec,
            params=dict(resolved))
        document = trace_document(answer, len(dataset.y) * epochs)
        actual = answer if isinstance(answer, Trace) else Trace.from_dict(
            document, numeric_final=True)
    except NotImplementedError as exc:
        return verdict(NOT_APPLICABLE, str(exc) or "NotImplementedError")
    except TraceFormatError as exc:
        return verdict(FAIL, f"not a valid trace: {exc}")
    except ImplementationFailed as exc:
        return verdict(FAIL, exc.message)
    except Exception as exc:  # an outside implementation may raise anything
        return verdict(FAIL, describe_exception(exc))
    seconds_impl = time.perf_counter() - start
    try:
        result = judge_run(algorithm, X, dataset.y, actual, epochs=epochs, kernel=spec,
                           params=resolved, expected=expected, partial=partial)
        if not result.ok and result.first_divergence is not None:
            # judged again with the exact scores recorded, for the message's exact score
            result = judge_run(algorithm, X, dataset.y, actual, epochs=epochs, kernel=spec,
                               params=resolved, partial=partial)
    except (ValueError, TypeError, ArithmeticError) as exc:
        return verdict(FAIL, f"cannot be compared: {type(exc).__name__}: {exc}")
    return verdict(PASS if result.ok else FAIL, result.describe(), result, seconds_exact,
                   seconds_impl)


def _dataset(data: Any) -> Dataset:
    """``data`` as a checked Dataset (``verify_on``)."""
    if isinstance(data, Dataset):
        return data
    if isinstance(data, (str, os.PathLike)):
        name = os.fspath(data)
        return datasets.builtin(name[len("builtin:"):]) if name.startswith("builtin:") \
            else load_data(name)
    try:
        X, y = data
    except (TypeError, ValueError):
        raise DataError("data: expected a file's path, a Dataset or an (X, y) pair") from None
    X, y = validate(X, y)
    return Dataset(X, y)


def result_file(directory: pathlib.Path, case: Case) -> pathlib.Path:
    return directory / f"{pathlib.Path(case.file).stem}-{case.id}.json"


#: The reason of a case whose trace file is missing: one reason for every such case, so that
#: the summary counts them together (``_verify`` names the file it looked for).
NO_TRACE_FILE = "no trace file"


def read_result_file(directory: pathlib.Path, case: Case) -> Trace:
    """The trace file of ``case``; a missing file means the case was not run.  A symbolic
    link to a file outside ``directory`` is refused unread."""
    path = result_file(directory, case)
    if path.is_symlink():
        try:
            inside = path.resolve(strict=True).is_relative_to(directory.resolve())
        except (OSError, RuntimeError):   # a dangling link, or a loop
            raise TraceFormatError(f"{path.name}: a symbolic link that leads to no file; "
                                   "not read") from None
        if not inside:
            raise TraceFormatError(f"{path.name}: a symbolic link to a file outside "
                                   f"{directory}; not read")
    try:
        return trace_files.load_trace_file(path)
    except FileNotFoundError:
        raise NotImplementedError(NO_TRACE_FILE) from None


def progress_bar(stream: Any = sys.stderr) -> Callable[[int, int], None] | None:
    """A one-line progress bar on a terminal; nothing when stderr is not one."""
    if not getattr(stream, "isatty", lambda: False)():
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done == total:
            stream.write("\r" + " " * (width + 20) + "\r")
        stream.flush()
    return show


def check_implementation(impl: Any, algorithms: Iterable[str] | None = None,
                         max_examples: int | None = None,
                         shrink: bool = True) -> list[CheckResult]:
    """Every theorem invariant (``Family.invariant_checks``) of every family named (every
    registered family by default) on ``impl``, in verify's protocol."""
    return [run_check(check, impl, max_examples, shrink)
            for name in (algorithms or ALGORITHMS) for check in get(name).invariant_checks]
