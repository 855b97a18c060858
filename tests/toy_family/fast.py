"""The toy family's fast forms, in float64: ``primal`` (w kept; the linear kernel) and
``dual`` (the kernel matrix computed once; any kernel)."""

from __future__ import annotations

from typing import Any

import numpy as np

from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.trace import Trace

from .reference import PARAMS


def _trace(form: str, kern: Any, theta: Any, T: int, epochs: int, mistakes: list[int],
           updates: list[int], final: dict[str, Any], scores: list[float] | None) -> Trace:
    return Trace(algorithm="toy_margin", form=form, kernel=kern.spec,
                 params={"theta": theta}, n_examples=T, epochs=epochs, mistakes=mistakes,
                 updates=updates, final=final, scores=scores)


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", theta: Any = None,
           record_scores: bool = False) -> Trace:
    kern = parse_kernel(kernel)
    exact_theta = PARAMS.resolve({} if theta is None else {"theta": theta})["theta"]
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    threshold = float(exact_theta)
    w = np.zeros(X.shape[1])
    alpha = [0] * X.shape[0]
    mistakes: list[int] = []
    updates: list[int] = []
    scores: list[float] | None = [] if record_scores else None
    for t in range(epochs * X.shape[0]):
        j = t % X.shape[0]
        score = float(X[j] @ w)
        if scores is not None:
            scores.append(score)
        if y[j] * score <= 0:
            mistakes.append(t)
        if y[j] * score <= threshold:
            updates.append(t)
            w += y[j] * X[j]
            alpha[j] += 1
    return _trace("primal", kern, exact_theta, X.shape[0], epochs, mistakes, updates,
                  {"alpha": alpha, "w": w.tolist()}, scores)


def dual(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", theta: Any = None,
         record_scores: bool = False) -> Trace:
    kern = parse_kernel(kernel)
    exact_theta = PARAMS.resolve({} if theta is None else {"theta": theta})["theta"]
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    threshold = float(exact_theta)
    G = kern.matrix(X, X)
    coef = np.zeros(X.shape[0])     # alpha_i y_i
    alpha = [0] * X.shape[0]
    mistakes: list[int] = []
    updates: list[int] = []
    scores: list[float] | None = [] if record_scores else None
    for t in range(epochs * X.shape[0]):
        j = t % X.shape[0]
        score = float(G[j] @ coef)
        if scores is not None:
            scores.append(score)
        if y[j] * score <= 0:
            mistakes.append(t)
        if y[j] * score <= threshold:
            updates.append(t)
            coef[j] += y[j]
            alpha[j] += 1
    final: dict[str, Any] = {"alpha": alpha}
    if kern.is_linear:
        final["w"] = (coef @ X).tolist()
    return _trace("dual", kern, exact_theta, X.shape[0], epochs, mistakes, updates, final,
                  scores)
