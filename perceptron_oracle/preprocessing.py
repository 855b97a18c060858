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

STEPS = ("normalize", "add_bias")


def normalize(X: Any, p: float = 2.0) -> Any:
    """Scale every row to unit p-norm (p >= 1; ``p = inf`` for the max-norm).

    A zero row stays zero: it has no direction to keep, and every algorithm here treats it
    as a trial whose score does not depend on the weights.
    """
    p = float(p)
    if not p >= 1.0:
        raise DataError(f"normalize: p must be >= 1, got {p}")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        norms = sp.linalg.norm(X, ord=p, axis=1)
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        return sp.csr_matrix(sp.diags(scale) @ X)
    X = np.array(X, dtype=np.float64, copy=True)
    norms = np.linalg.norm(X, ord=p, axis=1)
    nonzero = norms > 0
    X[nonzero] /= norms[nonzero, None]
    return X


def add_bias(X: Any, value: float = 1.0) -> Any:
    """Append a constant coordinate ``value`` to every row (the homogeneous-coordinates trick)."""
    column = np.full((X.shape[0], 1), float(value))
    if sp.issparse(X):
        return sp.hstack([sp.csr_matrix(X, dtype=np.float64), sp.csr_matrix(column)],
                         format="csr")
    return np.hstack([np.asarray(X, dtype=np.float64), column])
