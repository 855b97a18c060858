"""Differential fuzzing of an outside implementation against the exact reference.

The golden files are fixed data: an implementation can pass every one of them and still be
wrong elsewhere.  :func:`fuzz` draws data sets, parameters, kernels and epoch counts with
hypothesis, runs the implementation (``verify``'s protocol, ``impl(algorithm, X, y, *,
epochs, kernel, params) -> Trace | dict``) and the exact reference (``record_scores=True``)
on each, and compares them by the golden files' rule (``compare.compare(..., partial=True)``,
SPEC.md sections 4 and 8: decisions trial for trial, a first divergence at a fragile trial
excused, the final state on the keys the implementation reports within the bounds the
reference module derives from the data).  At the first disagreement hypothesis shrinks the
draw to a minimal one; the report gives that data set, its parameters, kernel and epochs, the
first diverging trial, what the reference decided there and its exact score, and writes the
case as a replay directory (a golden file and ``manifest.json``, built by ``golden.py``)
that ``perceptron-oracle verify --impl MODULE:CALLABLE --golden DIR`` fails at the same
trial.

The draws are tuned to the bugs the golden files show are common: small-integer and
half-integer coordinates (exact ties, score exactly 0, and exact margin bands; dyadic numbers,
so float64 arithmetic is exact and nothing is excused as fragile, SPEC.md section 3), zero
instances, duplicates with the same or the opposite label, parallel and near-parallel
instances, several epochs.  Parameters come from the family's declared strategy
(``Family.params_strategy``), kernels from every registered kernel's examples
(``strategies.kernel_specs``) for the families with a kernel form taking the drawn
parameters; then a family's ``params_from_data`` (the Second-Order Perceptron's
regulariser, in most draws where some decision depends on it, moved just below or above
the value where the first such decision changes).  The exact reference's cost is kept
bounded: at most 8 examples of at most 3 features and 3 epochs (4 examples and 2 epochs
with a non-linear kernel).

Partial conformance: ``NotImplementedError`` from the implementation means "not this draw"
(rejected); an algorithm whose every draw is refused is reported not applicable, with the
implementation's reason.  A draw the reference itself refuses (an inconsistent parameter
combination, or ``NotConverged``: PUMMA's Newton stalling) is rejected too.

Runs are deterministic: for a given seed and implementation the draws, the shrunk case and
the report are the same (hypothesis with ``@seed``, no example database, no deadline, the
profile's settings ignored).

Run it with ``perceptron-oracle verify --fuzz --impl MODULE:CALLABLE`` (``cli._fuzz``) or
``pytest --oracle-impl MODULE:CALLABLE --oracle-fuzz`` (``fuzz_tests.py``): both pass a
``sandbox.Sandbox``, so every draw's call runs in the worker process, with its time and
memory limits.  What the implementation returns is validated as a trace file is
(``sandbox.trace_document``, then ``Trace.from_dict(..., numeric_final=True)``), a Trace
object too.  A failure of the worker's process (an exit, a signal, the time or memory limit,
SystemExit, KeyboardInterrupt: ``ImplementationFailed.fatal``) is reported at once, not
shrunk: it says nothing about the data, and each shrinking step would cost a time limit.

``--fuzz-out DIR`` (``write_replay``): a directory whose ``manifest.json`` is not one of the
fuzzer's replay manifests is refused (``check_replay_dir``); into a replay directory the
replays are added, under a lock on the directory, each file written atomically.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import random
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, find, given, reject, seed, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.errors import Flaky, NoSuchExample, Unsatisfiable

from . import atomic, golden, verify
from .compare import judge_run
from .errors import OracleInputError, TraceFormatError
from .golden_specs import CaseSpec, FileSpec, GroupSpec
from .kernels import parse_kernel
from .numbers import brief, format_exact, to_fraction
from .properties.strategies import kernel_specs, nonlinear_kernels
from .reference.maximum_margin import NotConverged
from .registry import ALGORITHMS, get
from .sandbox import ImplementationFailed, describe_exception, trace_document
from .trace import Trace, decode_value, encode_value
from .version import __version__

External = Callable[..., Any]

PASS, FAIL, NOT_APPLICABLE = "pass", "fail", "not_applicable"

#: Bounds of a draw: examples, features and epochs (linear kernel; other kernels).
MAX_EXAMPLES, MAX_FEATURES, MAX_EPOCHS = 8, 3, 3
MAX_KERNEL_EXAMPLES, MAX_KERNEL_EPOCHS = 4, 2
#: Draws tried to find one the implementation accepts, before the search proper.
PROBE_DRAWS = 100
#: Draws per algorithm unless told otherwise (``verify --fuzz``, ``--oracle-fuzz``).
DEFAULT_EXAMPLES = 200

# Coordinates: small integers and halves, 0 first (hypothesis shrinks towards it).  All are
# dyadic, so float64 sums of their products are exact: ties are exact and stay ties.
_VALUES = (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0)
# How an example is made from an earlier one: a copy (same or opposite label, the label is
# drawn), a parallel copy (scaled), a near-parallel copy (plus a perturbation of 1/8 units).
_NEW, _COPY, _SCALED, _NEAR = range(4)
_SCALES = (2.0, -1.0, 0.5, 3.0, -2.0)


def _settings(examples: int, phases: Iterable[Phase]) -> settings:
    """Independent of the profile in force: no database, no deadline (the exact reference
    may take a second on one draw), no health check, nothing printed."""
    return settings(settings.get_profile("default"), max_examples=examples, database=None,
                    deadline=None, derandomize=False, phases=tuple(phases),
                    suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                    report_multiple_bugs=False, print_blob=False)


# -- draws ---------------------------------------------------------------------------------

@dataclass
class Draw:
    """One fuzzing input: the data, the parameters as drawn (exact), the kernel (its canonical
    spec) and the epochs."""

    X: np.ndarray
    y: np.ndarray
    params: dict[str, Any]
    kernel: str = "linear"
    epochs: int = 1

    def __repr__(self) -> str:
        return (f"Draw(X={self.X.tolist()!r}, y={self.y.tolist()!r}, "
                f"params={_show_params(self.params)}, kernel={self.kernel!r}, "
                f"epochs={self.epochs})")


@st.composite
def _example(draw: Any, rows: list[list[float]], point: Any) -> tuple[list[float], int]:
    """One example: a new point, or a copy, parallel copy or near-parallel copy of an earlier
    one; its label drawn (so a copy has the same or the opposite label)."""
    kind = draw(st.integers(0, 3), label="kind") if rows else _NEW
    if kind == _NEW:
        row = draw(point, label="x")
    else:
        base = rows[draw(st.integers(0, len(rows) - 1), label="of")]
        if kind == _COPY:
            row = list(base)
        elif kind == _SCALED:
            scale = draw(st.sampled_from(_SCALES), label="scale")
            row = [scale * v for v in base]
        else:
            row = [b + v / 8 for b, v in zip(base, draw(point, label="perturbation"))]
    return row, draw(st.sampled_from([1, -1]), label="y")


@st.composite
def datasets(draw: Any, max_examples: int = MAX_EXAMPLES,
             max_features: int = MAX_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """A data set (X float64, y int64 in {-1, +1}) of small dyadic coordinates with zero
    instances, duplicates (relabelled or not), parallel and near-parallel instances."""
    n = draw(st.integers(1, max_features), label="features")
    point = st.lists(st.sampled_from(_VALUES), min_size=n, max_size=n)
    rows: list[list[float]] = []
    labels: list[int] = []
    # One example at a time, each drawing only what its recipe uses (a list of full recipes
    # costs several times more per draw); another example follows with probability about
    # 4/5, and "no more" (0) is where the shrinker goes.
    while len(rows) < max_examples and (not rows or draw(st.integers(0, 4), label="more?")):
        row, label = draw(_example(rows, point), label="example")
        rows.append(row)
        labels.append(label)
    return (np.array(rows, dtype=np.float64).reshape(len(rows), n),
            np.array(labels, dtype=np.int64))


@st.composite
def draws(draw: Any, algorithm: str) -> Draw:
    """Parameters (the family's ``params_strategy``), a kernel (linear in most draws; a
    polynomial or Gaussian one where a fast form of the algorithm takes it with these
    parameters), data and epochs; then, for a family with ``params_from_data``, parameters
    set from the data."""
    algo = get(algorithm)
    params = draw(algo.draw_params(), label="params")
    kernel = "linear"
    if algo.kernel_forms:
        others = nonlinear_kernels()   # poly, rbf, then any registered later
        choice = draw(st.integers(0, 3 + len(others)), label="kernel")  # 0..3: linear
        if choice >= 4:                                                  # (it shrinks there)
            candidate = draw(kernel_specs(others[choice - 4]), label="kernel spec")
            if algo.forms_for(candidate, params):
                kernel = parse_kernel(candidate).spec
    linear = kernel == "linear"
    X, y = draw(datasets(MAX_EXAMPLES if linear else MAX_KERNEL_EXAMPLES), label="data")
    epochs = draw(st.integers(1, MAX_EPOCHS if linear else MAX_KERNEL_EPOCHS), label="epochs")
    d = Draw(X, y, params, kernel, epochs)
    if algo.params_from_data is not None:   # drawn last: the other choices keep their places
        d.params = draw(algo.params_from_data(d), label="params from the data")
    return d


# -- one comparison ------------------------------------------------------------------------

@dataclass
class Finding:
    """A draw on which the implementation and the reference disagree."""

    draw: Draw
    message: str                           # compare's description, or what was raised
    first_divergence: int | None = None    # None: the decisions agree (or no trace at all)
    expected: str | None = None            # the reference's decision there
    got: str | None = None                 # the implementation's
    score: Fraction | None = None          # the exact score there
    label: int | None = None
    fatal: bool = False                    # the implementation's process failed: not shrunk

    def record(self) -> dict[str, Any]:
        """JSON-able, exact numbers as "p/q" strings."""
        d = self.draw
        return {"X": d.X.tolist(), "y": d.y.tolist(), "params": encode_value(d.params),
                "kernel": d.kernel, "epochs": d.epochs, "message": self.message,
                "first_divergence": self.first_divergence, "expected": self.expected,
                "got": self.got, "label": self.label, "fatal": self.fatal,
                "score": None if self.score is None else format_exact(self.score)}


class _Rejected(Exception):
    """The draw does not apply (raised by :func:`check_draw`, turned into a rejection)."""

    def __init__(self, reason: str, by_reference: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.by_reference = reason, by_reference


def impl_params(algorithm: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters an implementation is called with: every parameter resolved, as a golden
    file's group holds them (``verify.run_external`` passes the same)."""
    resolved: dict[str, Any] = decode_value(encode_value(get(algorithm).params.resolve(params)))
    return resolved


