"""The Second-Order Perceptron (SPEC.md section 13)."""

from __future__ import annotations

from .. import benchmark_cases, budget, golden_cases
from ..exact import second_order as exact
from ..family import LONG_RUN_POLY, LONG_RUN_RBF, Estimator, Family, Form, LongRun
from ..fast import second_order as fast
from ..properties import checks, strategies
from ..reference import second_order as reference

FAMILY = Family(
    name="second_order",
    reference=reference,
    exact=exact,
    fast_forms=(Form("primal", fast.primal, engine=True),
                Form("dual", fast.dual, kernels="any")),
    params_strategy=strategies.second_order_params,
    params_from_data=strategies.second_order_from_data,
    checks=checks.second_order_checks,
    golden=golden_cases.second_order_file,
    long_runs=(LongRun(examples=500, noise=0.0),
               LongRun(examples=1000, noise=0.1, trials=5000),
               LongRun(LONG_RUN_POLY, examples=100, noise=0.0),
               LongRun(LONG_RUN_RBF, examples=100, noise=0.0)),
    benchmarks=benchmark_cases.SECOND_ORDER,
    cost=budget.SECOND_ORDER,
    estimator=Estimator(
        "SecondOrderPerceptron",
        "The Second-Order Perceptron, Cesa-Bianchi, Conconi & Gentile 2005 (SPEC.md section "
        "13).  decision_function is x . w with w = A_K^{-1} v_K: the sign of the score SOP "
        "would compute next (its score s/(1 + q) has the same sign)."),
    matrix_state=True,
)
