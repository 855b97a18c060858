"""Data and checks shared by several test files (imported by name: ``import fixtures``).

Each data helper draws from ``np.random.default_rng(seed)`` in a fixed order, so a test
that passes the same arguments gets the same values on every run.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from perceptron_oracle.trace import plain_value


def noisy_gaussian(T: int, n: int, seed: int = 0, flip: float = 0.2,
                   scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """T standard-normal rows in n dimensions times ``scale / sqrt(n)``, labelled by the
    sign of a random standard-normal hyperplane through the origin (0 counts as +1), a share
    ``flip`` of the labels then flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, n)) * scale / np.sqrt(n)
    y = np.where(X @ rng.normal(size=n) >= 0, 1, -1)
    return X, np.where(rng.random(T) < flip, -y, y)


def noisy_uniform(T: int, n: int, seed: int, scale: float = 1.0,
                  offset: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """T rows uniform in [-1, 1]^n times ``scale``, labelled by the sign of a random
    standard-normal hyperplane u with bias ``offset`` (+1 where X u + offset > 0), 10% of
    the labels then flipped; labels as int64."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (T, n)) * scale
    y = np.where(X @ rng.standard_normal(n) + offset > 0, 1, -1)
    return X, np.where(rng.random(T) < 0.1, -y, y).astype(np.int64)


def noisy_unit_rows(T: int, n: int, seed: int = 0,
                    noise: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """T unit-norm Gaussian rows, labels of a random hyperplane through the origin (0 counts
    as +1), a share ``noise`` of them flipped."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, n))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ rng.standard_normal(n) >= 0, 1, -1)
    flip = rng.random(T) < noise
    y[flip] = -y[flip]
    return X, y


def noisy_quarters(T: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Small dyadic data: T rows of multiples of 1/4 in [-1, 1]^n, labelled by a random
    normal hyperplane through the origin (0 counts as +1), 10% of the labels flipped.  Cheap
    for the exact reference, with mistakes all along a run."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-4, 5, size=(T, n)).astype(np.float64) / 4
    y = np.where(X @ rng.normal(size=n) >= 0, 1, -1)
    return X, np.where(rng.random(T) < 0.1, -y, y)


def random_labels(T: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """T standard-normal rows in n dimensions and labels drawn at random (no hyperplane):
    mistakes all along a run."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, n))
    return X, np.where(rng.random(T) < 0.5, 1, -1)


def sparse_hyperplane(T: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """T standard-normal rows with about 30% of the entries zero, labelled by the sign of a
    random standard-normal hyperplane through the origin plus Gaussian noise of 0.3."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, n))
    X[rng.random(X.shape) < 0.3] = 0.0
    y = np.where(X @ rng.standard_normal(n) + 0.3 * rng.standard_normal(T) > 0, 1, -1)
    return X, y


def gaussian_blobs(T: int, n: int, K: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """K Gaussian blobs in n dimensions (standard-normal centres, noise 1.5): T rows and
    their class labels 0 .. K-1 (overlapping classes)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(K, n))
    labels = rng.integers(0, K, T)
    return centres[labels] + 1.5 * rng.normal(size=(T, n)), labels


def assert_same_trace(got, want) -> None:
    """Two binary Perceptron traces agree: mistakes, updates, size, and the final alpha,
    votes, b, w, longest survivor and average (compared as plain values)."""
    assert got.mistakes == want.mistakes
    assert got.updates == want.updates
    assert (got.n_examples, got.epochs) == (want.n_examples, want.epochs)
    for key in ("alpha", "votes", "b", "w"):
        assert plain_value(got.final.get(key)) == plain_value(want.final.get(key)), key
    for h in ("longest_survivor", "averaged"):
        assert plain_value(got.final[h]) == plain_value(want.final[h]), h


def assert_final_close(got: Any, want: Any, rtol: float, atol: float,
                       exact: tuple[str, ...] = (),
                       tolerances: dict[str, tuple[float, float]] | None = None,
                       key: str = "") -> None:
    """Two final states (``Trace.final`` of float64 runs, or entries of them) agree: the same
    entries, integers exactly, floats to (``rtol``, ``atol``), or to ``tolerances[name]`` for
    an entry of that name; the entries whose dotted path is in ``exact`` exactly."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (key, sorted(got), sorted(want))
        for name in want:
            assert_final_close(got[name], want[name], rtol, atol, exact, tolerances,
                               f"{key}.{name}" if key else name)
        return
    left, right = np.asarray(got), np.asarray(want)
    assert left.shape == right.shape, key
    if (left.dtype.kind in "biu" and right.dtype.kind in "biu") or key in exact:
        assert np.array_equal(left, right), key
        return
    rtol, atol = (tolerances or {}).get(key.rsplit(".", 1)[-1], (rtol, atol))
    assert np.allclose(left.astype(float), right.astype(float), rtol=rtol, atol=atol), key


def best_time(fn, *args, repeat: int = 1, **kwargs) -> float:
    """The best wall-clock time in seconds of ``fn(*args, **kwargs)`` over ``repeat``
    calls."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best
