"""HO_p(c), the Higher-Order Perceptron (SPEC.md section 12)."""

from __future__ import annotations

from .. import benchmark_cases, budget, golden_cases
from ..exact import higher_order as exact
from ..family import LONG_RUN_POLY, LONG_RUN_RBF, Estimator, Family, Form, LongRun
from ..fast import higher_order as fast
from ..properties import checks, strategies
from ..reference import higher_order as reference

FAMILY = Family(
    name="higher_order",
    reference=reference,
    exact=exact,
    fast_forms=(Form("primal", fast.primal, p2_only=True, engine=True),
                Form("dual", fast.dual, kernels="any", p2_only=True),
                Form("implicit", fast.implicit, engine=True)),
    params_strategy=strategies.higher_order_params,
    checks=checks.higher_order_checks,
    golden=golden_cases.higher_order_file,
    long_runs=(LongRun(examples=200, noise=0.0),
               LongRun(examples=100, noise=0.05, trials=5000),
               LongRun(LONG_RUN_POLY, examples=100, noise=0.0),
               LongRun(LONG_RUN_RBF, examples=100, noise=0.0),
               LongRun(params={"p": 4}, examples=500)),
    benchmarks=benchmark_cases.HIGHER_ORDER,
    cost=budget.HIGHER_ORDER,
    estimator=Estimator(
        "HigherOrderPerceptron",
        "HO_p(c), Brotto, Gentile & Vitale 2007 (SPEC.md section 12), on X as given (the "
        "paper normalises instances: use ``preprocessing.normalize`` first)."),
    normalized_by_default=True,
    matrix_state=True,
)
