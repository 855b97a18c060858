"""Benchmarks: the Second-Order Perceptron on the slides' simulation (Gaussian data, 100
attributes, one eigenvalue eight times the others; 9,000 training examples, 2 epochs, 3,000
test examples; ``perceptron_oracle.experiments.second_order``).

By hand (full size; prints the test mistakes and the ratios measured in one run):

    pytest tests/benchmarks -k second_order --benchmark-enable -s

``test_per_mistake`` times each form on 10,000 x 100 and 10,000 x 500 noisy data (about a
quarter to a third of the trials are mistakes) against the bare BLAS calls one primal update
needs (dsymv, dsyr, dsymv from ``scipy.linalg.blas`` on an n x n matrix, one OpenBLAS thread),
per mistake, with both engines (numba when installed), the dual form and the naive loop.

In CI (``--benchmark-disable``) everything runs once on small data (1,000 x 20) as a
correctness check: the fast forms make the naive loop's mistakes.  The naive loop solves
(a I + S_t S_t^T) w = v by a dense linear solve at every trial, the definition as written.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy.linalg import blas

from fixtures import best_time, noisy_gaussian
from perceptron_oracle.experiments.second_order import count_test_mistakes, simulation
from perceptron_oracle.fast import higher_order as ho
from perceptron_oracle.fast import second_order as sop
from perceptron_oracle.fast.perceptron import primal as perceptron
from perceptron_oracle.registry import get

FULL = dict(n_train=9000, n_test=3000, n=100)
SMALL = dict(n_train=1000, n_test=300, n=20)
_cache: dict = {}


def _data(dataset: int, full: bool):
    key = (dataset, full)
    if key not in _cache:
        _cache[key] = simulation(dataset, seed=1000 * dataset, **(FULL if full else SMALL))
    return _cache[key]


def naive(X: np.ndarray, y: np.ndarray, a: float, epochs: int = 2) -> list[int]:
    """The definition: w_t = (a I + S_t S_t^T)^{-1} v by one linear solve per trial."""
    T, n = X.shape
    C = np.zeros((n, n))
    v = np.zeros(n)
    mistakes = []
    for t in range(epochs * T):
        x = X[t % T]
        w = np.linalg.solve(a * np.eye(n) + C + np.outer(x, x), v)
        if y[t % T] * (w @ x) <= 0:
            mistakes.append(t)
            C += np.outer(x, x)
            v += y[t % T] * x
    return mistakes


@pytest.mark.parametrize("form", get("second_order").forms)
@pytest.mark.parametrize("dataset", [1, 2])
def test_fast_form(benchmark, form, dataset):
    X, y, _, _ = _data(dataset, full=not benchmark.disabled)
    run = get("second_order").implementation("fast", form)
    trace = benchmark.pedantic(run, args=(X, y), kwargs=dict(epochs=2, a=1), rounds=1)
    if benchmark.disabled:
        assert trace.mistakes == naive(X, y, 1.0)


def test_table_and_ratios(benchmark):
    """Test mistakes of the Perceptron and SOP (a = 1, 10, 50), the time of each form, and
    the ratios to the floor and to the naive form, all measured in this one run."""
    full = not benchmark.disabled
    benchmark.pedantic(lambda: None, rounds=1)
    lines = []
    for dataset in (1, 2):
        X, y, Xt, yt = _data(dataset, full)
        row = {"perceptron": count_test_mistakes(perceptron(X, y, epochs=2).final["w"], Xt, yt)}
        for a in (1, 10, 50):
            row[f"sop a={a}"] = count_test_mistakes(sop.primal(X, y, epochs=2, a=a).final["w"],
                                              Xt, yt)
        t_perc = best_time(perceptron, X, y, epochs=2, repeat=3)
        t_primal = best_time(sop.primal, X, y, epochs=2, a=1, repeat=3)
        t_dual = best_time(sop.dual, X, y, epochs=2, a=1)
        t_naive = best_time(naive, X, y, 1.0)
        lines.append(f"data {dataset}: test mistakes " + ", ".join(f"{k} {v}"
                                                                   for k, v in row.items()))
        lines.append(f"        times: perceptron {t_perc:.3f}s, sop primal {t_primal:.3f}s, "
                     f"sop dual {t_dual:.3f}s, naive {t_naive:.3f}s")
        lines.append(f"        sop primal / fast perceptron {t_primal / t_perc:6.2f}   "
                     f"sop primal / naive {t_primal / t_naive:6.4f} (target <= 0.05)")
        if full:
            assert t_primal / t_naive <= 0.05
        assert min(row["sop a=1"], row["sop a=10"]) < row["perceptron"]
    print(f"\nSecond-Order Perceptron, {X.shape[0]} x {X.shape[1]}, 2 epochs\n"
          + "\n".join(lines))


def blas_floor(X: np.ndarray, updates: int) -> float:
    """Seconds per update of the bare BLAS calls of one Sherman-Morrison step on an n x n
    matrix in place: z = M x (dsymv), M -= z z^T / (1 + x.z) (dsyr), u = M v (dsymv)."""
    n = X.shape[1]
    M = np.asfortranarray(np.eye(n))
    v = X[0].copy()
    with ho.OneBlasThread():
        start = time.perf_counter()
        for i in range(updates):
            x = X[i % X.shape[0]]
            z = blas.dsymv(1.0, M, x)
            blas.dsyr(-1.0 / (1.0 + float(x @ z)), z, a=M, overwrite_a=1)
            blas.dsymv(1.0, M, v)
        return (time.perf_counter() - start) / updates


def _engines() -> list[str]:
    return ["numpy"] + (["numba"] if ho.numba_available() else [])


def test_per_mistake(benchmark):
    """Per-mistake time of each form / the BLAS floor, measured in this one run (best of
    three runs for each), and the dual form against the naive solve per trial."""
    full = not benchmark.disabled
    benchmark.pedantic(lambda: None, rounds=1)
    sizes = [(10_000, 100), (10_000, 500)] if full else [(600, 10)]
    lines = []
    for T, n in sizes:
        X, y = noisy_gaussian(T, n)
        traces, times = {}, {}
        for name in _engines():
            sop.primal(X[:50], y[:50], engine=name)               # compile outside the timing
            best = np.inf
            for _ in range(3 if full else 1):
                start = time.perf_counter()
                traces[name] = sop.primal(X, y, engine=name)
                best = min(best, time.perf_counter() - start)
            times[name] = best
        K = len(traces["numpy"].mistakes)
        floor = min(blas_floor(X, K) for _ in range(3 if full else 1))
        start = time.perf_counter()
        dual = sop.dual(X, y)
        t_dual = time.perf_counter() - start
        for name in traces:
            assert traces[name].mistakes == traces["numpy"].mistakes
        assert dual.mistakes == traces["numpy"].mistakes
        ratios = {name: times[name] / K / floor for name in times}
        benchmark.extra_info[f"{T}x{n}"] = {"mistakes": K, "floor_us": floor * 1e6,
                                             **{f"{e}_over_floor": r for e, r in ratios.items()}}
        line = (f"{T} x {n}: {K} mistakes ({K / T:.0%}); BLAS floor {floor * 1e6:.1f} us/mistake; "
                + "  ".join(f"primal[{e}] {times[e] / K * 1e6:.1f} us/mistake "
                            f"({ratios[e]:.2f}x floor, {times[e] / T * 1e6:.1f} us/trial)"
                            for e in times)
                + f"  dual {t_dual / T * 1e6:.0f} us/trial")
        if n == 100 or not full:
            t_naive = best_time(naive, X, y, 1.0, epochs=1)
            line += f"  naive solve per trial {t_naive / T * 1e6:.0f} us/trial"
        lines.append(line)
    print("\nSecond-Order Perceptron per mistake (one run)\n" + "\n".join(lines))
