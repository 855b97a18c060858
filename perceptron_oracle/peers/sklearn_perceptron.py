"""scikit-learn's ``sklearn.linear_model.Perceptron`` driven one example at a time.

``Perceptron`` is ``SGDClassifier(loss="perceptron", learning_rate="constant", eta0=eta0,
penalty=None)``: the loss is Hinge with threshold 0, whose gradient is -y when
y (w.x + b) <= 0 (a zero score updates, as in Khardon & Wachman 2007, Figure 1), so a step
is w += eta0 y x and, with ``fit_intercept``, b += eta0 y (Rosenblatt's update with C = 1;
dense input, so no ``SPARSE_INTERCEPT_DECAY``).  ``shuffle=False`` and one row per
``partial_fit`` keep the order of the trials.  The initial intercept is set by assigning
``coef_``, ``intercept_`` and ``classes_`` before the first ``partial_fit``, which then
continues from them.  A mistake is where ``predict`` differs from y: ``predict`` takes
``classes_[int(score > 0)]``, so a zero score predicts -1.

Use: ``perceptron-oracle verify --impl perceptron_oracle.peers.sklearn_perceptron:run``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._common import make_trace, missing, supported_params

try:
    import sklearn
    from sklearn.linear_model import Perceptron
except ImportError:
    raise missing("scikit-learn") from None

LIBRARY = "scikit-learn"
VERSION = sklearn.__version__
TIE_RULE = "predict returns classes_[int(score > 0)], which is -1 at a zero score"


def run(algorithm: str, X: np.ndarray, y: np.ndarray, *, epochs: int, kernel: str,
        params: dict[str, Any]) -> dict[str, Any]:
    """The trace of ``Perceptron`` on ``epochs`` passes of (X, y)."""
    eta, b0, fit_intercept = supported_params(algorithm, kernel, params, LIBRARY,
                                              settable_b0=True)
    X = np.ascontiguousarray(X, dtype=np.float64)
    T, n = X.shape
    clf = Perceptron(penalty=None, eta0=eta, fit_intercept=fit_intercept, shuffle=False,
                     max_iter=1, tol=None)
    clf.coef_ = np.zeros((1, n))
    clf.intercept_ = np.array([b0])
    clf.classes_ = np.array([-1, 1])
    mistakes: list[int] = []
    updates: list[int] = []
    scores: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # no warning of the library reaches the report
        for t in range(epochs * T):
            row, label = X[t % T: t % T + 1], int(y[t % T])
            scores.append(float(clf.decision_function(row)[0]))
            if int(clf.predict(row)[0]) != label:
                mistakes.append(t)
            before = clf.coef_.copy(), clf.intercept_.copy()
            clf.partial_fit(row, [label], classes=[-1, 1])
            if not (np.array_equal(before[0], clf.coef_)
                    and np.array_equal(before[1], clf.intercept_)):
                updates.append(t)
    return make_trace(T, epochs, params, mistakes, updates, clf.coef_, clf.intercept_[0],
                      scores)

