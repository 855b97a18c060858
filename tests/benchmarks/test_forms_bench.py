"""Benchmarks: every registered fast form, one item each, collected from the registry.

The items are the (algorithm, form) pairs ``registry.implementations()`` lists when this file
is collected, so a form registered before collection (``registry.register_form``, e.g. by a
pytest plugin given with ``-p``) is benchmarked without a line added here
(tests/test_family_interface.py collects this file with such a plugin).  Each form runs with
its algorithm's default parameters (p = 2) and the linear kernel, one epoch, and is timed
beside its algorithm's default form (the first registered) in the same item.  By hand (full
size: separable 2,000 x 50 with 2% label noise; prints each form's time per trial and its
ratio to the default form's, measured in one run, best of three after a warm-up run):

    pytest tests/benchmarks/test_forms_bench.py --benchmark-enable -s -p no:xdist

The families' own benchmarks (test_perceptron_bench.py, test_higher_order_bench.py, ...)
measure against floors and peers; this file makes sure no registered form is left out.

In CI (``--benchmark-disable``) every item runs once on small dyadic data (120 x 4, 10% label
noise, 2 epochs) as a correctness check: the form agrees with the exact reference
(``compare``: trial for trial, or up to a fragile trial; the final state within its bounds).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from fixtures import noisy_quarters
from perceptron_oracle.compare import compare
from perceptron_oracle.datasets import separable, with_label_noise
from perceptron_oracle.registry import get, implementations, run

FULL = dict(T=2000, n=50, epochs=1)
SMALL = dict(T=120, n=4, epochs=2)
_cache: dict[Any, Any] = {}


def pytest_generate_tests(metafunc: Any) -> None:
    """One item per registered fast form, read from the registry at collection."""
    if "fast_form" in metafunc.fixturenames:
        rows = [(a, f) for a, impl, f in implementations() if impl == "fast"]
        metafunc.parametrize("fast_form", rows, ids=[f"{a}:{f}" for a, f in rows])


def _data(full: bool) -> tuple[np.ndarray, np.ndarray, int]:
    if full not in _cache:
        if full:
            ds = with_label_noise(separable(FULL["T"], FULL["n"], 0.05, seed=31), 0.02, seed=32)
            _cache[full] = (ds.X, ds.y, FULL["epochs"])
        else:
            _cache[full] = (*noisy_quarters(SMALL["T"], SMALL["n"], seed=3), SMALL["epochs"])
    return _cache[full]


def _reference(algorithm: str) -> Any:
    key = ("reference", algorithm)
    if key not in _cache:
        X, y, epochs = _data(False)
        _cache[key] = run(algorithm, X, y, epochs=epochs, record_scores=True)
    return _cache[key]


def _seconds(algorithm: str, form: str, X: np.ndarray, y: np.ndarray, epochs: int) -> float:
    start = time.perf_counter()
    run(algorithm, X, y, impl="fast", form=form, epochs=epochs)
    return time.perf_counter() - start


def test_form(benchmark: Any, fast_form: tuple[str, str]) -> None:
    algorithm, form = fast_form
    full = not benchmark.disabled
    X, y, epochs = _data(full)
    assert form in get(algorithm).forms_for("linear", {}), \
        f"{algorithm} form {form} does not take the defaults (p = 2, linear kernel)"
    trace = benchmark.pedantic(run, args=(algorithm, X, y),     # full: a warm-up run first
                               kwargs=dict(impl="fast", form=form, epochs=epochs),  # (numba)
                               rounds=3 if full else 1, warmup_rounds=1 if full else 0)
    if not full:
        result = compare(_reference(algorithm), trace, X)
        assert result.ok, f"{algorithm} form {form}: {result.describe()}"
        return
    default = get(algorithm).forms[0]
    mine = benchmark.stats.stats.min                            # the best of three
    base = mine if form == default else min(_seconds(algorithm, default, X, y, epochs)
                                            for _ in range(3))
    trials = len(y) * epochs
    benchmark.extra_info.update(us_per_trial=mine / trials * 1e6,
                                over_default=mine / base, mistakes=len(trace.mistakes))
    print(f"\n{algorithm} {form}: {mine / trials * 1e6:.2f} us/trial, "
          f"{len(trace.mistakes)} mistakes in {trials} trials; "
          f"/ {default} (the default form) {mine / base:.2f}")
