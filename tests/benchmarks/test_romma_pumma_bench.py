"""Benchmarks: the fast ROMMA and PUMMA forms on section 5.1's r-of-k data, and the paper's
experiment (updates and margin per algorithm).

By hand (the paper's size: n = 100, k = 16, 1,000 examples, delta = 0.1; prints the table
and the per-form times measured in one run, as ratios):

    pytest tests/benchmarks -k romma_pumma --benchmark-enable -s

In CI (``--benchmark-disable``) every benchmark runs once on small data as a correctness
check: the block-ahead forms must make exactly the plain per-trial loop's updates.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from perceptron_oracle.experiments import pumma as experiment
from perceptron_oracle.fast import pumma as fast_pumma
from perceptron_oracle.fast import romma as fast_romma

FULL = dict(n_examples=1000, n=100, k=16)
SMALL = dict(n_examples=300, n=40, k=16)
EPOCHS = 5
#: data sets per (p, r) by hand (the paper: 10; each takes about 3 minutes here)
RUNS_BY_HAND = 2
_cache: dict = {}


def _data(r: int, full: bool):
    key = (r, full)
    if key not in _cache:
        size = FULL if full else SMALL
        _cache[key] = experiment.r_of_k(size["n_examples"], size["n"], size["k"], r, seed=r)
    return _cache[key]


def plain_pumma(X: np.ndarray, y: np.ndarray, epochs: int, delta: float) -> list[int]:
    """PUMMA_2(delta), hard margin, as a per-trial numpy loop (one dot product per trial,
    the closed forms (15)/(19) and the bias (20) at each update): the baseline."""
    T = len(y)
    w = np.zeros(X.shape[1])
    b, pos, neg = -1.0, -1, -1
    updates = []
    for t in range(epochs * T):
        j = t % T
        if pos < 0 or neg < 0:
            if (y[j] > 0 and pos < 0) or (y[j] < 0 and neg < 0):
                pos, neg = (j, neg) if y[j] > 0 else (pos, j)
                b = 1.0 if neg < 0 else -1.0
                if pos >= 0 and neg >= 0:
                    z = X[pos] - X[neg]
                    w = 2.0 * z / (z @ z)
                    b = -0.5 * (w @ X[pos] + w @ X[neg])
                updates.append(t)
            continue
        if j in (pos, neg) or y[j] * (X[j] @ w + b) >= 1 - delta:
            continue
        pos, neg = (j, neg) if y[j] > 0 else (pos, j)
        z = X[pos] - X[neg]
        zz, vz, vv = z @ z, w @ z, w @ w
        if 2 * vz >= zz * vv:
            w = 2.0 * z / zz
        else:
            D = zz * vv - vz * vz
            w = (vv * (2 - vz) / D) * z + ((zz * vv - 2 * vz) / D) * w
        b = -0.5 * (w @ X[pos] + w @ X[neg])
        updates.append(t)
    return updates


def _timed(fn, *args, repeat: int = 3, **kwargs) -> float:
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best


RUNS = {
    "pumma p=2 primal": lambda X, y: fast_pumma.primal(X, y, epochs=EPOCHS, delta="1/10"),
    "pumma p=2 dual": lambda X, y: fast_pumma.dual(X, y, epochs=EPOCHS, delta="1/10"),
    "pumma p=2ln(n) primal": lambda X, y: fast_pumma.primal(
        X, y, epochs=EPOCHS, delta="1/10", p=2 * math.log(X.shape[1])),
    "romma+aug primal": lambda X, y: fast_romma.primal(
        experiment.augment(X, math.sqrt(X.shape[1])), y, epochs=EPOCHS, delta="1/10"),
    "romma+aug dual": lambda X, y: fast_romma.dual(
        experiment.augment(X, math.sqrt(X.shape[1])), y, epochs=EPOCHS, delta="1/10"),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_fast_form(benchmark, name):
    data = _data(1, full=not benchmark.disabled)
    trace = benchmark.pedantic(RUNS[name], args=(data.X, data.y),
                               rounds=1 if benchmark.disabled else 3)
    assert trace.updates
    if name.startswith("pumma p=2 "):
        assert trace.updates == plain_pumma(data.X, data.y, EPOCHS, 0.1)


def test_ratios_and_the_papers_experiment(benchmark):
    """Every time measured in this one run; the table is section 5.1's (RUNS_BY_HAND data
    sets per row by hand, 1 in CI)."""
    full = not benchmark.disabled
    benchmark.pedantic(lambda: None, rounds=1)
    data = _data(1, full)
    X, y = data.X, data.y
    t_loop = _timed(plain_pumma, X, y, EPOCHS, 0.1, repeat=1)
    times = {name: _timed(run, X, y, repeat=3 if full else 1) for name, run in RUNS.items()}
    updates = len(RUNS["pumma p=2 primal"](X, y).updates)
    lines = [f"r-of-k, r = 1: {X.shape[0]} x {X.shape[1]}, {EPOCHS} epochs, PUMMA_2 updates "
             f"{updates} ({updates / (EPOCHS * len(y)):.1%} of the trials)"]
    for name, t in times.items():
        lines.append(f"  {name:>22}: {t:8.4f} s   / plain PUMMA_2 loop {t / t_loop:6.3f}   "
                     f"/ pumma p=2 primal {t / times['pumma p=2 primal']:6.2f}")
    size = FULL if full else SMALL
    rows = experiment.experiment(**size, runs=RUNS_BY_HAND if full else 1,
                                 rs=(1, 4, 8) if full else (1,))
    print("\nROMMA / PUMMA form times (lower is faster)\n" + "\n".join(lines))
    print("\nSection 5.1 (updates and final margin, averaged over the data sets)\n"
          + experiment.format_table(rows))
    by = {(row["p"], row["r"], row["algorithm"]): row for row in rows}
    assert by[("2", 1, "pumma")]["updates"] < by[("2", 1, "romma+aug")]["updates"]
