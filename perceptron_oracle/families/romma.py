"""ROMMA(delta), the Relaxed Online Maximum Margin Algorithm (SPEC.md section 14.2.2)."""

from __future__ import annotations

from .. import benchmark_cases, budget, golden_cases
from ..exact import romma as exact
from ..family import LONG_RUN_POLY, LONG_RUN_RBF, Estimator, Family, Form, LongRun
from ..fast import romma as fast
from ..properties import checks, strategies
from ..reference import romma as reference

#: The long runs' exact state in mpmath at a fixed precision: ``auto`` would take
#: 64 + 4 bits per trial (``reference.maximum_margin``), 400,000 bits at 10^5 trials.
MPMATH_256 = {"numbers": "mpmath:256"}

FAMILY = Family(
    name="romma",
    reference=reference,
    exact=exact,
    fast_forms=(Form("primal", fast.primal, engine=True),
                Form("dual", fast.dual, kernels="any", engine=True)),
    params_strategy=strategies.romma_params,
    checks=checks.romma_checks,
    golden=golden_cases.romma_pumma_file,   # one file with PUMMA's cases
    long_runs=(LongRun(params=MPMATH_256, examples=500, noise=0.0),
               LongRun(LONG_RUN_POLY, params=MPMATH_256, examples=100, noise=0.0),
               LongRun(LONG_RUN_RBF, params=MPMATH_256, examples=100, noise=0.0)),
    benchmarks=benchmark_cases.ROMMA,
    cost=budget.ROMMA,
    estimator=Estimator("ROMMA", "ROMMA(delta), Li & Long 2002 (SPEC.md section 14.2.2)."),
)
