"""The p-norm Perceptron, fast and exact: the trace of ``reference.pnorm_perceptron`` (SPEC.md,
"higher_order", the p-norm part), trial for trial.

p = 2 (g the identity: the Perceptron with no bias): the run of ``exact.perceptron`` on the
integer-scaled data (the integer vector v = sum over the mistakes of y_t a_t, every score
v.a_t / D^2 exactly), with its float64 filter certifying the trials that are neither
mistakes nor fragile.  The trials it does not certify are run exactly, and their fragile test
is the reference's own: its magnitude sum_i fl(V_i |x_ti|) (``pnorm_magnitude`` at p = 2, a
float64 sum in coordinate order, each product that underflows counted as the smallest
subnormal) over the same float64 V = sum over the mistakes of |x_t|, and the correctly rounded
float of the exact score.

p > 2 runs the reference itself (``reference.pnorm_perceptron``): its numerator is an mpmath
(or, for an integer p, a rational) power sum that the engine would have to repeat term for
term to give the same mpf scores.
"""

from __future__ import annotations

from fractions import Fraction
from operator import mul
from typing import Any

import numpy as np

from ..errors import ParamError
from ..kernels import parse_kernel
from ..reference import pnorm_perceptron as reference
from ..reference.common import check_epochs
from ..reference.perceptron import PerceptronParams
from ..reference.pnorm_perceptron import PARAMS, final_error_bounds
from ..rounding import (
    SMALLEST_SUBNORMAL,
    exact_in_float64,
    magnitude_float,
    score_error_bound,
)
from ..trace import Trace
from .perceptron import IntegerData, LinearRun, ratio

__all__ = ["PARAMS", "final_error_bounds", "pnorm_perceptron"]

#: The Perceptron's parameters that make it the 2-norm Perceptron: no bias, no margin.
PERCEPTRON_AS_2_NORM = PerceptronParams(eta=Fraction(1), b0=Fraction(0), C=Fraction(0),
                                        tau=Fraction(0), lam=Fraction(0), alpha_bound=None)


def pnorm_perceptron(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
                     p: Any = 2, record_scores: bool = False) -> Trace:
    """Run the p-norm Perceptron over ``epochs`` passes of (X, y); the reference's trace."""
    data = IntegerData.read(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    if not kern.is_linear:
        raise ParamError("pnorm_perceptron takes the linear kernel only")
    par = PARAMS.read(dict(p=p))
    if par.p != 2:
        return reference.pnorm_perceptron(X, y, epochs=epochs, kernel=kernel, p=p,
                                          record_scores=record_scores)
    data.floats()  # the reference reads every float(x) (OverflowError beyond float64)
    r2, x_max = data.radius()
    max_updates = epochs * data.T
    exact_floats = data.e_x is not None and exact_in_float64(2 * data.e_x,
                                                             max_updates * (r2 + x_max))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow fails the filter
        run = _TwoNormRun(data, PERCEPTRON_AS_2_NORM, epochs, record_scores, exact_floats)
        run.run()
    v = [Fraction(a, data.D) for a in run.v]
    final = {"w": list(v), "v": v}
    record = run.record
    return record.trace("pnorm_perceptron", kern, PARAMS.as_dict(par), final,
                        updates=list(record.mistakes))


class _TwoNormRun(LinearRun):
    """The Perceptron's run with the 2-norm Perceptron's trial: an update on every mistake
    (y_t score_t <= 0) and the p-norm fragile rule."""

    def _exact_trial(self, t: int, j: int, label: int) -> None:
        record = self.record
        dot = sum(map(mul, self.data.row(j), self.v))   # Q score_t, Q = D^2
        if record.scores is not None:
            record.scores.append(Fraction(dot, self.Q))
        if not self.exact_floats:
            ops = len(self.update_examples) + self.data.n + 16
            err = score_error_bound(ops, magnitude_float(self._magnitude(j)))
            if err and abs(ratio(dot, self.Q)) <= err:
                record.fragile.append(t)
        if record.decide(t, label * dot <= 0):
            record.mistakes.append(t)
            self._update(t, j, label)

    def _magnitude(self, j: int) -> float:
        """``pnorm_magnitude(v_abs, |x_j|, 2, 1)``: sum_i fl(V_i |x_ji|) in order, a product
        that underflows counted as the smallest subnormal (V_f is the reference's v_abs,
        the same float64 sums)."""
        V = self.V_f.tolist()
        if not np.isfinite(self.V_f).all():   # the reference's power() raises there
            return reference.pnorm_magnitude(V, self.A[j].tolist(), Fraction(2), 1.0)
        total = 0.0
        for a, z in zip(V, self.A[j].tolist()):
            if a and z:
                total += a * z or SMALLEST_SUBNORMAL
        return total
