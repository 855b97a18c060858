"""The p-norm Perceptron, HO_p(0) (SPEC.md section 12)."""

from __future__ import annotations

from .. import benchmark_cases, budget, golden_cases
from ..exact import pnorm_perceptron as exact
from ..family import Estimator, Family, Form, LongRun
from ..fast import pnorm_perceptron as fast
from ..properties import checks, strategies
from ..reference import pnorm_perceptron as reference

FAMILY = Family(
    name="pnorm_perceptron",
    reference=reference,
    exact=exact,
    fast_forms=(Form("primal", fast.primal, engine=True),),
    params_strategy=strategies.pnorm_params,
    checks=checks.pnorm_perceptron_checks,
    golden=golden_cases.higher_order_file,   # its cases stand beside HO's
    long_runs=(LongRun(), LongRun(params={"p": 3})),
    benchmarks=benchmark_cases.PNORM_PERCEPTRON,
    cost=budget.PNORM_PERCEPTRON,
    estimator=Estimator("PNormPerceptron",
                        "The p-norm Perceptron, HO_p(0) (SPEC.md section 12), on X as given."),
    normalized_by_default=True,
)
