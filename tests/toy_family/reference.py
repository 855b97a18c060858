"""The toy family's exact reference: the margin Perceptron with a fixed threshold theta.

Trial t presents x_t; the score is s_t = sum_{i in S} alpha_i y_i k(x_i, x_t) (the dual
state, any kernel); a mistake is y_t s_t <= 0, an update y_t s_t <= theta, which adds 1 to
alpha_t.  The trial is fragile when y_t s_t lies within float64's rounding bound of 0 or of
theta (``rounding.score_error_bound``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.params import Param, ParamSchema
from perceptron_oracle.reference.common import Gram, TrialRecord, check_epochs, exact_data
from perceptron_oracle.rounding import magnitude_float, score_error_bound
from perceptron_oracle.trace import Trace

PARAMS = ParamSchema(
    Param("theta", "rational", Fraction(1, 4), "update iff y score <= theta",
          check=lambda v: v >= 0, requirement=">= 0"),
)


def toy_margin(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", theta: Any = None,
               record_scores: bool = False) -> Trace:
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    p = PARAMS.resolve({} if theta is None else {"theta": theta})
    gram = Gram(kern, rows)
    alpha = [0] * len(rows)
    support: list[int] = []
    record = TrialRecord(labels, epochs, record_scores)
    for t, j, label in record.trials():
        score = sum((alpha[i] * labels[i] * gram(i, j) for i in support), Fraction(0))
        margin = label * score
        record.score(score)
        magnitude = sum(alpha[i] * gram.magnitude(i, j) for i in support)
        err = score_error_bound((len(rows[0]) + 8) * kern.depth + len(record.updates) + 8,
                                magnitude_float(magnitude))
        theta_err = err + score_error_bound(1, float(p["theta"]))
        if (err and abs(margin) <= err) or abs(margin - p["theta"]) <= theta_err:
            record.flag(t)
        if margin <= 0:
            record.mistakes.append(t)
        if margin <= p["theta"]:
            record.updates.append(t)
            if alpha[j] == 0:
                support.append(j)
            alpha[j] += 1
    final: dict[str, Any] = {"alpha": alpha}
    if kern.is_linear:
        final["w"] = [sum((a * l * row[i] for a, l, row in zip(alpha, labels, rows) if a),
                          Fraction(0)) for i in range(len(rows[0]))]
    return record.trace("toy_margin", kern, p, final)


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """w_i = sum_j alpha_j y_j x_ji, built with at most T + K roundings."""
    if "w" not in trace.final:
        return {}
    rows = [[abs(float(v)) for v in row] for row in X.tolist()]
    alpha = trace.final["alpha"]
    ops = len(rows) + len(trace.updates) + 8
    return {"final.w": [score_error_bound(ops, magnitude_float(
        sum(a * row[i] for a, row in zip(alpha, rows) if a))) for i in range(len(rows[0]))]}
