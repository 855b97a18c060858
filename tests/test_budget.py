"""The exact reference's cost estimate (perceptron_oracle.budget, ``run --max-seconds``):
close enough to measured times on small runs, refusing the runs that cannot finish in under
a second, and accepting every golden case, fuzz draw and ordinary built-in run."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fixtures import noisy_unit_rows
from perceptron_oracle import budget, cli, golden
from perceptron_oracle.datasets import builtin
from perceptron_oracle.fuzz import MAX_EPOCHS, MAX_EXAMPLES, MAX_FEATURES
from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.registry import ALGORITHMS, get, run

#: An estimate fed the run's actual update count is at least MEASURED_SLACK times the
#: measured time (a machine loaded by other work ran up to 3 times slower), at most SPREAD
#: times it (plus the fixed part): the models are upper bounds, not predictions.
MEASURED_SLACK = 0.25
SPREAD = 200.0


def estimate(algorithm: str, X: np.ndarray, epochs: int = 1, kernel: str = "linear",
             updates: int | None = None, **params: object) -> float:
    resolved = get(algorithm).params.resolve(params)
    return budget.estimate(get(algorithm).cost, X, epochs=epochs, kernel=kernel, updates=updates,
                           **resolved).seconds


SMALL_RUNS = [
    ("perceptron", 200, 30, "linear", {}),
    ("perceptron", 150, 5, "poly:degree=3,coef0=1", {}),
    ("perceptron", 100, 30, "rbf:gamma=1", {}),
    ("pnorm_perceptron", 200, 30, "linear", {"p": "5/2"}),
    ("alma", 100, 5, "linear", {}),
    ("alma", 60, 5, "rbf:gamma=1", {}),
    ("higher_order", 100, 30, "linear", {}),
    ("higher_order", 60, 5, "poly:degree=3,coef0=1", {}),
    ("second_order", 100, 30, "linear", {}),
    ("second_order", 60, 5, "rbf:gamma=1", {}),
    ("romma", 150, 5, "linear", {}),
    ("romma", 60, 5, "rbf:gamma=1", {}),
    ("pumma", 60, 30, "linear", {}),
    ("pumma", 40, 5, "linear", {"p": 3}),
]


@pytest.mark.parametrize("algorithm,T,n,kernel,params", SMALL_RUNS,
                         ids=[f"{a}-{k.partition(':')[0]}-{T}x{n}" for a, T, n, k, _ in
                              SMALL_RUNS])
def test_estimate_against_measured(algorithm: str, T: int, n: int, kernel: str,
                                   params: dict[str, object]) -> None:
    X, y = noisy_unit_rows(T, n)
    start = time.perf_counter()
    trace = run(algorithm, X, y, kernel=kernel, **params)
    measured = time.perf_counter() - start
    actual = estimate(algorithm, X, kernel=kernel, updates=len(trace.updates), **params)
    bound = estimate(algorithm, X, kernel=kernel, **params)
    assert actual >= MEASURED_SLACK * measured, (actual, measured)
    assert actual <= SPREAD * measured + budget.FIXED_SECONDS, (actual, measured)
    assert bound >= actual


def _write(tmp_path, name: str, X: np.ndarray, y: np.ndarray) -> str:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    np.savez(path, X=X, y=y)
    return str(path)


def test_runs_that_cannot_finish_are_refused_quickly(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    romma = _write(tmp_path, "romma.npz", *noisy_unit_rows(3200, 5))
    sop = _write(tmp_path, "sop.npz", *noisy_unit_rows(1600, 5))
    commands = [
        ["run", "perceptron", "--data", "builtin:separable", "--kernel",
         "poly:degree=1000000000"],
        ["run", "perceptron", "--data", "builtin:separable", "--epochs", "1000000000"],
        ["run", "romma", "--data", romma],
        ["run", "second_order", "--data", sop, "--kernel", "rbf:gamma=1"],
    ]
    for argv in commands:
        start = time.perf_counter()
        status = cli.main(argv)
        seconds = time.perf_counter() - start
        err = capsys.readouterr().err
        assert status == 2, argv
        assert seconds < 1.0, (argv, seconds)
        assert err.count("\n") == 1 and "--max-seconds" in err and "--impl fast" in err, err
    # the same runs go ahead with a larger limit (checked by its estimate, not run)
    X, _ = noisy_unit_rows(3200, 5)
    assert budget.DEFAULT_MAX_SECONDS < estimate("romma", X) < 10 * budget.DEFAULT_MAX_SECONDS


def test_library_checks_only_when_asked() -> None:
    X, y = noisy_unit_rows(30, 3)
    with pytest.raises(budget.BudgetError, match="--max-seconds"):
        run("perceptron", X, y, max_seconds=1e-6)
    assert run("perceptron", X, y).n_examples == 30  # no limit by default
    assert run("perceptron", X, y, impl="fast", max_seconds=1e-6).n_examples == 30  # fast


def test_max_seconds_option(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["run", "perceptron", "--data", "builtin:separable", "--epochs", "100000"]
    assert cli.main(argv) == 2
    assert cli.main([*argv, "--max-seconds", "1e12", "--impl", "fast"]) == 0
    for bad in ("0", "-1", "nan", "soon"):
        assert cli.main(["run", "perceptron", "--data", "builtin:separable",
                         "--max-seconds", bad]) == 2
        assert "--max-seconds" in capsys.readouterr().err
    # one-vs-rest: the K runs together
    assert cli.main(["run", "perceptron", "--data", "builtin:digits", "--multiclass",
                     "ovr"]) == 2
    assert "one-vs-rest runs" in capsys.readouterr().err


def test_golden_cases_fuzz_draws_and_builtin_runs_are_accepted() -> None:
    limit = budget.DEFAULT_MAX_SECONDS
    for case in golden.load(golden.default_directory()):
        assert estimate(case.algorithm, case.X, case.epochs, case.kernel,
                        **case.params) <= limit, case.name
    # the largest fuzz draw, its numbers at both ends of the float64 range
    X = np.full((MAX_EXAMPLES, MAX_FEATURES), 3.0)
    X[0, 0], X[1, 1] = 5e-324, 1e300
    for algorithm in ALGORITHMS:
        for kernel in ("linear", "poly:degree=3,coef0=1/2,gamma=1/2", "rbf:gamma=2"):
            assert estimate(algorithm, X, MAX_EPOCHS, kernel) <= limit, (algorithm, kernel)
    for name in ("separable", "noisy", "wdbc", "wdbc-unit", "digits3"):
        data = builtin(name)
        for algorithm in ALGORITHMS:
            assert estimate(algorithm, data.X) <= limit, (name, algorithm)
    # README: run perceptron --data builtin:separable --impl fast --epochs 5 (and the
    # reference on it)
    assert estimate("perceptron", builtin("separable").X, 5) <= limit


def test_work_grows_with_what_costs() -> None:
    kern = parse_kernel("linear")
    base = dict(T=100, n=5, epochs=1, kern=kern, bx=60, params={})
    for family in ALGORITHMS.values():
        units = budget.work(family.cost, **base)[0]
        assert budget.work(family.cost, **{**base, "epochs": 10})[0] > units
        assert budget.work(family.cost, **{**base, "T": 200})[0] > units
        assert budget.work(family.cost, **{**base, "updates": 5})[0] <= units
    poly = parse_kernel("poly:degree=1000")
    assert budget.kernel_bits(poly, 60, 5) == 1000 * budget.kernel_bits(
        parse_kernel("poly:degree=1"), 60, 5)
    assert budget.data_bits(np.array([[0.5, 2.0 ** -1000]])) == 53 + 999
