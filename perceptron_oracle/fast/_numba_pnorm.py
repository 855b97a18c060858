"""The p-norm Perceptron's compiled per-trial loop (numba; the front is ``fast._compiled``,
the caller ``fast.pnorm_perceptron``).  Its link f^-1 = g is ``fast._numba.link_inverse``,
shared with PUMMA p > 2 and HO_p; the state slots are ``fast._slots``' ``PNORM_*``.
"""

from __future__ import annotations

import math
from typing import Any

from ._numba import add_row, jit, link_inverse, row_dot, sparse_dot
from ._slots import PNORM_BAD_SCORE, PNORM_MISTAKES


@jit
def pnorm_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                 epochs: int, p: float, v: Any, w: Any, state: Any, mistakes: Any,
                 scores: Any, record: bool) -> int:
    """state: PNORM_MISTAKES, PNORM_BAD_SCORE (``fast._slots``); the mistake trials (each an
    update) are written to the front of ``mistakes``.  Returns the first trial with a non-finite
    score, or -1.  A dense row's score is ``row_dot`` (a vectorised sum: another rounding of the
    same sum, SPEC.md 3)."""
    T = y.shape[0]
    t = -1
    nm = 0
    for _ in range(epochs):
        for j in range(T):
            t += 1
            if sparse:
                s = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
            else:
                s = row_dot(X, j, w)
            if not math.isfinite(s):
                state[PNORM_MISTAKES] = nm
                state[PNORM_BAD_SCORE] = s
                return t
            if record:
                scores[t] = s
            label = y[j]
            if label * s <= 0:
                mistakes[nm] = t
                nm += 1
                add_row(X, indptr, indices, data, sparse, j, label, v)
                link_inverse(v, p, w)
    state[PNORM_MISTAKES] = nm
    return -1
