"""Real libraries checked through the oracle: scikit-learn's and river's Perceptron.

Each adapter (``sklearn_perceptron.run``, ``river_perceptron.run``) is an outside
implementation in the sense of ``verify``: it drives the library through its public API one
example at a time and returns a trace, or raises NotImplementedError for a case the library
cannot express.  :func:`report` runs every installed library over the golden perceptron
cases and explains each failure by diagnosis: the library's trace is compared with exact
re-runs of the plain Perceptron (Khardon & Wachman 2007, Figure 1: a mistake and an update
iff y score <= 0; the update w += eta y x, b += eta y C) under alternative rules (a zero
score that is no mistake, a zero score that does not update, an update that changes no
coefficient and so cannot be seen); the fewest changes that reproduce the library's whole
trace are the explanation.  ``main`` prints the report (``perceptron-oracle peers``).
"""

from __future__ import annotations

import itertools
import pathlib
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .. import golden, verify
from ..errors import OracleInputError
from ..interrupts import one_line
from ..usage import OneLineParser

LIBRARIES = ("scikit-learn", "river")


def adapter(library: str) -> Any:
    """The adapter module of ``library`` (ImportError with what to install if missing: the
    adapters import their library when they are imported, so they are imported here)."""
    if library == "scikit-learn":
        from . import sklearn_perceptron
        return sklearn_perceptron
    if library == "river":
        from . import river_perceptron
        return river_perceptron
    raise OracleInputError(f"unknown library {library!r}; known: {', '.join(LIBRARIES)}")


# -- diagnosis ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Rules:
    """How a run may depart from Figure 1 of Khardon & Wachman (2007)."""

    tie_is_mistake: bool = True     # y score = 0 is a mistake (the paper)
    tie_updates: bool = True        # y score = 0 updates (the paper)
    unseen_updates: bool = False    # an update that changes neither w nor b is not seen

    def departures(self) -> int:
        return (not self.tie_is_mistake) + (not self.tie_updates) + self.unseen_updates


def simulate(case: Any, rules: Rules) -> tuple[list[int], list[int], list[Fraction],
                                               Fraction]:
    """The exact run of the plain linear Perceptron on the case under ``rules``: mistakes,
    updates (as seen), final w and b.  At a zero score a library that does not count it as
    a mistake predicts -1, so the example is a mistake iff its label is +1."""
    p = case.params
    eta, b, C = Fraction(p.get("eta", 1)), Fraction(p.get("b0", 0)), Fraction(p.get("C", 0))
    rows = [[Fraction(float(v)) for v in row] for row in case.X]
    labels = [int(v) for v in case.y]
    T, n = len(rows), len(rows[0])
    w = [Fraction(0)] * n
    mistakes: list[int] = []
    updates: list[int] = []
    for t in range(case.epochs * T):
        x, label = rows[t % T], labels[t % T]
        margin = label * (sum((a * v for a, v in zip(w, x) if v), Fraction(0)) + b)
        if margin < 0 or (margin == 0 and (rules.tie_is_mistake or label > 0)):
            mistakes.append(t)
        if margin < 0 or (margin == 0 and rules.tie_updates):
            step = eta * label
            if not rules.unseen_updates or C or any(x):
                updates.append(t)
            w = [a + step * v for a, v in zip(w, x)]
            b += step * C
    return mistakes, updates, w, b


def _close(a: float, exact: Fraction) -> bool:
    return abs(Fraction(a) - exact) <= Fraction(1, 10**9) * (1 + abs(exact))


def diagnose(case: Any, trace: dict[str, Any], tie_rule: str) -> tuple[Rules | None, str]:
    """The fewest departures from the paper's rules that reproduce the library's trace
    (mistakes, updates, final w and b), and the explanation; (None, why not) if none do."""
    candidates = sorted((Rules(*flags) for flags in itertools.product((True, False),
                                                                      (True, False),
                                                                      (False, True))),
                        key=Rules.departures)
    for rules in candidates:
        if rules.departures() == 0:
            continue
        mistakes, updates, w, b = simulate(case, rules)
        final = trace.get("final", {})
        if (mistakes == trace.get("mistakes") and updates == trace.get("updates")
                and len(final.get("w", [])) == len(w)
                and all(_close(a, e) for a, e in zip(final["w"], w))
                and _close(final.get("b", 0.0), b)):
            return rules, explain(rules, tie_rule)
    return None, ("unexplained: no combination of the tie rule, the zero-score update and "
                  "unseen updates reproduces the library's run")


