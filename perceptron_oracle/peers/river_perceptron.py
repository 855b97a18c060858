"""river's ``river.linear_model.Perceptron`` driven with ``learn_one``.

river's Perceptron is ``LogisticRegression(optimizer=optim.SGD(1), intercept_lr=1,
loss=optim.losses.Hinge(threshold=0.0))`` (its docstring: the Perceptron as a special case
of the logistic regression).  Its Hinge gradient is -y when y (w.x + b) <= 0 (in river
0.26; a zero score updates, as in Khardon & Wachman 2007, Figure 1), so a step is
w -= lr (-y x) and b -= intercept_lr (-y).  The Perceptron class fixes the learning rate at
1, the intercept step at 1 and the initial intercept at 0; any other eta, C = 0 (no
intercept update: ``intercept_lr=0``, which river documents as "the intercept is not
updated") or b0 is the same model built from ``LogisticRegression`` with those three
parameters, ``l2=0`` and the Perceptron's ``clip_gradient=1e12``.  A mistake is where
``predict_one`` differs from y: it takes the larger of {False: 1 - p, True: p} with
p = sigmoid(score), and ``max`` keeps the first key on a tie, so p = 0.5 (a zero score, or
one too small for the sigmoid to move off 0.5 in float64) predicts False (-1).

Use: ``perceptron-oracle verify --impl perceptron_oracle.peers.river_perceptron:run``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import make_trace, missing, supported_params

try:
    import river
    from river import linear_model, optim
except ImportError:
    raise missing("river") from None

LIBRARY = "river"
VERSION = river.__version__
TIE_RULE = ("predict_one takes max({False: 1 - p, True: p}) with p = sigmoid(score), "
            "which keeps False (-1) at p = 0.5")


def model(eta: float, b0: float, fit_intercept: bool) -> Any:
    """river's Perceptron, or the LogisticRegression it is with another eta, C or b0."""
    if eta == 1 and b0 == 0 and fit_intercept:
        return linear_model.Perceptron()
    return linear_model.LogisticRegression(
        optimizer=optim.SGD(eta), loss=optim.losses.Hinge(threshold=0.0), l2=0.0,
        intercept_init=b0, intercept_lr=eta if fit_intercept else 0.0, clip_gradient=1e12)


def run(algorithm: str, X: np.ndarray, y: np.ndarray, *, epochs: int, kernel: str,
        params: dict[str, Any]) -> dict[str, Any]:
    """The trace of river's Perceptron on ``epochs`` passes of (X, y)."""
    eta, b0, fit_intercept = supported_params(algorithm, kernel, params, LIBRARY,
                                              settable_b0=True)
    T, n = X.shape
    rows = [{i: float(v) for i, v in enumerate(X[j])} for j in range(T)]
    clf = model(eta, b0, fit_intercept)
    mistakes: list[int] = []
    updates: list[int] = []
    scores: list[float] = []
    for t in range(epochs * T):
        x, label = rows[t % T], bool(y[t % T] > 0)
        w = [clf.weights.get(i, 0.0) for i in range(n)]
        scores.append(float(sum(a * v for a, v in zip(w, x.values())) + clf.intercept))
        if clf.predict_one(x) != label:
            mistakes.append(t)
        b = clf.intercept
        clf.learn_one(x, label)
        if [clf.weights.get(i, 0.0) for i in range(n)] != w or clf.intercept != b:
            updates.append(t)
    w = [clf.weights.get(i, 0.0) for i in range(n)]
    return make_trace(T, epochs, params, mistakes, updates, w, clf.intercept, scores)
