"""The Perceptron and Khardon & Wachman's noise-tolerant variants (SPEC.md section 11)."""

from __future__ import annotations

from .. import benchmark_cases, budget, golden_cases
from ..exact import perceptron as exact
from ..family import LONG_RUN_POLY, LONG_RUN_RBF, Estimator, Family, Form, LongRun
from ..fast import perceptron as fast
from ..properties import checks, strategies
from ..reference import perceptron as reference

FAMILY = Family(
    name="perceptron",
    reference=reference,
    exact=exact,
    fast_forms=(Form("primal", fast.primal, engine=True),
                Form("dual", fast.dual, kernels="any", engine=True)),
    params_strategy=strategies.perceptron_params,
    checks=checks.perceptron_checks,
    golden=golden_cases.perceptron_file,
    long_runs=(LongRun(params={"tau": "1/4"}, examples=100),
               LongRun(LONG_RUN_POLY, examples=100),
               LongRun(LONG_RUN_RBF, examples=100)),
    benchmarks=benchmark_cases.PERCEPTRON,
    cost=budget.PERCEPTRON,
    estimator=Estimator("Perceptron", "The Perceptron with Khardon & Wachman's options."),
)
