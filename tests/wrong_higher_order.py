"""Deliberately wrong Higher-Order Perceptrons, each with one planted bug.

Each mutation runs the reference's loop (``reference.higher_order.run_loop``) with one part
replaced: the rho rule, the state holder's update, the mistake test or the sparse test, so it
can be observed mistake by mistake (``properties.higher_order.observe``) and its trace
compared (``verify --impl``).  ``wrong(mutation, algorithm, X, y, *, epochs, kernel,
params) -> Trace`` is the protocol of ``tests/wrong_perceptrons.py``; ``pnorm_perceptron``
runs the same loop with c = 0 (mutations that do not touch it are the reference).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

from perceptron_oracle.properties import higher_order as props
from perceptron_oracle.reference import higher_order as ho
from perceptron_oracle.reference.common import check_epochs
from perceptron_oracle.reference.pnorm_perceptron import PARAMS as PNORM_PARAMS
from perceptron_oracle.reference.pnorm_perceptron import numerator, pnorm_perceptron
from perceptron_oracle.trace import Trace

MUTATIONS = {
    "": "none: the reference's loop",
    "rho_index_shifted": "rho_k = c/(k+1): the counter read after its increment",
    "rho_not_decayed": "rho_k = c on every mistake for rho=c/k (no 1/k)",
    "theorem1_no_abs": "rho_k = (1-c)/(1 + v.x) for theorem1 (the absolute value lost)",
    "rho_squared_dropped": "A_k = A - rho A x x^T - rho x x^T A (the rho^2 term dropped)",
    "factor_sign": "B_k = B_(k-1) (I + rho x x^T) (the factor's sign flipped)",
    "sparse_inverted": "sparse: B left alone when y v.x >= 0 instead of < 0",
    "tie_rule": "a zero score is not a mistake (y s < 0)",
    "label_sign": "v_k = v_(k-1) - y x (the label's sign lost)",
    "gradient_exponent": "p != 2: g(theta)_i uses |theta_i|^p instead of |theta_i|^(p-1)",
}


def _shifted(par: ho.HigherOrderParams, k: int, s: Any) -> Any:
    return ho.rho_rule(par, k + 1, s)


def _not_decayed(par: ho.HigherOrderParams, k: int, s: Any) -> Any:
    return par.c if par.rho == "c/k" else ho.rho_rule(par, k, s)


def _no_abs(par: ho.HigherOrderParams, k: int, s: Any) -> Any:
    if par.rho != "theorem1":
        return ho.rho_rule(par, k, s)
    c = par.c
    return (1 - c) / (1 + s) if 1 + s > 0 else 1 - c


class _NoRhoSquared(ho.Primal):
    def apply_factor(self, j: int, rho: Any) -> None:
        A, x, n = self.A, self.rows[j], self.n
        a = [sum((A[i][l] * x[l] for l in range(n)), Fraction(0)) for i in range(n)]
        new = [[A[i][l] - rho * (a[i] * x[l] + x[i] * a[l]) for l in range(n)]
               for i in range(n)]
        d = math.lcm(*(v.denominator for row in new for v in row))
        self.A_int = [[v.numerator * (d // v.denominator) for v in row] for row in new]
        self.dA = d


class _FactorSign(ho.Primal):
    def apply_factor(self, j: int, rho: Any) -> None:
        super().apply_factor(j, -rho)


class _LabelSignPrimal(ho.Primal):
    def update(self, j: int, label: int, rho: Any) -> None:
        super().update(j, -label, rho)


class _LabelSignPNorm(ho.PNorm):
    def update(self, j: int, label: int, rho: Any) -> None:
        super().update(j, -label, rho)


class _GradientExponent(ho.PNorm):
    def score(self, j: int) -> tuple[Any, Any, float]:
        z = self.apply(self.B, self.rows[j])
        num = numerator(self.theta, z, self.p + 1, self.ctx)  # |theta|^p: one power too many
        return num, num, 0.0


def _hooks(mutation: str, p: Fraction) -> dict[str, Any]:
    if mutation not in MUTATIONS:
        raise KeyError(f"unknown mutation {mutation!r}")
    return {
        "rho_index_shifted": {"rule": _shifted},
        "rho_not_decayed": {"rule": _not_decayed},
        "theorem1_no_abs": {"rule": _no_abs},
        "rho_squared_dropped": {"engine": _NoRhoSquared} if p == 2 else {},
        "factor_sign": {"engine": _FactorSign} if p == 2 else {},
        "sparse_inverted": {"sparse_skips": lambda label, s: label * s >= 0},
        "tie_rule": {"is_mistake": lambda margin: margin < 0},
        "label_sign": {"engine": _LabelSignPrimal if p == 2 else _LabelSignPNorm},
        "gradient_exponent": {"engine": _GradientExponent} if p != 2 else {},
    }.get(mutation, {})


def observe(mutation: str, X: Any, y: Any, *, epochs: int = 1, kernel: str = "linear",
            **params: Any) -> props.Run:
    """The mutation's run, observed mistake by mistake (``properties.higher_order.Run``)."""
    p = ho.resolve_params(params).p
    return props.observe(X, y, epochs=epochs, kernel=kernel, hooks=_hooks(mutation, p),
                         **params)


def wrong(mutation: str, algorithm: str, X: Any, y: Any, *, epochs: int, kernel: Any,
          params: dict[str, Any]) -> Trace:
    """The protocol of ``tests/wrong_perceptrons.py``: a Trace of the mutated algorithm."""
    epochs = check_epochs(epochs)
    if algorithm == "pnorm_perceptron":
        p = PNORM_PARAMS.resolve(params)["p"]
        if mutation not in ("tie_rule", "label_sign", "gradient_exponent"):
            return pnorm_perceptron(X, y, epochs=epochs, kernel=kernel, **params)
        trace = observe(mutation, X, y, epochs=epochs, kernel=kernel, p=p, c=0).trace
        trace.algorithm = "pnorm_perceptron"
        trace.params = {"p": p}
        trace.final = {"w": trace.final["w"], "v": trace.final["v"]}
        return trace
    if algorithm != "higher_order":  # other families: their reference (as wrong_perceptrons)
        from perceptron_oracle.registry import get
        return get(algorithm).implementation("reference")(X, y, epochs=epochs, kernel=kernel,
                                                          **params)
    return observe(mutation, X, y, epochs=epochs, kernel=kernel, **params).trace


MUTANTS = {name: functools.partial(wrong, name) for name in MUTATIONS}
for _name in MUTATIONS:  # verify --impl wrong_higher_order:<mutation> (``correct`` for "")
    globals()[_name or "correct"] = MUTANTS[_name]
