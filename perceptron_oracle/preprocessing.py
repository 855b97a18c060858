"""Named preprocessing steps, done in float64 before a run (CONTRACT.md, "The online protocol").

The algorithms are defined for the instances exactly as given; these steps produce new float64
instances, which the reference then reads as exact rationals.  Each returns a new array (or
CSR matrix) and leaves its input alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import DataError
from .rounding import exact_dot, pnorm

STEPS = ("normalize", "add_bias")


def normalize(X: Any, p: float = 2.0) -> Any:
    """Scale every row to unit p-norm (p >= 1; ``p = inf`` for the max-norm): x / ||x||_p,
    the norm correctly rounded (``rounding.pnorm``; an mpmath evaluation rounded once for a
    non-integer p) and each quotient an IEEE division, so every machine computes the same
    doubles (SPEC.md, "Portable golden files"), where np.linalg.norm's BLAS and SIMD
    reductions round differently from one CPU or thread count to another.

    A zero row stays zero: it has no direction to keep, and every algorithm here treats it
    as a trial whose score does not depend on the weights.
    """
    p = float(p)
    if not p >= 1.0:
        raise DataError(f"normalize: p must be >= 1, got {p}")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        bounds = X.indptr.tolist()
        data = X.data.tolist()
        for i in range(X.shape[0]):
            norm = pnorm(data[bounds[i]:bounds[i + 1]], p)
            if norm > 0:
                X.data[bounds[i]:bounds[i + 1]] /= norm
        return X
    X = np.array(X, dtype=np.float64, copy=True)
    norms = np.array([pnorm(row, p) for row in X.tolist()], dtype=np.float64).reshape(-1)
    nonzero = norms > 0
    X[nonzero] /= norms[nonzero, None]
    return X


def exact_dots(X: np.ndarray, u: np.ndarray) -> np.ndarray:
    """X @ u for a dense X (2-d, or 1-d u against each row), every entry the correctly
    rounded exact dot product (``rounding.exact_dot``): the same doubles on every machine,
    where BLAS's ``X @ u`` is not (SPEC.md, "Portable golden files").  Exact arithmetic, so
    for generating small data sets, not for running."""
    columns = np.asarray(u, dtype=np.float64)
    rows = np.asarray(X, dtype=np.float64).tolist()
    if columns.ndim == 1:
        return np.array([exact_dot(row, columns.tolist()) for row in rows], dtype=np.float64)
    return np.array([[exact_dot(row, col) for col in columns.T.tolist()] for row in rows],
                    dtype=np.float64).reshape(len(rows), columns.shape[1])


def add_bias(X: Any, value: float = 1.0) -> Any:
    """Append a constant coordinate ``value`` to every row (the homogeneous-coordinates trick)."""
    column = np.full((X.shape[0], 1), float(value))
    if sp.issparse(X):
        return sp.hstack([sp.csr_matrix(X, dtype=np.float64), sp.csr_matrix(column)],
                         format="csr")
    return np.hstack([np.asarray(X, dtype=np.float64), column])
