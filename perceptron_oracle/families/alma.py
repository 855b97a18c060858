"""ALMA_p(alpha; B, C), Gentile's approximate maximal margin algorithm (SPEC.md section 15):
PUMMA's baseline."""

from __future__ import annotations

from .. import benchmark_cases, budget, golden_cases
from ..exact import alma as exact
from ..family import LONG_RUN_POLY, LONG_RUN_RBF, Estimator, Family, Form, LongRun
from ..fast import alma as fast
from ..properties import checks, strategies
from ..reference import alma as reference

FAMILY = Family(
    name="alma",
    reference=reference,
    exact=exact,
    fast_forms=(Form("primal", fast.primal),
                Form("dual", fast.dual, kernels="any", p2_only=True)),
    params_strategy=strategies.alma_params,
    checks=checks.alma_checks,
    golden=golden_cases.alma_file,
    long_runs=(LongRun(), LongRun(LONG_RUN_POLY, examples=50),
               LongRun(LONG_RUN_RBF, examples=50), LongRun(params={"p": 4})),
    benchmarks=benchmark_cases.ALMA,
    cost=budget.ALMA,
    estimator=Estimator(
        "ALMA", "ALMA_p(alpha; B, C), Gentile 2001 (SPEC.md section 15): scores on the "
        "normalised instance x/||x||_p, as the algorithm."),
    scores_normalized=True,
)
