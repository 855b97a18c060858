"""Seeded data generators: the embedded example data sets, the benchmarks' data, the papers'
artificial data.  Deterministic for a given seed (numpy's PCG64 ``default_rng``)."""

from __future__ import annotations

import numpy as np

from .data import Dataset, validate
from .errors import DataError


def separable(n_examples: int, n_features: int, margin: float, *, seed: int) -> Dataset:
    """Unit-norm instances labelled by a random unit hyperplane u through the origin, keeping
    only instances with |u.x| >= margin (so u separates the set with margin ``margin``)."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(n_features)
    u /= np.linalg.norm(u)
    kept: list[np.ndarray] = []
    count = 0
    while count < n_examples:
        X = rng.standard_normal((2 * n_examples, n_features))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        X = X[np.abs(X @ u) >= margin]
        kept.append(X)
        count += X.shape[0]
    X = np.concatenate(kept)[:n_examples]
    y = np.where(X @ u > 0, 1, -1)
    X, y = validate(X, y)
    return Dataset(X, y, f"separable(T={n_examples}, n={n_features}, margin={margin}, "
                         f"seed={seed})")


def with_label_noise(dataset: Dataset, rate: float, *, seed: int) -> Dataset:
    """A copy of ``dataset`` with each label flipped independently with probability ``rate``."""
    rng = np.random.default_rng(seed)
    flip = rng.random(dataset.y.shape[0]) < rate
    return Dataset(dataset.X.copy(), np.where(flip, -dataset.y, dataset.y),
                   f"{dataset.source} + {rate:g} label noise (seed={seed})")


BUILTIN = {
    "separable": lambda: separable(200, 5, 0.1, seed=0),
    "noisy": lambda: with_label_noise(separable(200, 5, 0.05, seed=1), 0.1, seed=2),
}


def builtin(name: str) -> Dataset:
    """The embedded example data sets, by name (``list`` names them)."""
    if name not in BUILTIN:
        raise DataError(f"unknown builtin data set {name!r} (known: {', '.join(BUILTIN)})")
    dataset = BUILTIN[name]()
    dataset.source = f"builtin:{name}"
    return dataset
