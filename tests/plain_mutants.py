"""``examples/python/plain.py``'s Perceptron (w and b only, linear kernel) with one planted
bug each, in verify's protocol, for ``verify --data`` (tests/test_verify_data.py):

- ``tie``: a zero score is not a mistake (y s < 0 instead of y s <= 0);
- ``float32``: w and b accumulated in float32, so the final state drifts from the exact one;
- ``stale``: an update accumulates the previous trial's instance, not the current one.
"""

from __future__ import annotations

import numpy as np


def _run(X, y, epochs, params, *, strict: bool, dtype, stale: bool = False) -> dict:
    eta, b0, C = (dtype(float(params.get(k, d))) for k, d in (("eta", 1), ("b0", 0), ("C", 0)))
    w, b = np.zeros(X.shape[1], dtype=dtype), b0
    Xd = X.astype(dtype)
    mistakes = []
    for t in range(epochs * len(y)):
        x, label = Xd[t % len(y)], y[t % len(y)]
        margin = label * (x @ w + b)
        if margin < 0 if strict else margin <= 0:
            mistakes.append(t)
            w = w + dtype(eta * label) * (Xd[(t - 1) % len(y)] if stale else x)
            b = dtype(b + eta * label * C)
    return {"format": "perceptron-oracle/trace@1", "algorithm": "perceptron", "form": "primal",
            "kernel": "linear", "params": {}, "n_examples": len(y), "epochs": epochs,
            "mistakes": mistakes, "updates": mistakes,
            "final": {"w": w.astype(np.float64).tolist(), "b": float(b)}}


def tie(algorithm, X, y, *, epochs, kernel, params):
    return _run(X, y, epochs, params, strict=True, dtype=np.float64)


def float32(algorithm, X, y, *, epochs, kernel, params):
    return _run(X, y, epochs, params, strict=False, dtype=np.float32)


def stale(algorithm, X, y, *, epochs, kernel, params):
    return _run(X, y, epochs, params, strict=False, dtype=np.float64, stale=True)