def check_draw(impl: External, algorithm: str, d: Draw) -> Finding | None:
    """Run ``impl`` and the exact reference on ``d``; None when they agree (up to a fragile
    trial), a :class:`Finding` when not.  Raises ``_Rejected`` when the draw does not
    apply: the implementation raised NotImplementedError, or the reference refused it."""
    try:
        passed = impl_params(algorithm, d.params)
    except OracleInputError as exc:
        raise _Rejected(f"the reference refuses the parameters: {exc}", True) from None
    actual: Any
    try:
        actual = trace_document(impl(algorithm, d.X.copy(), d.y.copy(), epochs=d.epochs,
                                     kernel=d.kernel, params=passed), len(d.y) * d.epochs)
    except NotImplementedError as exc:
        raise _Rejected(str(exc) or "NotImplementedError") from None
    except ImplementationFailed as exc:
        if exc.fatal:   # the process exited, was killed, ran out of time or memory
            return Finding(d, exc.message, fatal=True)
        actual = exc
    except TraceFormatError as exc:
        actual = exc
    except Exception as exc:  # an outside implementation may raise anything: a finding
        actual = exc
    exact_run = get(algorithm).exact_run()
    try:
        expected = exact_run(d.X, d.y, epochs=d.epochs, kernel=d.kernel, record_scores=True,
                             **d.params)
    except NotConverged as exc:
        raise _Rejected(f"the reference did not converge: {exc}", True) from None
    except OracleInputError as exc:
        raise _Rejected(f"the reference refuses the draw: {exc}", True) from None
    if isinstance(actual, TraceFormatError):
        return Finding(d, f"not a valid trace: {actual}")
    if isinstance(actual, ImplementationFailed):
        return Finding(d, actual.message)
    if isinstance(actual, Exception):
        return Finding(d, describe_exception(actual))
    try:
        trace = Trace.from_dict(actual, numeric_final=True)
    except TraceFormatError as exc:
        return Finding(d, f"not a valid trace: {exc}")
    try:
        result = judge_run(algorithm, d.X, d.y, trace, epochs=d.epochs, kernel=d.kernel,
                           params=d.params, expected=expected, partial=True)
    except (ValueError, TypeError, ArithmeticError) as exc:
        return Finding(d, f"cannot be compared: {type(exc).__name__}: {exc}")
    if result.ok:
        return None
    finding = Finding(d, result.describe(), first_divergence=result.first_divergence)
    t = result.first_divergence
    expected = result.exact or expected   # the branch the failure was found on
    if t is not None:
        finding.expected = _decision(t, expected)
        finding.got = _decision(t, trace)
        finding.label = int(d.y[t % len(d.y)])
        if expected.scores is not None and t < len(expected.scores):
            finding.score = to_fraction(expected.scores[t])
    return finding


