"""How often the reference excuses a float64 form: the share of fragile trials (SPEC.md
section 3) on the shipped real data and over the golden set.

For each algorithm (default parameters, and PUMMA's soft margin C = 1; linear kernel,
one epoch) on Wdbc raw, Wdbc at unit
2-norm and digits 3 against the rest (first 600, unit 2-norm), it prints the share of trials
the exact reference flags fragile and whether every fast form agrees with the reference
(``compare``: the same mistakes and updates, the final state within its bounds; "stops"
when a fast form ends with a clear error, e.g. its float64 state overflowed); then, per
family, how many golden cases carry any fragile trial and the share of fragile trials.

``main(argv)`` is the ``perceptron-oracle fragility`` subcommand; ``--rows N`` takes the
first N examples of each data set (quicker), ``--skip-golden`` leaves the golden table out.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from . import datasets, golden
from .compare import compare
from .data import Dataset
from .errors import OracleInputError
from .interrupts import one_line
from .registry import ALGORITHMS, get, run
from .usage import OneLineParser


def runs() -> list[tuple[str, dict[str, Any]]]:
    """The algorithms and the parameters the table runs them with: every registered family
    with its defaults, then its declared ``fragility_params`` (linear kernel)."""
    return [(family.name, params) for family in ALGORITHMS.values()
            for params in [{}, *family.fragility_params]]


DATA: list[tuple[str, Callable[[], Dataset]]] = [
    ("Wdbc raw", lambda: datasets.wdbc()),
    ("Wdbc unit 2-norm", lambda: datasets.wdbc(normalized=True)),
    ("digits 3-vs-rest", lambda: datasets.digits()),
]


def measure(algorithm: str, params: dict[str, Any], data: Dataset) -> dict[str, Any]:
    """The reference's fragile share and the fast forms' verdicts on one data set."""
    start = time.perf_counter()
    expected = run(algorithm, data.X, data.y, **params)
    trials = len(data.y)
    verdicts = {}
    for form in ALGORITHMS[algorithm].forms_for("linear", params):
        try:
            actual = run(algorithm, data.X, data.y, impl="fast", form=form, **params)
        except OracleInputError as exc:
            verdicts[form] = f"stops ({str(exc).split(':')[0]})"
            continue
        result = compare(expected, actual, data.X)
        same = actual.mistakes == expected.mistakes and actual.updates == expected.updates
        verdicts[form] = ("agrees" if same and result.ok else
                          "agrees up to a fragile trial" if result.ok else "DISAGREES")
    return {"fragile": len(expected.fragile or []) / trials, "verdicts": verdicts,
            "mistakes": len(expected.mistakes), "seconds": time.perf_counter() - start}


def golden_shares(directory: Any = None) -> dict[str, tuple[int, int, float]]:
    """Per algorithm: (cases, cases with a fragile trial, share of fragile trials)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for case in golden.load(directory):
        row = counts[case.algorithm]
        row[0] += 1
        row[1] += bool(case.expected.fragile)
        row[2] += len(case.expected.fragile or [])
        row[3] += case.epochs * len(case.y)
    return {a: (c, f, t / max(n, 1)) for a, (c, f, t, n) in counts.items()}


@one_line("perceptron-oracle fragility")
def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="perceptron-oracle fragility",
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=None,
                        help="the first N examples of each data set")
    parser.add_argument("--skip-golden", action="store_true")
    parser.add_argument("--algorithm", action="append", default=None,
                        help="only this algorithm (repeatable)")
    args = parser.parse_args(argv)
    for name in args.algorithm or []:
        get(name)  # an unknown name is an input error, not an empty table
    todo = [r for r in runs() if not args.algorithm or r[0] in args.algorithm]
    print("| data | algorithm | trials | mistakes | fragile | fast forms | s |")
    print("|---|---|---|---|---|---|---|")
    all_agree = True
    for label, make in DATA:
        data = make()
        if args.rows:
            data = Dataset(data.X[:args.rows], data.y[:args.rows], data.source)
        for algorithm, params in todo:
            out = measure(algorithm, params, data)
            verdicts = ", ".join(f"{f}: {v}" for f, v in out["verdicts"].items())
            all_agree &= all(v.startswith(("agrees", "stops")) for v in out["verdicts"].values())
            name = " ".join([algorithm, *(f"{k}={v}" for k, v in params.items())])
            print(f"| {label} | {name} | {len(data.y)} | {out['mistakes']} | "
                  f"{100 * out['fragile']:.1f}% | {verdicts} | {out['seconds']:.1f} |",
                  flush=True)
    if not args.skip_golden:
        print()
        print("| family | golden cases | with a fragile trial | fragile trials |")
        print("|---|---|---|---|")
        for algorithm, (cases, fragile, share) in golden_shares().items():
            print(f"| {algorithm} | {cases} | {fragile} | {100 * share:.2f}% |")
    return 0 if all_agree else 1