def explain(rules: Rules, tie_rule: str) -> str:
    parts = []
    if not rules.tie_is_mistake:
        parts.append(f"tie rule: {tie_rule}, so an example with label -1 and score 0 is no "
                     "mistake to the library" + (" although it updates" if rules.tie_updates
                                                 else ""))
    if not rules.tie_updates:
        parts.append("zero-score rule: the library does not update at a zero score "
                     "(y score < 0)")
    if not rules.tie_is_mistake or not rules.tie_updates:
        parts[-1] += (", where Khardon & Wachman (2007, Figure 1: y score <= 0) count a zero "
                      "score as a mistake and update on it")
    if rules.unseen_updates:
        parts.append("zero example with C = 0: the paper's update w += eta y x, "
                     "b += eta y C changes nothing there, so no coefficient of the library "
                     "moves and the update cannot be seen from outside")
    return "; ".join(parts) + ". With that, the library's whole run agrees with the exact one"


# -- the report --------------------------------------------------------------------------

@dataclass
class LibraryRun:
    library: str
    version: str | None            # None: not installed
    results: list[Any]
    explanations: dict[str, tuple[Rules | None, str]]   # failed case name -> diagnosis
    missing: str = ""


def run_library(library: str, cases: list[Any]) -> LibraryRun:
    """Every case through the library's adapter, each failure diagnosed."""
    try:
        module = adapter(library)
    except ImportError as exc:
        return LibraryRun(library, None, [], {}, missing=str(exc))
    traces: dict[str, Any] = {}

    def produce(case: Any) -> Any:
        traces[case.name] = verify.run_external(case, module.run)
        return traces[case.name]

    results = verify.verify(cases, produce)
    explanations = {r.case.name: diagnose(r.case, traces[r.case.name], module.ADAPTER.tie_rule)
                    for r in results if r.status == verify.FAIL and r.case.name in traces}
    return LibraryRun(library, module.ADAPTER.version, results, explanations)


def report(golden_dir: Any = None, libraries: Sequence[str] | None = None, *,
           cases: Iterable[Any] | None = None) -> tuple[str, int]:
    """The table of every library's results on the golden perceptron cases (or on
    ``cases``), and the exit status: 0 when every failure is explained, 1 when one is not or
    no library is installed."""
    if cases is None:
        cases = golden.load(pathlib.Path(golden_dir) if golden_dir else None)
    cases = [c for c in cases if c.algorithm == "perceptron"]
    runs = [run_library(name, cases) for name in (libraries or list(LIBRARIES))]

    lines = [f"Perceptron libraries against the {len(cases)} golden perceptron cases", ""]
    header = ("library", "version", "passed", "failed", "not applicable", "keys not reported")
    rows = []
    for run in runs:
        if run.version is None:
            rows.append((run.library, "not installed", "-", "-", "-", "-"))
            continue
        summary = verify.summarize(run.results).get("perceptron", verify.Summary())
        keys = ", ".join(sorted(summary.not_reported)) or "-"
        rows.append((run.library, run.version, str(summary.passed), str(summary.failed),
                     str(sum(summary.not_applicable.values())), keys))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        lines.append("  ".join(v.ljust(w) if i in (0, 1, 5) else v.rjust(w)
                               for i, (v, w) in enumerate(zip(r, widths))).rstrip())

    unexplained = 0
    footnotes: dict[str, int] = {}
    for run in runs:
        if run.version is None:
            lines += ["", f"{run.library}: {run.missing}"]
            continue
        reasons = Counter(r.message for r in run.results if r.status == verify.NOT_APPLICABLE)
        if reasons:
            lines += ["", f"{run.library} {run.version}, not applicable:"]
            lines += [f"  {count:3d}  {reason}" for reason, count in reasons.most_common()]
        failed = [r for r in run.results if r.status == verify.FAIL]
        if failed:
            lines += ["", f"{run.library} {run.version}, failures (first diverging trial):"]
        for r in failed:
            rules, text = run.explanations.get(r.case.name, (None, "not diagnosed"))
            unexplained += rules is None
            note = footnotes.setdefault(text, len(footnotes) + 1)
            lines.append(f"  {r.case.name:<18} {r.message}  [{note}]")
    if footnotes:
        lines += ["", "Explanations:"]
        lines += [f"  [{n}] {text}" for text, n in footnotes.items()]
    status = 1 if unexplained or all(run.version is None for run in runs) else 0
    return "\n".join(lines) + "\n", status


@one_line("perceptron-oracle peers")
def main(argv: Sequence[str] | None = None) -> int:
    """``perceptron-oracle peers [--golden-dir DIR] [--library NAME ...]``."""
    parser = OneLineParser(prog="perceptron-oracle peers",
                           description="scikit-learn's and river's Perceptron against the "
                                       "golden perceptron cases")
    parser.add_argument("--golden-dir", default=None, help="golden set (default: shipped)")
    parser.add_argument("--library", action="append", choices=list(LIBRARIES),
                        help="only this library (repeatable)")
    args = parser.parse_args(argv)
    try:
        text, status = report(args.golden_dir, args.library)
    except OracleInputError as exc:
        print(f"perceptron-oracle peers: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return status