def _decision(t: int, trace: Trace) -> str:
    mistake, update = t in set(trace.mistakes), t in set(trace.updates)
    if mistake == update:
        return "mistake and update" if mistake else "no mistake, no update"
    return "mistake, no update" if mistake else "update, no mistake"


# -- the search ----------------------------------------------------------------------------

@dataclass
class AlgorithmReport:
    """The outcome for one algorithm: ``status`` PASS (no disagreement in ``checked``
    comparisons), FAIL (``finding`` is the shrunk case) or NOT_APPLICABLE (``reason``)."""

    algorithm: str
    status: str
    checked: int = 0                      # comparisons made (shrinking included)
    found_after: int | None = None        # comparisons made when the first one failed
    not_applicable: Counter[str] = field(default_factory=Counter)   # reason -> draws
    reason: str = ""
    finding: Finding | None = None
    replay_message: str | None = None     # what `verify` says on the replay directory
    replay_first_divergence: int | None = None
    seconds: float = 0.0

    def record(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "status": self.status, "checked": self.checked,
                "found_after": self.found_after, "reason": self.reason,
                "not_applicable": dict(self.not_applicable),
                "finding": self.finding.record() if self.finding else None,
                "replay_message": self.replay_message,
                "replay_first_divergence": self.replay_first_divergence,
                "seconds": round(self.seconds, 3)}


