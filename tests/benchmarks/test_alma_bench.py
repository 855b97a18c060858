"""Benchmarks: the fast ALMA_p forms on section 5.1's r-of-k data (Ishibashi, Hatano &
Takeda 2008), and ALMA beside PUMMA and ROMMA in that experiment.

By hand (the paper's size: n = 100, k = 16, 1,000 examples; prints the per-form times
measured in one run, as ratios, and the updates to convergence):

    pytest tests/benchmarks -k alma --benchmark-enable -s -p no:xdist

In CI (``--benchmark-disable``) every benchmark runs once on small data as a correctness
check: the block-ahead forms must make exactly the plain per-trial loop's corrections.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fixtures import best_time
from perceptron_oracle import pnorm_float
from perceptron_oracle.experiments import pumma as experiment
from perceptron_oracle.fast import alma as fast_alma

FULL = dict(n_examples=1000, n=100, k=16)
SMALL = dict(n_examples=200, n=30, k=8)
EPOCHS = 3
_cache: dict = {}


def _data(full: bool):
    if full not in _cache:
        size = FULL if full else SMALL
        d = experiment.r_of_k(size["n_examples"], size["n"], size["k"], 1, seed=5)
        R = float(np.max(np.linalg.norm(d.X, axis=1)))
        _cache[full] = (experiment.augment(d.X, R), d.y)
    return _cache[full]


def plain_alma(X: np.ndarray, y: np.ndarray, epochs: int, alpha: float, p: float = 2.0
               ) -> list[int]:
    """ALMA_p(alpha; 1/alpha, sqrt 2) as a per-trial numpy loop: the baseline."""
    B, C = 1.0 / alpha, math.sqrt(2.0)
    norms = np.sum(np.abs(X) ** p, axis=1) ** (1.0 / p)
    theta = np.zeros(X.shape[1])
    w = np.zeros(X.shape[1])
    k, updates, T = 1, [], len(y)
    for t in range(epochs * T):
        j = t % T
        xh = X[j] / norms[j]
        if y[j] * (w @ xh) <= (1 - alpha) * B * math.sqrt(p - 1) / math.sqrt(k):
            theta = theta + C / (math.sqrt(p - 1) * math.sqrt(k)) * y[j] * xh
            N = pnorm_float.norm(theta, p)
            theta = theta / max(1.0, N)
            w = pnorm_float.link_inverse(theta, p, "max")
            k += 1
            updates.append(t)
    return updates


RUNS = {
    "alma p=2 primal": lambda X, y: fast_alma.primal(X, y, epochs=EPOCHS, alpha="1/2"),
    "alma p=2 dual": lambda X, y: fast_alma.dual(X, y, epochs=EPOCHS, alpha="1/2"),
    "alma p=2ln(n) primal": lambda X, y: fast_alma.primal(
        X, y, epochs=EPOCHS, alpha="1/2", p=2 * math.log(X.shape[1])),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_fast_form(benchmark, name):
    X, y = _data(not benchmark.disabled)
    trace = benchmark.pedantic(RUNS[name], args=(X, y), rounds=1 if benchmark.disabled else 3)
    assert trace.updates
    p = 2 * math.log(X.shape[1]) if "ln" in name else 2.0
    assert trace.updates == plain_alma(X, y, EPOCHS, 0.5, p)


def test_ratios_and_updates_beside_pumma(benchmark):
    """Every time measured in this one run; updates to convergence of ALMA, PUMMA and ROMMA
    on one r = 1 data set (bias 15) at p = 2."""
    full = not benchmark.disabled
    benchmark.pedantic(lambda: None, rounds=1)
    X, y = _data(full)
    t_loop = best_time(plain_alma, X, y, EPOCHS, 0.5, repeat=1)
    times = {name: best_time(run, X, y, repeat=3 if full else 1) for name, run in RUNS.items()}
    lines = [f"r-of-k, r = 1, (x, -R): {X.shape[0]} x {X.shape[1]}, {EPOCHS} epochs"]
    for name, t in times.items():
        lines.append(f"  {name:>22}: {t:8.4f} s   / plain ALMA_2 loop {t / t_loop:6.3f}")
    print("\nALMA form times (lower is faster)\n" + "\n".join(lines))
    size = FULL if full else SMALL
    data = experiment.r_of_k(size["n_examples"], size["n"], size["k"], 1, seed=5)
    runs = {name: experiment.run_to_convergence(name, data.X, data.y, p=2.0, delta="1/10",
                                                max_epochs=1000 if full else 300)
            for name in ("pumma", "romma+aug", "alma+aug")}
    print("\n".join(f"  {name:>10}: {r.updates[-1]} updates, {len(r.updates)} epochs, "
                    f"converged {r.converged}" for name, r in runs.items()))
    assert runs["pumma"].updates[-1] < runs["alma+aug"].updates[-1]
