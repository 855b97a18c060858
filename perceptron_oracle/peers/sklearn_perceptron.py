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

import numpy as np

from ._common import Adapter, Steps, missing

try:
    import sklearn
    from sklearn.linear_model import Perceptron
except ImportError:
    raise missing("scikit-learn") from None


def start(X: np.ndarray, y: np.ndarray, eta: float, b0: float, fit_intercept: bool) -> Steps:
    """``Perceptron`` from w = 0, b = b0, one row per call."""
    clf = Perceptron(penalty=None, eta0=eta, fit_intercept=fit_intercept, shuffle=False,
                     max_iter=1, tol=None)
    clf.coef_ = np.zeros((1, X.shape[1]))
    clf.intercept_ = np.array([b0])
    clf.classes_ = np.array([-1, 1])
    return Steps(score=lambda j: clf.decision_function(X[j:j + 1])[0],
                 predict=lambda j: int(clf.predict(X[j:j + 1])[0]),
                 learn=lambda j: clf.partial_fit(X[j:j + 1], [int(y[j])], classes=[-1, 1]),
                 state=lambda: (clf.coef_.copy(), float(clf.intercept_[0])))


ADAPTER = Adapter("scikit-learn", sklearn.__version__, start=start, tie_rule=(
    "predict returns classes_[int(score > 0)], which is -1 at a zero score"))
run = ADAPTER.run