@dataclass
class FuzzReport:
    seed: int
    examples: int
    results: list[AlgorithmReport]
    replay_dir: pathlib.Path | None = None

    @property
    def ok(self) -> bool:
        return all(r.status != FAIL for r in self.results)

    @property
    def failures(self) -> list[AlgorithmReport]:
        return [r for r in self.results if r.status == FAIL]

    def describe(self, impl_spec: str | None = None) -> str:
        lines = []
        for r in self.results:
            if r.status == NOT_APPLICABLE:
                lines.append(f"N/A  {r.algorithm}: {r.reason}")
                continue
            skipped = sum(r.not_applicable.values())
            extra = f", {skipped} draws not applicable" if skipped else ""
            if r.status == PASS:
                lines.append(f"PASS {r.algorithm}: no disagreement in {r.checked} draws"
                             f"{extra} ({r.seconds:.1f} s)")
                continue
            f = r.finding
            if f is None:
                lines.append(f"FAIL {r.algorithm}: {r.reason}")
                continue
            d = f.draw
            T, n = d.X.shape
            lines.append(f"FAIL {r.algorithm}: disagrees with the reference (found at draw "
                         f"{r.found_after}, {r.checked} draws compared with the shrinking"
                         f"{extra}, {r.seconds:.1f} s)")
            lines.append(f"  data: {T} example{'s' * (T != 1)} x {n} feature"
                         f"{'s' * (n != 1)}, {d.epochs} epoch{'s' * (d.epochs != 1)}, "
                         f"kernel {d.kernel}")
            lines.append(f"    X = {_show_X(d.X)}")
            lines.append(f"    y = {d.y.tolist()}")
            lines.append(f"  params: {_show_params(d.params)} (the rest at their defaults)")
            if f.first_divergence is not None:
                t = f.first_divergence
                score = "" if f.score is None else f"; exact score {brief(f.score)}"
                lines.append(f"  first divergence: trial {t} (example {t % T}, label "
                             f"{f.label:+d}): expected {f.expected}, got {f.got}{score}")
            lines.append(f"  {f.message}")
            if r.reason:
                lines.append(f"  {r.reason}")
            if r.replay_message is not None:
                lines.append(f"  replay: {r.replay_message}")
        if self.replay_dir is not None:
            target = impl_spec or "MODULE:CALLABLE"
            lines.append(f"replay: perceptron-oracle verify --impl {target} --golden "
                         f"{self.replay_dir}")
        failed = len(self.failures)
        lines.append(f"fuzz (seed {self.seed}, {self.examples} examples per algorithm): "
                     f"{sum(r.status == PASS for r in self.results)} passed, {failed} failed, "
                     f"{sum(r.status == NOT_APPLICABLE for r in self.results)} not applicable")
        return "\n".join(lines)

    def record(self) -> dict[str, Any]:
        return {"format": "perceptron-oracle/fuzz-report@1", "seed": self.seed,
                "examples": self.examples,
                "replay_dir": None if self.replay_dir is None else str(self.replay_dir),
                "results": [r.record() for r in self.results]}


