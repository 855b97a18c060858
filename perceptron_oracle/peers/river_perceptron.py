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

from ._common import Adapter, Steps, missing

try:
    from river import linear_model, optim
    from river.__version__ import __version__ as river_version
except ImportError:
    raise missing("river") from None


def model(eta: float, b0: float, fit_intercept: bool) -> Any:
    """river's Perceptron, or the LogisticRegression it is with another eta, C or b0."""
    if eta == 1 and b0 == 0 and fit_intercept:
        return linear_model.Perceptron()
    return linear_model.LogisticRegression(
        optimizer=optim.SGD(eta), loss=optim.losses.Hinge(threshold=0.0), l2=0.0,
        intercept_init=b0, intercept_lr=eta if fit_intercept else 0.0, clip_gradient=1e12)


def start(X: np.ndarray, y: np.ndarray, eta: float, b0: float, fit_intercept: bool) -> Steps:
    """:func:`model`, each row a dict {feature index: value}."""
    rows = [{i: float(v) for i, v in enumerate(x)} for x in X]
    clf = model(eta, b0, fit_intercept)

    def weights() -> list[float]:
        return [clf.weights.get(i, 0.0) for i in range(X.shape[1])]

    return Steps(
        score=lambda j: sum(a * v for a, v in zip(weights(), rows[j].values())) + clf.intercept,
        predict=lambda j: 1 if clf.predict_one(rows[j]) else -1,
        learn=lambda j: clf.learn_one(rows[j], bool(y[j] > 0)),
        state=lambda: (weights(), clf.intercept))


ADAPTER = Adapter("river", river_version, start=start, tie_rule=(
    "predict_one takes max({False: 1 - p, True: p}) with p = sigmoid(score), which keeps "
    "False (-1) at p = 0.5"))
run = ADAPTER.run
