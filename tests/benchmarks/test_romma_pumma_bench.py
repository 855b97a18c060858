"""Benchmarks: the fast ROMMA and PUMMA forms on section 5.1's r-of-k data, and the paper's
experiment (updates and margin per algorithm); ROMMA's primal engines and dual form against
their floor and plain per-trial loops.

By hand (the paper's size: n = 100, k = 16, 1,000 examples, delta = 0.1; prints the table
and the per-form times measured in one run, as ratios):

    pytest tests/benchmarks -k romma_pumma --benchmark-enable -s

``test_romma_ratios`` (20,000 x 100 dense for the primal, 2,000 x 50 for the linear-kernel
dual, at a low and a high update rate) stores in ``extra_info``, all measured in one run:
fast/floor (the
floor: one ``X @ w`` pass; for the dual the T x |S| kernel block against the run's final
support set), fast/numpy (the block-ahead engine), fast/np loop (a plain per-trial numpy
loop of ROMMA) and fast/numba loop (that loop compiled by numba, scalar dot products).

In CI (``--benchmark-disable``) every benchmark runs once on small data as a correctness
check: the block-ahead forms must make exactly the plain per-trial loop's updates.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fixtures import best_time
from perceptron_oracle import benchmark_cases as bench
from perceptron_oracle.benchmark_cases import dense_data
from perceptron_oracle.experiments import pumma as experiment
from perceptron_oracle.fast import _compiled
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
        assert trace.updates == bench.numpy_pumma_loop(data.X, data.y, 0.1, EPOCHS)


def test_ratios_and_the_papers_experiment(benchmark):
    """Every time measured in this one run; the table is section 5.1's (RUNS_BY_HAND data
    sets per row by hand, 1 in CI)."""
    full = not benchmark.disabled
    benchmark.pedantic(lambda: None, rounds=1)
    data = _data(1, full)
    X, y = data.X, data.y
    t_loop = best_time(bench.numpy_pumma_loop, X, y, 0.1, EPOCHS, repeat=1)
    times = {name: best_time(run, X, y, repeat=3 if full else 1) for name, run in RUNS.items()}
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


# -- ROMMA: engines, floor and plain loops ----------------------------------------------------

def plain_romma(X: np.ndarray, y: np.ndarray, delta: float) -> list[int]:
    """ROMMA(delta), one epoch, as a per-trial numpy loop (one dot product per trial; the
    closed forms (15)/(19) with D = ||z||^2 ||v - (v.z/||z||^2) z||^2 at each update)."""
    w = np.zeros(X.shape[1])
    updates, last = [], -1
    for t in range(len(y)):
        vz = y[t] * (X[t] @ w)
        if vz >= 1 - delta or t == last:
            continue
        z = y[t] * X[t]
        zz, vv = z @ z, w @ w
        if vv == 0 or vz >= zz * vv:
            w = z / zz
        else:
            d = w - (vz / zz) * z
            D = zz * (d @ d)
            w = (vv * (1 - vz) / D) * z + ((zz * vv - vz) / D) * w
        updates.append(t)
        last = t
    return updates


def plain_romma_dual(X: np.ndarray, y: np.ndarray, kernel, delta: float) -> list[int]:
    """The dual as a per-trial numpy loop: one kernel row against the support per trial,
    G a and ||v||^2 from the support's Gram row (the closed forms with ||z||^2 ||v||^2 -
    (v.z)^2, as fast.romma's dual)."""
    support: list[int] = []
    a = np.zeros(0)
    Ga = np.zeros(0)
    updates, last = [], -1
    for t in range(len(y)):
        k = kernel.matrix(X[t:t + 1], X[support])[0] if support else np.zeros(0)
        vz = y[t] * float(k @ a)
        if vz >= 1 - delta or t == last:
            continue
        if t not in support:
            support.append(t)
            a, k_tt = np.append(a, 0.0), float(kernel.matrix(X[t:t + 1], X[t:t + 1])[0, 0])
            Ga = np.append(Ga, float(k @ a[:-1]))
            k = np.append(k, k_tt)
        s = support.index(t)
        zz, vv = k[s], float(a @ Ga)
        if vv == 0 or vz >= zz * vv:
            lam, eta = 1 / zz, 0.0
        else:
            D = zz * vv - vz * vz
            lam, eta = vv * (1 - vz) / D, (zz * vv - vz) / D
        a *= eta
        a[s] += lam * y[t]
        Ga = eta * Ga + lam * y[t] * kernel.matrix(X[support], X[t:t + 1])[:, 0]
        updates.append(t)
        last = t
    return updates


ROMMA_CASES = {  # (form, rate): (rows, columns, label noise, delta)
    ("primal", "low"): (20_000, 100, 0.0, 0.9),
    ("primal", "high"): (20_000, 100, 0.1, 0.0),
    ("dual", "low"): (2_000, 50, 0.0, 0.9),
    ("dual", "high"): (2_000, 50, 0.1, 0.0),
}


@pytest.mark.parametrize("form,rate", list(ROMMA_CASES))
def test_romma_ratios(benchmark, form, rate):
    """ROMMA against its floor and plain loops, every time measured in this one run; in CI
    a tenth of the rows, once, and the loops must make the fast form's updates."""
    T, n, noise, delta = ROMMA_CASES[(form, rate)]
    full = not benchmark.disabled
    X, y = dense_data(T if full else T // 10, n, noise)
    repeat = 5 if full else 1
    frac = "9/10" if delta else 0
    if form == "primal":
        def fast(engine="auto"):
            return fast_romma.primal(X, y, delta=frac, engine=engine)
        w = np.ones(n)
        floor = lambda: X @ w  # noqa: E731
        loops = {"np loop": lambda: plain_romma(X, y, delta)}
        if _compiled.available():
            numba_loop = bench.numba_loops()["romma"]
            numba_loop(X[:50], y[:50], delta)  # compile outside the timings
            loops["numba loop"] = lambda: numba_loop(X, y, delta)
    else:
        from perceptron_oracle.kernels import parse_kernel
        kern = parse_kernel("linear")

        def fast(engine="auto"):
            return fast_romma.dual(X, y, delta=frac, kernel=kern.spec)
        support = sorted(set(fast().updates))
        floor = lambda: kern.matrix(X, X[support])  # noqa: E731
        loops = {"np loop": lambda: plain_romma_dual(X, y, kern, delta)}
    trace = benchmark.pedantic(fast, rounds=repeat if full else 1)
    times = {"fast": best_time(fast, repeat=repeat), "floor": best_time(floor, repeat=4 * repeat)}
    if form == "primal":
        times["numpy"] = best_time(lambda: fast("numpy"), repeat=max(1, repeat // 2))
    for name, loop in loops.items():
        assert loop() == trace.updates, f"{name} makes other updates"
        times[name] = best_time(loop, repeat=1 if name == "np loop" else repeat)
    info = {"rows": X.shape[0], "update_rate": len(trace.updates) / X.shape[0],
            "us_per_trial": {k: v / X.shape[0] * 1e6 for k, v in times.items()}}
    info.update({f"fast/{k}": times["fast"] / v for k, v in times.items() if k != "fast"})
    benchmark.extra_info.update(info)
    print(f"\nromma {form} {rate}: {info}")