class _Disagreement(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class _Fatal(BaseException):
    """A fatal finding (the implementation's process failed): ends hypothesis' search at
    once, unshrunk (hypothesis shrinks on Exception only; each shrinking step would cost a
    time limit or a restart)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


#: The reason given with a fatal finding.
NOT_SHRUNK = ("not shrunk: the implementation's process failed, which says nothing about "
              "the data")


@contextlib.contextmanager
def temporary_hypothesis_storage() -> Iterator[None]:
    """hypothesis' storage (its cache of the constants it reads in the code under test,
    written to ``./.hypothesis`` by default) in a temporary directory, removed afterwards:
    ``verify --fuzz`` leaves nothing in the user's directory.  The fuzzer itself keeps no
    example database (``_settings``)."""
    with tempfile.TemporaryDirectory(prefix="perceptron-oracle-hypothesis-") as home:
        set_hypothesis_home_dir(home)
        try:
            yield
        finally:
            set_hypothesis_home_dir(None)


def fuzz(impl: External, algorithms: Iterable[str] | None = None, *,
         examples: int = DEFAULT_EXAMPLES,
         seed: int = 0, out_dir: str | pathlib.Path | None = None,
         log: Callable[[str], None] | None = None) -> FuzzReport:
    """Fuzz ``impl`` on each algorithm (every registered one by default) with ``examples``
    draws each; shrink each disagreement to a minimal draw and write the shrunk cases as one
    replay directory (``out_dir``, or a new temporary directory when there is a failure and
    no ``out_dir``).  ``log`` receives one line per algorithm as it finishes."""
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 1:
        raise OracleInputError(f"examples must be a positive integer, got {examples!r}")
    names = list(ALGORITHMS) if algorithms is None else list(algorithms)
    for name in names:
        get(name)  # an unknown name fails here, before any work
    if out_dir is not None:
        check_replay_dir(out_dir)
    results = []
    for name in names:
        result = _search(impl, name, examples, seed)
        results.append(result)
        if log:
            log(f"{name}: {result.status} ({result.checked} draws, {result.seconds:.1f} s)")
    report = FuzzReport(seed, examples, results)
    if any(r.finding is not None for r in report.failures):
        directory = pathlib.Path(out_dir) if out_dir is not None else \
            pathlib.Path(tempfile.mkdtemp(prefix="perceptron-oracle-fuzz-"))
        write_replay(directory, {r.algorithm: r.finding for r in report.failures
                                 if r.finding is not None}, seed)
        report.replay_dir = directory
        _replay(impl, directory, report.failures)
    return report


def _search(impl: External, algorithm: str, examples: int, seed_value: int) -> AlgorithmReport:
    start = time.perf_counter()
    report = AlgorithmReport(algorithm, PASS)
    strategy = draws(algorithm)

    fatal: list[Finding] = []

    def applies(d: Draw) -> bool:
        if fatal:   # hypothesis calls again with the draw it found: not the implementation
            return True
        try:
            finding = check_draw(impl, algorithm, d)
        except _Rejected as exc:
            report.not_applicable[exc.reason] += 1
            return False
        if finding is not None and finding.fatal:
            fatal.append(finding)
        return True

    # A probe first: an algorithm the implementation never takes is reported without
    # hypothesis' thousands of rejected draws.
    try:
        find(strategy, applies, settings=_settings(min(examples, PROBE_DRAWS),
                                                   [Phase.generate]),
             random=random.Random(seed_value))
    except NoSuchExample:
        report.status = NOT_APPLICABLE
        report.reason = _reason(report.not_applicable)
        report.seconds = time.perf_counter() - start
        return report
    if fatal:
        report.status, report.finding, report.reason = FAIL, fatal[0], NOT_SHRUNK
        report.checked = report.found_after = 1
        report.seconds = time.perf_counter() - start
        return report
    report.not_applicable.clear()

    found: list[Finding] = []

    def check(d: Draw) -> None:
        try:
            finding = check_draw(impl, algorithm, d)
        except _Rejected as exc:
            report.not_applicable[exc.reason] += 1
            reject()
        report.checked += 1
        if finding is not None:
            if report.found_after is None:
                report.found_after = report.checked
            found.append(finding)
            if finding.fatal:
                raise _Fatal(finding)
            raise _Disagreement(finding)

    test = _settings(examples, [Phase.explicit, Phase.generate, Phase.shrink])(
        seed(seed_value)(given(strategy)(check)))
    try:
        test()
    except _Disagreement as exc:
        report.status = FAIL
        report.finding = _reduce(impl, algorithm, exc.finding, report)
    except _Fatal as exc:
        report.status, report.finding, report.reason = FAIL, exc.finding, NOT_SHRUNK
    except Unsatisfiable:
        report.status = NOT_APPLICABLE
        report.reason = _reason(report.not_applicable)
    except Flaky:
        report.status = FAIL
        report.reason = ("the implementation gave different answers on the same draw "
                         "(not deterministic)")
        report.finding = found[-1] if found else None
    report.seconds = time.perf_counter() - start
    return report


def _reduce(impl: External, algorithm: str, finding: Finding,
            report: AlgorithmReport) -> Finding:
    """After hypothesis' shrinking: drop a feature, an example or an epoch while the
    implementation still disagrees.  Hypothesis cannot drop a feature by itself (the number
    of features is drawn first: fewer of them re-reads every later choice), so a shrunk
    draw may keep a column of zeros.  Deterministic: candidates in a fixed order, the first
    that still disagrees taken, until none does."""
    while True:
        d = finding.draw
        T, n = d.X.shape
        candidates = [Draw(np.delete(d.X, j, axis=1), d.y, d.params, d.kernel, d.epochs)
                      for j in range(n) if n > 1]
        candidates += [Draw(np.delete(d.X, i, axis=0), np.delete(d.y, i), d.params, d.kernel,
                            d.epochs) for i in range(T) if T > 1]
        if d.epochs > 1:
            candidates.append(Draw(d.X, d.y, d.params, d.kernel, d.epochs - 1))
        for candidate in candidates:
            try:
                smaller = check_draw(impl, algorithm, candidate)
            except _Rejected:
                continue
            report.checked += 1
            if smaller is not None and not smaller.fatal:
                finding = smaller
                break
        else:
            return finding


def _reason(reasons: Counter[str]) -> str:
    if not reasons:
        return "no draw applies"
    reason, count = reasons.most_common(1)[0]
    total = sum(reasons.values())
    return reason if count == total else f"{reason} ({count} of {total} draws; others: " \
        f"{'; '.join(r for r, _ in reasons.most_common()[1:3])})"


# -- replay directory ----------------------------------------------------------------------

def replay_file_name(algorithm: str, n: int = 1) -> str:
    """``fuzz_<algorithm>.json``; ``fuzz_<algorithm>-<n>.json`` for the n-th distinct replay of
    one algorithm in a directory."""
    return f"fuzz_{algorithm}.json" if n == 1 else f"fuzz_{algorithm}-{n}.json"


_REPLAY_NAME = re.compile(r"fuzz_[a-z0-9_]+(-[0-9]+)?\.json")


def _replay_entries(directory: pathlib.Path) -> list[dict[str, Any]]:
    """The entries of the fuzzer's replay manifest in ``directory`` ([] when there is none);
    OracleInputError (one line) when ``manifest.json`` is anything else, a golden
    directory's manifest say, which the fuzzer must not replace."""
    path = directory / "manifest.json"
    if not path.exists() and not path.is_symlink():
        return []
    refused = OracleInputError(f"--fuzz-out {directory}: it holds a manifest.json that is not "
                               "one of the fuzzer's replay manifests (a golden directory?); "
                               "give a new or empty directory")
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 2**20:
            raise refused
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise refused from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if manifest.get("format") != golden.MANIFEST_FORMAT or not isinstance(files, list) or \
            not all(isinstance(e, dict) and isinstance(e.get("path"), str)
                    and _REPLAY_NAME.fullmatch(e["path"]) for e in files):
        raise refused
    return files


