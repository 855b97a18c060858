"""The p-norm link in float64 (numpy): ``norm``, ``link_inverse`` and ``link`` of
``pnorm`` (the exact module, whose docstring gives the maps; SPEC.md sections 12 and 15).

A module of its own because it imports numpy and ``pnorm`` must not: the reference imports
that one and promises to import without numpy (``reference/__init__``).  The compiled forms
(numba needs its own jitted functions) are ``fast._numba.link_inverse`` and its helpers.

f^-1 is positively homogeneous of degree 1, so it is computed on th scaled into [0, 1] and
nothing overflows at p = 2 ln n.  Two scalings are kept, because each fast form's results
must stay bit for bit what they are (the traces are compared against them):

- ``scale="binary"`` (HO and the p-norm Perceptron, SPEC.md 12.7): t = |th| / 2^e with 2^e
  the power of two just above max|th| (exact), the powers t^(p-1) and their sum
  sum t^(p-1) t, f^-1 = sign(th) t^(p-1) (2^e / sum^((p-2)/p));
  ``fast._numba.link_inverse`` computes the same way (its integer powers by products);
- ``scale="max"`` (ALMA and PUMMA, SPEC.md 14-15): s = th / max|th| (rounded),
  N = (sum |s|^p)^(1/p), f^-1 = max|th| sign(s) |s|^(p-1) / N^(p-2), with ``norm``'s N.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp


def norm(v: np.ndarray, p: float) -> float:
    """||v||_p, computed on v / max|v| (p = 2: a square root)."""
    m = float(np.max(np.abs(v))) if v.size else 0.0
    if m == 0.0:
        return 0.0
    if p == 2.0:
        return m * float(np.sqrt(np.sum((v / m) ** 2)))
    root: float = float(np.sum(np.abs(v / m) ** p)) ** (1.0 / p)
    return m * root


def row_norms(X: Any, p: float) -> np.ndarray:
    """||x_t||_p of every row of X (dense or CSR), each by :func:`norm`."""
    out = np.zeros(X.shape[0])
    if sp.issparse(X):
        for t in range(X.shape[0]):
            out[t] = norm(X.data[X.indptr[t]:X.indptr[t + 1]], p)
        return out
    for t in range(X.shape[0]):
        out[t] = norm(X[t], p)
    return out


def link_inverse(theta: np.ndarray, p: float, scale: str = "binary") -> np.ndarray:
    """f^-1(th)_i = sign(th_i)|th_i|^(p-1) / ||th||_p^(p-2) (Lemma 3; HO's g, the gradient
    of ||th||_p^2 / 2): a new array; f^-1(0) = 0 and p = 2 copies th.  ``scale``:
    "binary" or "max", the two roundings of the module docstring."""
    if scale not in ("binary", "max"):
        raise ValueError(f"scale: \"binary\" or \"max\" (got {scale!r})")
    out: np.ndarray
    if p == 2.0:
        out = theta.copy()
        return out
    largest = float(np.max(np.abs(theta))) if theta.size else 0.0
    if largest == 0.0:
        out = np.zeros_like(theta)
        return out
    if scale == "max":
        s = theta / largest
        a = np.abs(s)
        N = float(np.sum(a ** p)) ** (1.0 / p)
        out = largest * np.sign(s) * a ** (p - 1) / N ** (p - 2)
        return out
    binary = np.ldexp(1.0, int(np.frexp(largest)[1]))  # a power of two >= largest
    t = np.abs(theta) / binary
    powered = t ** (p - 1.0)
    normalising = float(np.sum(powered * t)) ** ((p - 2.0) / p)
    out = np.copysign(powered, theta) * (binary / normalising)
    return out


def link(w: np.ndarray, p: float, scale: str = "binary") -> np.ndarray:
    """f(w)_i = sign(w_i)|w_i|^(q-1) / ||w||_q^(q-2), q = p/(p-1): :func:`link_inverse`
    with the dual exponent."""
    return link_inverse(w, p / (p - 1.0), scale)
