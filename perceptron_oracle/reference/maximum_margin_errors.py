"""The float64 error model of ROMMA and PUMMA: fragile trials and final bounds (SPEC.md 14.5).

A stated rule, not a rigorous bound.  Both algorithms update by the same closed forms, (15)
in case (i) and (19) in case (ii) of problem (3) (Ishibashi, Hatano & Takeda, "Online
Learning of Approximate Maximum p-Norm Margin Classifiers with Bias", COLT 2008; ROMMA's
problem (2) is the case r = 1), so one model serves both:

- ``ErrorModel``: the relative error rho a float64 form's coefficients may carry after each
  update (the p = 2 rule with absolute slacks; for PUMMA's p > 2 the caller's,
  ``pumma_errors.ThetaError``), the mpmath reference's own error by the kappa rule, each
  score's error bound and the fragile test;
- ``step_errors``: an update's sensitivity, a first-order perturbation of (15)/(19) given
  the errors of ||v||^2 (``norm_error``), ||z||^2 and v.z;
- ``bound``, ``dual_bounds``, ``remember_bounds``: the final bounds a run attaches to its
  trace (``trace.final_bounds``), and FALLBACK_RHO for a trace read from a file.

The shared exact machinery (numbers, the solver, the dual state, the shadow runs) is in
``reference.maximum_margin``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple

from ..rounding import (
    ANY_STATE,
    SMALLEST_SUBNORMAL,
    UNIT_ROUNDOFF,
    score_error_bound,
    within,
)
from ..trace import Trace

#: A float64 form may call z = 0 or the case-(ii) system singular below this (relative).
NEAR_SINGULAR = 2.0 ** -40


#: The relative error assumed for a trace without final_bounds (read from a file).
FALLBACK_RHO = 2.0 ** -20


# -- the run's error model (SPEC.md 14.5) -----------------------------------------------------

class ErrorModel:
    """The stated rule for how far a float64 form's state and scores may lie from the exact
    (SPEC.md 14.5).

    p = 2 (ROMMA, PUMMA's dual coordinates): each coefficient alpha_i carries the magnitude
    of its terms size_i (>= |alpha_i|) and an absolute slack s_i (kept by the callers), and
    rho bounds the relative error to size_i: a float64 coefficient lies within
    rho size_i + s_i, a score within 2 rho M + gamma_m M + 2 sum_i s_i |k|(x_i, x),
    M = sum_i size_i |k|(x_i, x).  rho starts at 0 (w_0 = 0 is exact); each update's
    sensitivity comes from ``step_errors`` (first-order perturbation of (15)/(19) given the
    errors of ||v||^2, ||z||^2 and v.z), and ``update(..., rho_lam=...)`` sets

        case (i):   rho' = rho_lam + 4 (m + 8) u
        case (ii):  rho' = max(rho, rho_lam) + 4 (m + 8) u

    while eta's absolute error and lam's (the cancellation in r - v.z) go to the slacks.
    A near-singular update (``step_errors`` fragile) that the reference takes sets ``lost``:
    every later score error is infinite and every final bound ANY_STATE.

    p > 2 (PUMMA's primal w; no slacks): the caller sets rho after each update from the
    error ellipsoid it carries (``pumma_errors.ThetaError``, SPEC.md 14.5).

    rho_ref (the mpmath reference's own error, at u = 2^-bits, for every p): the kappa rule

        case (i):   rho_ref' = 4 (m + 8) u + newton                     (w depends on z alone)
        case (ii):  rho_ref' = 2 sqrt(kappa) rho_ref + 4 kappa (m + 8) u + newton

    kappa = (vv zz + vz^2) / D the condition of the 2 x 2 system (section 3.1); ``newton``
    the tolerance the reference's Newton solver is allowed (PUMMA p > 2).
    """

    def __init__(self, unit: float = UNIT_ROUNDOFF, ref_unit: float = 0.0):
        self.rho = 0.0
        self.lost = False   # a near-singular update was taken: the state may be anything
        self.rho_ref = 0.0
        self.worst_ref = 0.0
        self.unit = unit
        self.ref_unit = ref_unit

    def update(self, case_ii: bool, kappa: float, m: int, ref_newton: float = 0.0,
               rho_lam: float | None = None) -> None:
        """After an update.  p = 2 (``rho_lam`` given, from ``step``): rho' = max(rho,
        rho_lam) + 4 (m + 8) u in case (ii) (eta alpha keeps alpha's relative error; eta's
        own error goes to the callers' absolute slack), rho' = rho_lam + 4 (m + 8) u in case
        (i) (the old coefficients are dropped).  p > 2 (no ``rho_lam``): rho is the
        caller's.  rho_ref (the reference's own error) always by the kappa rule."""
        if rho_lam is not None:
            base = max(self.rho, rho_lam) if case_ii else rho_lam
            self.rho = min(base + 4 * (m + 8) * self.unit, ANY_STATE)
        if case_ii:
            self.rho_ref = min(2 * math.sqrt(kappa) * self.rho_ref + 4 * kappa * (m + 8)
                               * self.ref_unit + ref_newton, ANY_STATE)
        else:
            self.rho_ref = 4 * (m + 8) * self.ref_unit + ref_newton
        self.worst_ref = max(self.worst_ref, self.rho_ref)

    def step(self, vv: Any, zz: Any, vz: Any, r: int, dvv: float, dzz: float, dvz: float,
             zz_scale: float) -> StepError:
        """How a float64 form's solution of the update may differ from the exact one
        (``step_errors``), given the error bounds of its inputs: ``dvv`` of ||v||^2
        (``norm_error``), ``dzz`` of ||z||^2, ``dvz`` of v.z (the trial's score error)."""
        return step_errors(vv, zz, vz, r, dvv, dzz, dvz, zz_scale)

    def score_error(self, m: int, magnitude: float) -> float:
        """How far a float64 score of magnitude M (m roundings) may be from the exact one."""
        if self.lost:
            return math.inf
        if magnitude == 0:
            return 0.0
        return 2.0 * self.rho * magnitude + score_error_bound(m, magnitude)

    def tests_fragile(self, margin: Any, err: float, threshold: Any,
                      err_threshold: float) -> bool:
        """The fragile rule of a trial: ``fragile`` for the mistake test and the update test
        against ``threshold``; with ``threshold`` None (the trial's example is a member of
        the last update's problem, its update test skipped) the mistake test alone."""
        if threshold is None:
            return bool(err) and within(margin, err)    # (a NaN bound is no bound)
        return self.fragile(margin, threshold, err, err_threshold)

    def fragile(self, margin: Any, threshold: Any, err: float, err_threshold: float) -> bool:
        """|margin| <= err (the mistake test) or |margin - threshold| <= err + its own.  A NaN
        bound (inf * 0 from a coefficient whose error is unbounded after a near-singular
        update: a float64 form's inf * 0 is NaN too) is no bound: fragile.  Compared exactly
        (``rounding.within``): a margin beyond float64's range is no error."""
        if err == 0 and err_threshold == 0:
            return False
        return within(margin, err) or within(margin - threshold, err + err_threshold)


class ScoreError(NamedTuple):
    """A float64 score's error: ``m`` roundings of terms of total ``magnitude``, off by at
    most ``err``."""

    m: int
    magnitude: float
    err: float


# -- the update's sensitivity (first-order perturbation of (15)/(19)) -------------------------

class StepError:
    """The update's sensitivity (``step_errors``): ``fragile`` (a float64 form may decide the
    update's feasibility otherwise, or its inputs are too inaccurate for the bounds below),
    ``rho_lam`` and ``lam_abs`` (the new coefficient lam is within rho_lam lam + lam_abs),
    ``eta_err`` (absolute error of the factor applied to the old coefficients, a possible
    change of case included)."""

    __slots__ = ("fragile", "rho_lam", "lam_abs", "eta_err")

    def __init__(self, fragile: bool, rho_lam: float, lam_abs: float, eta_err: float):
        self.fragile, self.rho_lam, self.lam_abs, self.eta_err = (fragile, rho_lam, lam_abs,
                                                                   eta_err)


#: A near-singular update: a float64 form's lam and eta may be anything (the trial is
#: fragile; if the reference updates there, ``ErrorModel.lost``: every later trial is
#: fragile and every final bound is ANY_STATE, as the HO reference's after a fragile inverse).
_SINGULAR_STEP = StepError(True, 1.0, 0.0, 0.0)


def step_errors(vv: Any, zz: Any, vz: Any, r: int, dvv: float, dzz: float, dvz: float,
                zz_scale: float, unit: float = UNIT_ROUNDOFF) -> StepError:
    """First-order perturbation of the closed forms (15)/(19), doubled for the second order.

    A float64 form computes ||v||^2, ||z||^2, v.z within dvv, dzz, dvz of the exact values
    (plus its own rounding), so D = vv zz - vz^2 and N = vv zz - r vz (eta's numerator) are
    within
        dD = 2 (vv dzz + zz dvv + dvv dzz + 2 |vz| dvz + dvz^2) + 4u (vv zz + vz^2)
        dN = 2 (vv dzz + zz dvv + dvv dzz + r dvz) + 4u (vv zz + r |vz|)
    and, exact case (ii) (N > 0), with rho_D = dD / D:
        lam = vv (r - vz) / D:   rho_lam = 2 (dvv / vv + rho_D) + 4u,  lam_abs = 2 vv dvz / D
        eta = N / D:             eta_err = 2 (dN + eta dD) / D
    (lam_abs is the cancellation in r - vz of an update whose margin is close to r: a margin
    of 1 - 1e-9 leaves lam with ~1e-7 relative error; at a fragile update test, where the
    exact r - vz may be 0 and the form's is a rounding error, it bounds the form's lam).
    Exact case (i) (N <= 0): lam = r / zz, rho_lam = 2 dzz / zz + 4u, eta_err = 0.  Near the
    case boundary (|N| <= dN) a form may take the other case: eta_err >= 2 dN / D covers the
    old coefficients, and lam moves by at most 2 |vz| dN / (D zz) (lam_(ii) - lam_(i) =
    -vz N / (D zz)), added to lam_abs.
    Fragile: ||z||^2 <= NEAR_SINGULAR times its terms' magnitude, or within 2 dzz of 0, or
    below 1e-290; or (case (ii) or near the boundary) D <= NEAR_SINGULAR vv zz or
    D <= 4 dD (a form may call the system singular, and the linearisation is void).
    A fragile update's lam and eta may be anything (``_SINGULAR_STEP``).
    """
    u = unit
    vvf, zzf, vzf = clamped_float(vv), clamped_float(zz), clamped_float(vz)
    if zzf <= NEAR_SINGULAR * zz_scale or zzf < 1e-290 or zzf <= 2 * dzz:
        return _SINGULAR_STEP
    lam_i = 2 * dzz / zzf + 4 * u
    if vvf == 0:                 # w = 0: case (i), exactly in float64 too (vv = 0.0)
        return StepError(False, lam_i, 0.0, 0.0)
    P = vvf * zzf
    D = clamped_float(vv * zz - vz * vz)
    N = clamped_float(vv * zz - r * vz)
    first = vvf * dzz + zzf * dvv + dvv * dzz
    dD = 2 * (first + 2 * abs(vzf) * dvz + dvz * dvz) + 4 * u * (P + vzf * vzf)
    dN = 2 * (first + r * dvz) + 4 * u * (P + r * abs(vzf))
    near = abs(N) <= dN
    if N <= 0 and not near:      # safely case (i)
        return StepError(False, lam_i, 0.0, 0.0)
    if D <= NEAR_SINGULAR * P or D <= 4 * dD:
        return _SINGULAR_STEP
    flip = 2 * abs(vzf) * dN / (D * zzf) if near else 0.0
    if N <= 0:                   # case (i), a form may take case (ii) with eta <= 2 dN / D
        return StepError(False, lam_i, flip, 2 * dN / D)
    rho_lam = 2 * (dvv / vvf + dD / D) + 4 * u
    return StepError(False, rho_lam, 2 * vvf * dvz / D + flip, 2 * (dN + (N / D) * dD) / D)


def clamped_float(x: Any) -> float:
    """float(x), +-ANY_STATE where x is beyond that (a near-singular update, flagged
    fragile)."""
    try:
        return max(-ANY_STATE, min(ANY_STATE, float(x)))
    except OverflowError:
        return ANY_STATE if x > 0 else -ANY_STATE


def finite(values: list[float]) -> list[float]:
    """The bounds with any NaN (inf * 0 after a near-singular update) read as inf."""
    return [v if v == v else math.inf for v in values]


def norm_error(rho: float, size: list[float], slack: list[float],
               magnitude: Callable[[int], list[float]], m: int,
               diagonal: float = 0.0) -> float:
    """How far a float64 ||v||^2 = a^T G a (or w.w) may lie from the exact one when each
    coefficient is within rho size_i + slack_i:
        2 (rho size + s)^T |G| (size (1 + rho) + s) + gamma_m size^T |G| size
    (|G|: the kernel magnitudes, plus ``diagonal`` = 1/C on the diagonal for the soft margin).
    """
    idx = [i for i, (a, s) in enumerate(zip(size, slack)) if a or s]
    err = mag = 0.0
    for i in idx:
        row = magnitude(i)
        e_i = rho * size[i] + slack[i]
        f_i = size[i] * (1 + rho) + slack[i]
        for k in idx:
            g = row[k] + (diagonal if i == k else 0.0)
            err += e_i * g * (size[k] * (1 + rho) + slack[k]) + f_i * g * (rho * size[k]
                                                                          + slack[k])
            mag += size[i] * g * size[k]
    return err + score_error_bound(m, mag)


# -- final bounds -----------------------------------------------------------------------------

def remember_bounds(trace: Trace, bounds: dict[str, Any], lost: bool = False) -> None:
    """Attach a run's final bounds to its trace (``final_error_bounds`` reads them);
    ``lost``: all ANY_STATE."""
    if lost:
        bounds = {k: [ANY_STATE] * len(v) if isinstance(v, list) else ANY_STATE
                  for k, v in bounds.items()}
    trace.final_bounds = bounds


def bound(rho: float, magnitude: float, ops: int, exact: Any) -> float:
    """2 rho M + gamma_ops M: a value whose terms have coefficient errors <= rho (relative)."""
    if magnitude == 0 and exact:
        magnitude = SMALLEST_SUBNORMAL
    if magnitude == 0:
        return 0.0
    return 2.0 * rho * magnitude + score_error_bound(ops, magnitude)


def dual_bounds(rho: float, size: list[float], rows: list[list[Fraction]], linear: bool,
                final: dict[str, Any], slack: list[float] | None = None) -> dict[str, Any]:
    """Bounds on final.w (linear kernel: w_d = sum_i alpha_i x_id, T + 8 roundings) or on
    final.alpha (each coefficient: 2 rho size_i + a rounding), plus twice the absolute slack
    of each coefficient (``step_errors``).  ``size``: the magnitudes of each coefficient's
    terms (>= |alpha_i|; the sum eta alpha_i + lam y_i may cancel)."""
    slack = slack or [0.0] * len(size)
    if not linear:
        return {"final.alpha": [bound(rho, a, 2, v) + 2 * s
                                for a, s, v in zip(size, slack, final["alpha"])]}
    T = len(rows)
    return {"final.w": [bound(rho, sum(c * abs(float(r[d])) for c, r in zip(size, rows) if c),
                              T + 8, v)
                        + 2 * sum(s * abs(float(r[d])) for s, r in zip(slack, rows) if s)
                        for d, v in enumerate(final["w"])]}
