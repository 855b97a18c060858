"""PUMMA_p(delta), Ishibashi, Hatano & Takeda's p-norm maximum margin algorithm with bias
(SPEC.md section 14.2.3)."""

from __future__ import annotations

from .. import benchmark_cases, budget, golden_cases
from ..exact import pumma as exact
from ..family import LONG_RUN_POLY, LONG_RUN_RBF, Estimator, Family, Form, LongRun
from ..fast import pumma as fast
from ..properties import checks, strategies
from ..reference import pumma as reference
from .romma import MPMATH_256

FAMILY = Family(
    name="pumma",
    reference=reference,
    exact=exact,
    fast_forms=(Form("primal", fast.primal, engine=True),
                Form("dual", fast.dual, kernels="any", p2_only=True, engine=True)),
    forced_tested=fast.forced_run,
    params_strategy=strategies.pumma_params,
    checks=checks.pumma_checks,
    golden=golden_cases.romma_pumma_file,   # one file with ROMMA's cases
    long_runs=(LongRun(params={"C": 1} | MPMATH_256, examples=500, noise=0.02),
               LongRun(LONG_RUN_POLY, params={"C": 1} | MPMATH_256, examples=100),
               LongRun(LONG_RUN_RBF, params={"C": 1} | MPMATH_256, examples=100),
               LongRun(params={"p": 4} | MPMATH_256, examples=200, noise=0.0)),
    benchmarks=benchmark_cases.PUMMA,
    cost=budget.PUMMA,
    estimator=Estimator(
        "PUMMA", "PUMMA_p(delta), Ishibashi, Hatano & Takeda 2008 (SPEC.md section 14.2.3)."),
    fragility_params=({"C": 1},),
)