def check_replay_dir(directory: str | pathlib.Path) -> None:
    """OracleInputError (one line) when ``directory`` cannot take the fuzzer's replay files:
    not a directory, or a ``manifest.json`` there that is not a replay manifest."""
    directory = pathlib.Path(directory)
    if directory.exists() and not directory.is_dir():
        raise OracleInputError(f"--fuzz-out {directory}: not a directory")
    if directory.is_dir():
        _replay_entries(directory)


@contextlib.contextmanager
def _locked(directory: pathlib.Path) -> Iterator[None]:
    """An exclusive lock on ``directory`` (flock on the directory itself): two fuzzers writing
    replays into one directory take turns."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def write_replay(directory: str | pathlib.Path, findings: dict[str, Finding],
                 seed_value: int = 0) -> pathlib.Path:
    """Write each finding as a golden file of one case (``golden.build_document``, so the
    expected trace is the reference's) and ``manifest.json`` listing them, into
    ``directory``: ``verify --golden directory`` replays them.  A replay manifest already
    there is extended (a replay already listed with the same content is kept as it is,
    another one of the same algorithm gets the next free name ``fuzz_<algorithm>-<n>.json``);
    a manifest that is not a replay manifest is refused (OracleInputError).  Every file is
    written atomically, and the whole under a lock on the directory."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(directory):
        entries = {e["path"]: e for e in _replay_entries(directory)}
        for algorithm, finding in findings.items():
            text = _replay_document(algorithm, finding, seed_value)
            digest = hashlib.sha256(text.encode()).hexdigest()
            n = 1
            while replay_file_name(algorithm, n) in entries and \
                    entries[replay_file_name(algorithm, n)].get("sha256") != digest:
                n += 1
            name = replay_file_name(algorithm, n)
            atomic.write_text(directory / name, text)
            entries[name] = {"path": name, "sha256": digest,
                             "numberOfCases": json.loads(text)["numberOfCases"]}
        manifest = {"format": golden.MANIFEST_FORMAT, "generatorVersion": __version__,
                    "files": list(entries.values())}
        atomic.write_text(directory / "manifest.json", golden.dumps(manifest))
    return directory


def _replay_document(algorithm: str, finding: Finding, seed_value: int) -> str:
    d = finding.draw
    flags = ("duplicates",) if len({tuple(r) for r in d.X.tolist()}) < len(d.y) else ()
    spec = FileSpec(
        name=replay_file_name(algorithm)[:-5],
        header=[f"A case found by perceptron-oracle's differential fuzzer (seed "
                f"{seed_value}), shrunk by hypothesis: the implementation fuzzed "
                f"disagreed with the reference here: {_clip(finding.message)}"],
        groups=[GroupSpec(comment="fuzz", algorithm=algorithm,
                          params=dict(d.params), kernel=d.kernel,
                          cases=[CaseSpec(comment="the shrunk draw", X=d.X, y=d.y,
                                          epochs=d.epochs, flags=flags)])])
    return golden.dumps(golden.build_document(spec))


def _replay(impl: External, directory: pathlib.Path, failures: list[AlgorithmReport]) -> None:
    """Replay the directory as ``verify`` does and record what it says, so the report shows
    that the replay fails where the fuzzer found the disagreement."""
    by_algorithm = {r.algorithm: r for r in failures}
    for result in verify.verify(golden.load(directory),
                                lambda c: verify.run_external(c, impl)):
        r = by_algorithm.get(result.case.algorithm)
        if r is None:
            continue
        r.replay_first_divergence = result.first_divergence
        if result.status == verify.FAIL:
            r.replay_message = f"FAIL {result.case.name} {result.message}"
        else:
            r.replay_message = (f"{result.status} {result.case.name}: the replay does not "
                                f"reproduce the disagreement ({result.message})")


# -- showing numbers -----------------------------------------------------------------------

def _clip(text: str, width: int = 300) -> str:
    return text if len(text) <= width else text[:width] + "..."


def _show_X(X: np.ndarray) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{v:g}" for v in row) + "]"
                           for row in X.tolist()) + "]"


def _show_params(params: dict[str, Any]) -> str:
    if not params:
        return "{}"
    return "{" + ", ".join(f"{k}=" + (format_exact(v) if isinstance(v, Fraction) else repr(v))
                           for k, v in params.items()) + "}"
