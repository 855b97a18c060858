"""Benchmarks: one-vs-rest in one shared pass against K binary runs, and the estimators'
``fit`` against the bare fast form.

By hand (full size, prints the ratios measured in one run):

    pytest tests/benchmarks -k estimators --benchmark-enable -s -p no:xdist

- K = 10 classes, Perceptron, one epoch: the shared pass (``fast.multiclass``) over K
  separate binary runs (``fast.perceptron``, each on its relabelled data), on 20,000 x 200
  (primal) and on 5,000 x 50 with a Gaussian kernel (dual).  Target: <= 0.5.
- ``Perceptron(...).fit`` and ``SecondOrderPerceptron(...).fit`` over the bare
  ``run(..., impl="fast")`` on the same binary data.  Target: <= 10% overhead.

In CI (``--benchmark-disable``) every case runs once on small data as a correctness check:
the shared pass must make exactly the binary runs' mistakes and updates, the estimator
exactly the bare run's.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from perceptron_oracle import run
from perceptron_oracle.fast.multiclass import PerceptronOvR, relabel

pytest.importorskip("sklearn", reason="scikit-learn (the peers extra) is not installed")
from perceptron_oracle.estimators import Perceptron, SecondOrderPerceptron  # noqa: E402

K = 10
CASES = {  # (T, n, form, kernel): full size, small size
    "primal": ((20_000, 200, "primal", "linear"), (1_000, 20, "primal", "linear")),
    "dual": ((5_000, 50, "dual", "rbf:gamma=1/50"), (400, 10, "dual", "rbf:gamma=1/10")),
}


def _blobs(T: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """K Gaussian blobs (unit-variance centres, noise 1.5): overlapping classes."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(K, n))
    labels = rng.integers(0, K, T)
    return centres[labels] + 1.5 * rng.normal(size=(T, n)), labels


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_vs_rest_shared_pass(benchmark, case):
    full = benchmark.enabled
    T, n, form, kernel = CASES[case][0 if full else 1]
    X, labels = _blobs(T, n)
    _, Y = relabel(labels)
    repeat = 5 if full else 1

    def shared():
        model = PerceptronOvR(n, K, form=form, kernel=kernel)
        model.train(X, Y, 1)
        return model.traces()

    def binary():
        return [run("perceptron", X, Y[:, k], impl="fast", form=form, kernel=kernel)
                for k in range(K)]

    t_shared, traces = _best(shared, repeat)
    t_binary, alone = _best(binary, repeat)
    for got, want in zip(traces, alone):
        assert (got.mistakes, got.updates) == (want.mistakes, want.updates)
    benchmark.pedantic(shared, rounds=1, iterations=1)
    if full:
        print(f"\none-vs-rest {case} {T} x {n} {kernel}, K = {K}: shared pass {t_shared:.3f} s, "
              f"{K} binary runs {t_binary:.3f} s, ratio {t_shared / t_binary:.2f} "
              f"(updates per learner: {[len(t.updates) for t in alone]})")


@pytest.mark.parametrize("estimator, algorithm, params", [
    (Perceptron, "perceptron", {}),
    (SecondOrderPerceptron, "second_order", {}),
])
def test_fit_overhead(benchmark, estimator, algorithm, params):
    full = benchmark.enabled
    T, n = (20_000, 200) if full else (1_000, 20)
    X, labels = _blobs(T, n, seed=1)
    y = np.where(labels < K // 2, 1, -1)
    repeat = 5 if full else 1
    t_bare, bare = _best(lambda: run(algorithm, X, y, impl="fast", form="primal",
                                     epochs=2, **params), repeat)
    t_fit, model = _best(lambda: estimator(**params, form="primal", epochs=2,
                                           keep_trace=True).fit(X, y), repeat)
    assert (model.trace_.mistakes, model.trace_.updates) == (bare.mistakes, bare.updates)
    benchmark.pedantic(lambda: estimator(**params, epochs=2).fit(X, y), rounds=1,
                       iterations=1)
    if full:
        print(f"\n{estimator.__name__}.fit over run({algorithm!r}) on {T} x {n}, 2 epochs: "
              f"{t_fit:.3f} s / {t_bare:.3f} s, overhead {100 * (t_fit / t_bare - 1):+.0f}%")
