"""Calibrate perceptron_oracle.budget: time small exact runs and print, per run, the measured
seconds over the model's work units with the run's actual update count.

    python tests/budget_calibration.py [FAMILY ...]

The largest ratio per family, rounded up, is its cost model's seconds_per_unit (its docstring says
which numbers this script printed).  Not a test: it times runs (about two minutes)."""

from __future__ import annotations

import sys
import time

from fixtures import noisy_unit_rows
from perceptron_oracle import budget
from perceptron_oracle.datasets import builtin
from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.registry import ALGORITHMS, get, run

KERNELS = ("linear", "poly:degree=3,coef0=1", "rbf:gamma=1")
SIZES = {"perceptron": (50, 100, 200, 400), "pnorm_perceptron": (100, 400),
         "alma": (50, 100, 200), "higher_order": (25, 50, 100), "second_order": (50, 100, 150),
         "romma": (50, 100, 200, 400), "pumma": (25, 50, 100)}
PARAMS = {"pnorm_perceptron": ({}, {"p": 3}, {"p": "5/2"}), "higher_order": ({}, {"p": 3}),
          "alma": ({}, {"p": 3}), "pumma": ({}, {"p": 3})}


def runs(family: str):  # type: ignore[no-untyped-def]
    linear_only = family in ("pnorm_perceptron",)
    for params in PARAMS.get(family, ({},)):
        for kernel in KERNELS[:1] if linear_only or params else KERNELS:
            for n in (5, 30):
                for T in SIZES[family]:
                    yield (f"synthetic T={T} n={n}", *noisy_unit_rows(T, n), kernel, params)
    wdbc = builtin("wdbc")
    for T in (100, 200):
        yield f"wdbc[:{T}]", wdbc.X[:T], wdbc.y[:T], "linear", {}


def main(families: list[str]) -> None:
    for family in families or [f.name for f in ALGORITHMS.values() if f.cost]:
        worst = 0.0
        for label, X, y, kernel, params in runs(family):
            start = time.perf_counter()
            trace = run(family, X, y, kernel=kernel, **params)
            seconds = time.perf_counter() - start
            units, _ = budget.work(get(family).cost, T=X.shape[0], n=X.shape[1], epochs=1,
                                   kern=parse_kernel(kernel), bx=budget.data_bits(X),
                                   params=get(family).params.resolve(params),
                                   updates=len(trace.updates))
            ratio = max(seconds - budget.FIXED_SECONDS, 0.0) / units
            worst = max(worst, ratio)
            print(f"{family:<17}{label:<22}{kernel:<22}{str(params):<12}"
                  f"updates {len(trace.updates):>4}  {seconds:8.3f} s  {ratio:.2e} s/unit",
                  flush=True)
        print(f"{family}: largest {worst:.2e} s/unit (seconds_per_unit "
              f"{get(family).cost.seconds_per_unit:.1e})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
