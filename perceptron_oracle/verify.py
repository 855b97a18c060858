"""Running implementations against the golden cases, and saying where they diverge.

Three sources of traces, one comparison (``compare.compare`` with the case's stated
tolerances):

- the project's own fast forms (``perceptron-oracle check``, the main job);
- a Python callable named ``MODULE:CALLABLE`` (``verify --impl``), called as
  ``f(algorithm, X, y, *, epochs, kernel, params) -> Trace | dict`` with X a float64 array,
  y an int64 array in {-1, +1}, kernel the canonical spec string and params the group's
  parameters (Fractions, ints, bools, None, names), returning a trace (or its JSON dict);
- trace files written by any program (``verify --results DIR``): ``DIR/<file>-<id>.json``
  for case ``id`` of golden file ``<file>.json``, in the ``perceptron-oracle/trace@1`` format.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .compare import compare
from .errors import OracleInputError, TraceFormatError
from .golden import Case
from .registry import get
from .trace import Trace

External = Callable[..., Any]


@dataclass
class CaseResult:
    case: Case
    ok: bool
    excused: bool
    message: str
    seconds: float = 0.0


def load_callable(spec: str) -> External:
    """``MODULE:CALLABLE`` (dots allowed in both parts), with a clear error."""
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise OracleInputError(f"--impl expects MODULE:CALLABLE, got {spec!r}")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise OracleInputError(f"cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise OracleInputError(f"{module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise OracleInputError(f"{spec} is not callable")
    return target


def judge(case: Case, actual: Any) -> CaseResult:
    """Compare one implementation's trace (a Trace or its JSON dict) with the case."""
    try:
        trace = actual if isinstance(actual, Trace) else Trace.from_dict(actual)
    except TraceFormatError as exc:
        return CaseResult(case, False, False, f"not a valid trace: {exc}")
    result = compare(case.expected, trace, bounds=case.tolerance)
    if result.ok:
        return CaseResult(case, True, result.excused, result.describe())
    message = result.describe()
    if result.first_divergence is not None:
        message = _with_exact_score(case, result.first_divergence, message)
    return CaseResult(case, False, False, message)


def _with_exact_score(case: Case, trial: int, message: str) -> str:
    """Re-run the reference with scores to say what the exact score was there."""
    reference = get(case.algorithm).implementation("reference")
    expected = reference(case.X, case.y, epochs=case.epochs, kernel=case.kernel,
                         record_scores=True, **case.params)
    if not expected.scores or trial >= len(expected.scores):
        return message
    score = expected.scores[trial]
    label = int(case.y[trial % len(case.y)])
    return f"{message}; exact score {score} (~{float(score):.6g}), label {label:+d}"


def run_fast_form(case: Case, form: str) -> Trace:
    return get(case.algorithm).implementation("fast", form)(
        case.X, case.y, epochs=case.epochs, kernel=case.kernel, **case.params)


def run_external(case: Case, impl: External) -> Any:
    return impl(case.algorithm, case.X.copy(), case.y.copy(), epochs=case.epochs,
                kernel=case.kernel, params=dict(case.params))


def forms_for(case: Case) -> list[str]:
    """The fast forms of the case's algorithm that take its kernel and parameters."""
    return get(case.algorithm).forms_for(case.kernel, case.params)


def verify(cases: Iterable[Case], produce: Callable[[Case], Any],
           progress: Callable[[int, int], None] | None = None) -> list[CaseResult]:
    cases = list(cases)
    results = []
    for i, case in enumerate(cases):
        start = time.perf_counter()
        try:
            actual = produce(case)
        except FileNotFoundError as exc:
            results.append(CaseResult(case, False, False, f"no trace: {exc.filename}"))
            continue
        except Exception as exc:  # an outside implementation may raise anything
            results.append(CaseResult(case, False, False,
                                      f"raised {type(exc).__name__}: {exc}"))
            continue
        result = judge(case, actual)
        result.seconds = time.perf_counter() - start
        results.append(result)
        if progress:
            progress(i + 1, len(cases))
    return results


def read_result_file(directory: pathlib.Path, case: Case) -> Any:
    path = directory / f"{pathlib.Path(case.file).stem}-{case.id}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"{path}: not valid JSON ({exc})") from None


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
