"""ROMMA (Li & Long), homogeneous, 2-norm, with delta: exact.  SPEC.md, "romma and pumma".

ROMMA is the base of PUMMA (Ishibashi, Hatano, Takeda, "Online Learning of Approximate
Maximum p-Norm Margin Classifiers with Bias", COLT 2008, problem (2)).  State:
w_t (w_0 = 0).  Trial t on example j (x = x_j, y = y_j, z = y x):

    score  = w.x                          (mistake iff y score <= 0)
    update iff y score < 1 - delta        (0 <= delta < 1; a strict inequality)
    update:  w <- argmin 1/2 ||w'||^2  s.t.  w'.z >= 1,  w'.v >= ||v||^2      (problem (2))

with v = w_t.  The solution, from the Lagrangian 1/2||w||^2 + lam (1 - w.z) + eta (||v||^2 -
w.v) (stationarity w = lam z + eta v, lam > 0, eta >= 0, complementary slackness), by the two
cases of section 3.1 (with the right-hand side r = 1; PUMMA uses the same solver with r = 2):

  case (i)  eta = 0:   w = (r / ||z||^2) z,       taken iff  r (v.z) >= ||v||^2 ||z||^2
            (i.e. the candidate satisfies w.v >= ||v||^2; always when v = 0)
  case (ii) eta > 0:   D = ||v||^2 ||z||^2 - (v.z)^2,
                       lam = ||v||^2 (r - v.z) / D,   eta = (||v||^2 ||z||^2 - r v.z) / D,
                       w = lam z + eta v          (both constraints tight)
  infeasible:          z = 0, or (case (ii)) D = 0: z is a nonpositive multiple of v and no
                       w satisfies both constraints (non-separable data only).  Then nothing
                       changes and the trial is NOT an update (it is still a mistake if
                       y score <= 0).

At the boundary r v.z = ||v||^2 ||z||^2 both cases give the same w (eta = 0 in (ii)).
Here v.z = y score = the trial's margin and ||w_new||^2 = lam r + eta ||v||^2.

The example that caused the last update has margin exactly 1 (its constraint is tight, lam
> 0), so it never updates (1 >= 1 - delta), and its update test is not a fragile trial: a
fast form must not update on it either (it would re-solve (2) with v feasible, a no-op in
exact arithmetic).  Identification is by example index (another index holding the same
point is tested as usual).

First trial (w_0 = 0): score 0, a mistake, and an update iff x != 0: w_1 = y x / ||x||^2.

The reference keeps w in dual coordinates, w = sum_j alpha_j phi(x_j) (alpha_j signed: the
label is inside), so every kernel works (the update is alpha <- eta alpha, alpha_j += lam y).

``final``: {"w": [n numbers]} for the linear kernel, {"alpha": [T numbers]} (one signed dual
coefficient per example index, summed over epochs) for any other kernel.

Numbers (parameter ``numbers``; the trace's params record the mode actually used):

- ``fraction``: exact rationals.  Possible for the linear and polynomial kernels.  The bit
  length of the coefficients roughly doubles at each case-(ii) update (IMPLEMENTING.md,
  "Exact ROMMA and PUMMA grow exponentially").
- ``mpmath:BITS`` (or ``mpmath``: bits chosen from the run): mpmath at BITS bits, with the
  error bound of the fragile rule carried along at unit roundoff 2^-BITS; if that bound ever
  exceeds 2^-64 (relative), the run is repeated at more bits (``_precision_for``); so is a
  run whose Newton (PUMMA, p > 2) stalls (``NotConverged``), at twice the bits, twice; then
  it raises.
- ``auto`` (default): ``fraction`` where possible, abandoned for ``mpmath`` as soon as a
  coefficient's numerator or denominator exceeds ``FRACTION_BITS`` bits.  The choice is a
  function of the input alone, so a run is reproducible from its recorded params.

Fragile trials and final bounds: see ``ErrorModel`` and ``step_errors`` (a stated, not
rigorous, rule); its fragile trials before the first ``near_singular`` update test are then
sharpened by shadow runs (``sharpen_by_shadows``, SPEC.md 14.5).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NamedTuple

from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..numbers import current_precision, number_context, precision
from ..params import Param, ParamSchema
from ..rounding import ANY_STATE, SMALLEST_SUBNORMAL, UNIT_ROUNDOFF, score_error_bound
from ..trace import Trace
from .common import (
    Gram,
    TrialRecord,
    check_epochs,
    exact_data,
    shadow_errors,
    shadow_test_errors,
    sharpen,
)

#: ``auto`` leaves Fraction once a numerator or denominator is longer than this (bits).
FRACTION_BITS = 4096
#: A float64 form may call z = 0 or the case-(ii) system singular below this (relative).
NEAR_SINGULAR = 2.0 ** -40
#: Shadow runs stand for other float64 evaluation orders only up to the first update whose
#: 2 x 2 system is this ill-conditioned (relative: D <= SHADOW_SINGULAR ||v||^2 ||z||^2):
#: roundings of order u are amplified by at most about 1/SHADOW_SINGULAR before it.
SHADOW_SINGULAR = 2.0 ** -20
#: The mpmath mode reruns at more bits while its carried relative error exceeds this.
MPMATH_TARGET = 2.0 ** -64


def _check_numbers(value: str) -> bool:
    if value in ("auto", "fraction", "mpmath"):
        return True
    head, _, bits = value.partition(":")
    return head == "mpmath" and bits.isdigit() and int(bits) >= 53


NUMBERS = Param("numbers", "name", "auto",
                "arithmetic of the reference: auto, fraction, mpmath or mpmath:BITS "
                "(fast forms ignore it)", check=_check_numbers,
                requirement="auto, fraction, mpmath or mpmath:BITS with BITS >= 53")

DELTA = Param("delta", "rational", Fraction(0),
              "update iff y score < 1 - delta (section 3; Theorem 3's approximation factor)",
              check=lambda v: 0 <= v < 1, requirement="in [0, 1)")

PARAMS = ParamSchema(DELTA, NUMBERS)


class TooLarge(Exception):
    """Raised by a Fraction run in ``auto`` mode when the numbers outgrow FRACTION_BITS."""


class NotConverged(ArithmeticError):
    """Raised by an mpmath run whose Newton stalls short of its tolerance (``run_modes``
    retries at more bits)."""


# -- numbers ---------------------------------------------------------------------------------

class Numbers:
    """One run's arithmetic: exact Fractions, or mpf in a private context at ``bits``."""

    def __init__(self, mode: str, bits: int | None = None, capped: bool = False):
        self.exact = mode == "fraction"
        self.bits = bits
        self.capped = capped
        self.ctx = None if self.exact else number_context(bits)
        self.unit = 0.0 if self.exact else 2.0 ** -bits  # the reference's own roundoff

    @property
    def label(self) -> str:
        return "fraction" if self.exact else f"mpmath:{self.bits}"

    def __call__(self, value: Any) -> Any:
        """An exact input (Fraction, int, mpf) as a number of this run."""
        if self.exact:
            if not isinstance(value, (int, Fraction)):
                raise ParamError("numbers=fraction needs rational inputs (not the rbf "
                                 "kernel, not p > 2)")
            return Fraction(value)
        if isinstance(value, Fraction):
            return self.ctx.mpf(value.numerator) / value.denominator
        return self.ctx.mpf(value)

    def dot(self, a: list[Any], b: list[Any]) -> Any:
        """sum_i a_i b_i (mpmath: one rounding, ``fdot``)."""
        if self.exact:
            return sum(map(operator.mul, a, b), Fraction(0))
        return self.ctx.fdot(a, b)

    def check_size(self, values: Any) -> None:
        """In ``auto`` mode, abandon Fraction once the numbers grow too long."""
        if self.capped:
            for v in values:
                if (v.numerator.bit_length() > FRACTION_BITS
                        or v.denominator.bit_length() > FRACTION_BITS):
                    raise TooLarge


class Rows:
    """The exact kernel rows k(x_., x_j) in a run's numbers and their float magnitudes, each
    row computed when example j is first presented."""

    def __init__(self, gram: Gram, num: Numbers, T: int):
        self.gram, self.num, self.T = gram, num, T
        self.values: dict[int, list[Any]] = {}
        self.magnitudes: dict[int, list[float]] = {}
        self.ints: list[tuple[list[int], int]] | None = None
        if gram.kernel.is_rational:   # x_i = M_i / L_i with integer M_i: exact dots by ints
            self.ints = []
            for row in gram.rows:
                L = math.lcm(*(v.denominator for v in row))
                self.ints.append(([int(v * L) for v in row], L))

    def exact(self, i: int, j: int) -> Any:
        """k(x_i, x_j) exactly (the kernel's own evaluation, through integer dot products
        for the linear and polynomial kernels: the same value, many fewer gcds)."""
        if self.ints is None:
            return self.gram(i, j)
        (a, la), (b, lb) = self.ints[i], self.ints[j]
        dot = Fraction(sum(map(operator.mul, a, b)), la * lb)
        kern = self.gram.kernel
        if kern.name == "linear":
            return dot
        return (kern.gamma * dot + kern.coef0) ** kern.degree

    def __call__(self, j: int) -> list[Any]:
        if j not in self.values:
            self.values[j] = [self.num(self.exact(i, j)) for i in range(self.T)]
        return self.values[j]

    def magnitude(self, j: int) -> list[float]:
        if j not in self.magnitudes:
            self.magnitudes[j] = [self.gram.magnitude(i, j) for i in range(self.T)]
        return self.magnitudes[j]


def run_modes(numbers: str, rational: bool, trials: int,
              run: Callable[[Numbers], Any]) -> Any:
    """Run ``run`` in the mode ``numbers`` asks for (module docstring); returns its result.

    ``run`` returns (result, rho_ref): rho_ref the largest carried relative error of the
    reference's own numbers (0 in Fraction)."""
    if numbers == "fraction" or (numbers == "auto" and rational):
        try:
            return run(Numbers("fraction", capped=numbers == "auto"))[0]
        except TooLarge:
            pass
    if numbers.startswith("mpmath:"):
        bits = int(numbers.partition(":")[2])
        with precision(bits):
            return run(Numbers("mpmath", bits))[0]
    bits = first = _precision_for(trials)
    for _ in range(6):
        with precision(bits):
            try:
                result, rho = run(Numbers("mpmath", bits))
            except NotConverged as exc:
                if bits >= 4 * first:
                    raise NotConverged(f"{exc} at {bits} bits") from None
                bits *= 2
                continue
        if rho <= MPMATH_TARGET:
            break
        bits += 64 * math.ceil((math.log2(rho) + 64) / 64) + 64  # the bits the bound lost
    return result


def _precision_for(trials: int) -> int:
    """The first try's bits: the scoped precision, more for long runs (64 + 4 per trial)."""
    return max(current_precision(), 64 * math.ceil((64 + 4 * trials) / 64))


# -- the update (problem (2) / (3) with p = 2) -----------------------------------------------

def solve_2norm(vv: Any, zz: Any, vz: Any, r: int, exact: bool) -> tuple[Any, Any, float] | None:
    """(lam, eta, kappa) with w = lam z + eta v minimising ||w||^2 s.t. w.z >= r, w.v >= vv.

    ``vv`` = ||v||^2, ``zz`` = ||z||^2, ``vz`` = v.z.  Returns None if infeasible.  ``kappa``
    (a float >= 1) is the condition of the case-(ii) system, (vv zz + (vz)^2) / D; 1 in case
    (i).  In mpmath, D counts as 0 when it is below 2^-(bits/2) vv zz (``exact`` False).
    """
    if zz == 0:
        return None
    if vv == 0 or r * vz >= vv * zz:        # case (i): eta = 0
        return r / zz, 0 * vv, 1.0
    D = vv * zz - vz * vz                    # case (ii): eta > 0, both constraints tight
    if D <= 0 or (not exact and D <= vv * zz * _tiny(vv)):
        return None
    lam = vv * (r - vz) / D
    eta = (vv * zz - r * vz) / D
    kappa = min(_float((vv * zz + vz * vz) / D), ANY_STATE)
    return lam, eta, kappa


def _tiny(x: Any) -> Any:
    """2^-(prec/2) in the context of the mpf ``x``."""
    return x.context.ldexp(1, -(x.context.prec // 2))


# -- the error model (fragile trials, final bounds) -------------------------------------------

class ErrorModel:
    """The stated rule for how far a float64 form's state and scores may lie from the exact
    (SPEC.md, romma / pumma, N.5).

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

    p > 2 (PUMMA's primal w; no slacks), and rho_ref (the mpmath reference's own error, at
    u = 2^-bits, for both): the kappa rule

        case (i):   rho' = 4 (m + 8) u                         (w depends on z alone)
        case (ii):  rho' = 2 sqrt(kappa) rho + 4 kappa (m + 8) u  + newton

    kappa = (vv zz + vz^2) / D the condition of the 2 x 2 system (section 3.1); ``newton``
    the tolerance a p > 2 form's Newton solver is allowed (PUMMA: NEWTON_TOLERANCE kappa).
    """

    def __init__(self, unit: float = UNIT_ROUNDOFF, ref_unit: float = 0.0):
        self.rho = 0.0
        self.lost = False   # a near-singular update was taken: the state may be anything
        self.rho_ref = 0.0
        self.worst_ref = 0.0
        self.unit = unit
        self.ref_unit = ref_unit

    def update(self, case_ii: bool, kappa: float, m: int, newton: float = 0.0,
               ref_newton: float = 0.0, rho_lam: float | None = None) -> None:
        """After an update.  p = 2 (``rho_lam`` given, from ``step``): rho' = max(rho,
        rho_lam) + 4 (m + 8) u in case (ii) (eta alpha keeps alpha's relative error; eta's
        own error goes to the callers' absolute slack), rho' = rho_lam + 4 (m + 8) u in case
        (i) (the old coefficients are dropped).  p > 2 (no ``rho_lam``): the kappa rule of
        the class docstring.  rho_ref (the reference's own error) always by the kappa rule."""
        if rho_lam is not None:
            base = max(self.rho, rho_lam) if case_ii else rho_lam
            self.rho = min(base + 4 * (m + 8) * self.unit, ANY_STATE)
        elif case_ii:
            self.rho = min(2 * math.sqrt(kappa) * self.rho + 4 * kappa * (m + 8) * self.unit
                           + newton, ANY_STATE)
        else:
            self.rho = 4 * (m + 8) * self.unit
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
            return bool(err) and not abs(float(margin)) > err    # (a NaN bound is no bound)
        return self.fragile(margin, threshold, err, err_threshold)

    def fragile(self, margin: Any, threshold: Any, err: float, err_threshold: float) -> bool:
        """|margin| <= err (the mistake test) or |margin - threshold| <= err + its own.  A NaN
        bound (inf * 0 from a coefficient whose error is unbounded after a near-singular
        update: a float64 form's inf * 0 is NaN too) is no bound: fragile."""
        if err == 0 and err_threshold == 0:
            return False
        return not (abs(float(margin)) > err
                    and abs(float(margin - threshold)) > err + err_threshold)


class ScoreError(NamedTuple):
    """A float64 score's error: ``m`` roundings of terms of total ``magnitude``, off by at
    most ``err``."""

    m: int
    magnitude: float
    err: float


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
    vvf, zzf, vzf = _float(vv), _float(zz), _float(vz)
    if zzf <= NEAR_SINGULAR * zz_scale or zzf < 1e-290 or zzf <= 2 * dzz:
        return _SINGULAR_STEP
    lam_i = 2 * dzz / zzf + 4 * u
    if vvf == 0:                 # w = 0: case (i), exactly in float64 too (vv = 0.0)
        return StepError(False, lam_i, 0.0, 0.0)
    P = vvf * zzf
    D = _float(vv * zz - vz * vz)
    N = _float(vv * zz - r * vz)
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


def _float(x: Any) -> float:
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


#: The relative error assumed for a trace without final_bounds (read from a file).
FALLBACK_RHO = 2.0 ** -20


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


# -- the state in dual coordinates (ROMMA; PUMMA with p = 2) ---------------------------------

class DualWeights:
    """w = sum_i alpha_i phi(x_i) (alpha_i signed, by example index) and ||w||^2, with the
    error model's bookkeeping (``ErrorModel``, p = 2): size_i, the magnitude of alpha_i's
    terms, and slack_i, its absolute allowance near the case boundary."""

    def __init__(self, K: Rows, num: Numbers):
        self.K, self.num, self.T = K, num, K.T
        self.zero = num(0)
        self.alpha = [self.zero] * K.T
        self.size = [0.0] * K.T         # |alpha_i| as floats (rounding magnitudes)
        self.slack = [0.0] * K.T        # absolute allowances near the case boundary
        self.support = 0                # how many alpha_i are nonzero
        self.vv = self.zero             # ||w||^2

    def dot(self, j: int) -> Any:
        """w.phi(x_j)."""
        return self.num.dot(self.alpha, self.K(j))

    def primal(self, rows: list[list[Fraction]]) -> list[Any]:
        """w = sum_i alpha_i x_i (the linear kernel's weights)."""
        num = self.num
        return [num.dot(self.alpha, [num(r[d]) for r in rows]) for d in range(len(rows[0]))]

    def magnitude(self, j: int) -> float:
        """sum_i size_i |k|(x_i, x_j): the magnitude of w.phi(x_j)'s terms (the slack is
        counted apart, ``slack_error``: the score's bound 2 rho M + gamma M covers it only
        when rho >= 1/2)."""
        if not self.support:
            return 0.0
        return math.fsum(map(operator.mul, self.size, self.K.magnitude(j)))

    def slack_error(self, j: int) -> float:
        """2 sum_i slack_i |k|(x_i, x_j): the slacks' share of w.phi(x_j)'s error."""
        if not any(self.slack):
            return 0.0
        return 2 * math.fsum(map(operator.mul, self.slack, self.K.magnitude(j)))

    def norm_error(self, rho: float, m: int, diagonal: float = 0.0) -> float:
        """How far a float64 ||w||^2 may lie from the exact one (``norm_error``)."""
        return norm_error(rho, self.size, self.slack, self.K.magnitude, m, diagonal)

    def step(self, lam: Any, eta: Any, z: dict[int, int], r: int, sens: StepError,
             rho: float) -> None:
        """w <- lam z + eta w, z = sum_i z_i phi(x_i) (z_i = +-1: ROMMA's y_j x_j, PUMMA's
        x_pos - x_neg), ||w||^2 <- lam r + eta ||w||^2; the sizes scale with eta, the slacks
        take eta's absolute error times the old coefficients and lam's on z's members
        (``step_errors``, ``sens``; ``rho``: the coefficients' relative error before)."""
        case_ii = eta != 0
        etaf = _float(eta)
        slack = [(etaf * s if case_ii else 0.0) + sens.eta_err * (a * (1 + rho) + s)
                 for a, s in zip(self.size, self.slack)]
        alpha = [eta * a for a in self.alpha] if case_ii else [self.zero] * self.T
        size = [etaf * a for a in self.size] if case_ii else [0.0] * self.T   # |terms|
        for i, c in z.items():
            alpha[i] += lam * c
            slack[i] += sens.lam_abs
            size[i] += abs(_float(lam))
        self.alpha, self.size, self.slack = alpha, finite(size), finite(slack)
        self.support = sum(1 for a in alpha if a)
        self.vv = r * lam + eta * self.vv
        if self.num.exact:
            self.num.check_size(alpha)


def dual_final(w: DualWeights, rows: list[list[Fraction]], kern: Kernel) -> dict[str, Any]:
    """``final``'s weights: {"w": the primal w} for the linear kernel, else {"alpha": ...}."""
    return {"w": w.primal(rows)} if kern.is_linear else {"alpha": w.alpha}


# -- the a-posteriori fragile rule (shadow runs) ----------------------------------------------

class ShadowNotes:
    """What a run records for ``sharpen_by_shadows``: ``singular``, the update tests whose
    problem is ``near_singular``; per trial, ``thresholds`` (the margins it is tested
    against: 0 for the mistake test, then the update test's) and ``tested`` (the update
    test's exact left side, PUMMA's y score + xi_j; None where the trial makes none)."""

    def __init__(self) -> None:
        self.singular: list[int] = []
        self.thresholds: list[list[Any]] = []
        self.tested: list[Any] = []

    def clear(self) -> None:
        """Forget a run abandoned for another (``run_modes``)."""
        self.singular, self.thresholds, self.tested = [], [], []

    def trial(self, threshold: Any = None, tested: Any = None) -> None:
        """The trial's tests: the mistake test, and the update test against ``threshold``
        (None: no update test) with exact left side ``tested``."""
        self.thresholds.append([0] if threshold is None else [0, threshold])
        self.tested.append(tested)


def near_singular(vv: Any, zz: Any, vz: Any, zz_scale: float) -> bool:
    """Whether the exact update's problem is so ill-conditioned that a float64 form's
    solution may be anything (``SHADOW_SINGULAR``; ||z||^2 tiny against its terms)."""
    if float(zz) <= NEAR_SINGULAR * zz_scale:
        return True
    P = vv * zz
    return P != 0 and float((P - vz * vz) / P) <= SHADOW_SINGULAR


def sharpen_by_shadows(algorithm: str, X: Any, y: Any, epochs: int, kernel: str,
                       params: dict[str, Any], trace: Trace, singular: list[int],
                       thresholds: list[list[Any]], tested: list[Any] | None = None,
                       runner: Any = None) -> list[int]:
    """The a-posteriori rule (SPEC.md section 3, "shadow runs") on the a-priori fragile
    trials before the first of ``singular`` (the update tests whose problem is
    ``near_singular``); from there on the a-priori rule decides, and every trial of
    ``singular`` is fragile (a float64 form may call its problem infeasible, or solve it
    with amplified errors).  ``thresholds[t]``: the margins trial t is tested against.

    With ``tested`` (PUMMA's soft margin, SPEC.md 14.5): ``tested[t]`` is the exact left
    side y score + xi_j of trial t's update test (None where it makes none), compared with
    ``thresholds[t][1]``; the mistake test (``thresholds[t][0]`` = 0) is sharpened on the
    score errors, the update test on the errors of the left side as the fast forms compute
    it (``runner``: ``fast.pumma.forced_run``; ``common.shadow_test_errors``)."""
    fragile = trace.fragile or []
    cut = singular[0] if singular else len(trace.scores or [])
    early = [t for t in fragile if t < cut]
    late = sorted(set(t for t in fragile if t >= cut) | set(singular))
    if not early:
        return late
    T = trace.n_examples
    labels = list(y)
    margins = [int(labels[t % T]) * score for t, score in enumerate(trace.scores or [])]
    if tested is None:
        errors = shadow_errors(algorithm, X, y, epochs, kernel, params, trace)
        if errors is None:
            return sorted(set(fragile) | set(singular))
        return sharpen(early, errors, margins, thresholds) + late
    both = shadow_test_errors(algorithm, X, y, kernel, params, trace, tested, runner)
    if both is None:
        return sorted(set(fragile) | set(singular))
    errors, test_errors = both
    mistake = sharpen(early, errors, margins, [c[:1] for c in thresholds])
    update = sharpen(early, test_errors, [0 if v is None else v for v in tested],
                     [c[1:] if v is not None else [] for c, v in zip(thresholds, tested)])
    return sorted(set(mistake) | set(update)) + late


# -- ROMMA -----------------------------------------------------------------------------------

def romma(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", delta: Any = 0,
          numbers: Any = "auto", record_scores: bool = False) -> Trace:
    """Run ROMMA(delta) over ``epochs`` passes of (X, y); returns the reference trace."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    p = PARAMS.resolve(dict(delta=delta, numbers=numbers))
    if p["numbers"] == "fraction" and not kern.is_rational:
        raise ParamError("parameter numbers=fraction needs a rational kernel (not rbf)")
    shadow = ShadowNotes()

    def run(num: Numbers) -> tuple[Trace, float]:
        shadow.clear()
        return _romma_run(rows, labels, epochs, kern, p, num, True, shadow=shadow)

    trace = run_modes(p["numbers"], kern.is_rational, epochs * len(rows), run)
    trace.fragile = sharpen_by_shadows("romma", X, y, epochs, kern.spec, p, trace,
                                       shadow.singular, shadow.thresholds)
    if not record_scores:
        trace.scores = None
    return trace


def _romma_run(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
               p: dict[str, Any], num: Numbers, record_scores: bool,
               observer: Any = None, shadow: ShadowNotes | None = None
               ) -> tuple[Trace, float]:
    """The trial loop (module docstring), with w in dual coordinates (``DualWeights``);
    ``_RommaErrors`` is the float64 error model along it, ``shadow`` receives what
    ``sharpen_by_shadows`` needs.  Returns the trace and the reference's own largest
    relative error (``run_modes``)."""
    w = DualWeights(Rows(Gram(kern, rows), num, len(rows)), num)
    threshold = num(1 - p["delta"])
    errors = _RommaErrors(w, rows, kern, num, threshold)
    record = TrialRecord(labels, epochs, record_scores)
    shadow = ShadowNotes() if shadow is None else shadow
    last = -1                    # the example of the last update (its margin is exactly 1)
    for t, j, label in record.trials():
        score = w.dot(j)                                  # w.x_j
        margin = label * score                            # y score = v.z, z = y x_j
        record.score(score)
        test = None if j == last else threshold           # the last update's: no update test
        shadow.trial(test)
        error = errors.score_error(j)                     # of a float64 score
        if errors.fragile(margin, error, test):
            record.flag(t)
        if margin <= 0:                                   # mistake iff y score <= 0
            record.mistakes.append(t)
        if test is not None and margin < threshold:       # update iff y score < 1 - delta
            if errors.ill_conditioned(j, margin):
                shadow.singular.append(t)
            sens = errors.step(j, margin, error)
            if sens.fragile:
                record.flag(t)
            solution = solve_2norm(w.vv, w.K(j)[j], margin, 1, num.exact)    # problem (2)
            if solution is not None:
                lam, eta, kappa = solution
                w.step(lam, eta, {j: label}, 1, sens, errors.model.rho)   # w = lam z + eta v
                errors.updated(sens, eta != 0, kappa, error.m)
                record.updates.append(t)
                last = j
                if observer:
                    observer({"t": t, "alpha": list(w.alpha), "case_ii": eta != 0,
                              "w": w.primal(rows)})
    final = dual_final(w, rows, kern)
    trace = record.trace("romma", kern, dict(p, numbers=num.label), final)
    remember_bounds(trace, dual_bounds(errors.model.rho, w.size, rows, kern.is_linear, final,
                                       w.slack), errors.model.lost)
    return trace, errors.model.worst_ref


class _RommaErrors:
    """The float64 error model along a ROMMA run (``ErrorModel`` on ``DualWeights``): each
    score's error bound, the fragile tests, the update's sensitivity."""

    def __init__(self, w: DualWeights, rows: list[list[Fraction]], kern: Kernel,
                 num: Numbers, threshold: Any):
        self.w, self.rows, self.kern = w, rows, kern
        self.model = ErrorModel(ref_unit=num.unit)
        self.threshold_error = score_error_bound(1, float(threshold))

    def score_error(self, j: int) -> ScoreError:
        """A float64 score w.x_j: its roundings m, its terms' magnitude, its error bound."""
        w = self.w
        m = (len(self.rows[0]) + 8) * self.kern.depth + w.support + 8
        magnitude = w.magnitude(j)
        return ScoreError(m, magnitude, self.model.score_error(m, magnitude)
                          + w.slack_error(j))

    def fragile(self, margin: Any, score: ScoreError, threshold: Any) -> bool:
        """Whether a float64 form may decide the mistake test, or the update test against
        ``threshold`` (None: none), otherwise (``ErrorModel.tests_fragile``)."""
        return self.model.tests_fragile(margin, score.err, threshold,
                                        self.threshold_error if score.magnitude else 0.0)

    def ill_conditioned(self, j: int, margin: Any) -> bool:
        """Whether the update's problem (2) is ``near_singular`` (not on a zero instance of
        the linear kernel: every product with it is exactly 0 in any evaluation order, so
        every float64 form sees z = 0 and skips the update too)."""
        w = self.w
        zero_instance = self.kern.is_linear and not any(self.rows[j])
        return near_singular(w.vv, w.K(j)[j], margin, w.K.magnitude(j)[j]) and not zero_instance

    def step(self, j: int, margin: Any, score: ScoreError) -> StepError:
        """The update's sensitivity (``step_errors``) from the errors of ||v||^2, ||z||^2 and
        v.z = the margin (the trial's score error)."""
        w, model = self.w, self.model
        zz_scale = w.K.magnitude(j)[j]
        return model.step(w.vv, w.K(j)[j], margin, 1, w.norm_error(model.rho,
                                                                   score.m + w.support),
                          score_error_bound(score.m, zz_scale), score.err, zz_scale)

    def updated(self, sens: StepError, case_ii: bool, kappa: float, m: int) -> None:
        """After the update (``ErrorModel.update``); a near-singular one loses the state."""
        self.model.lost = self.model.lost or sens.fragile
        self.model.update(case_ii, kappa, m, rho_lam=sens.rho_lam)


def history(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
            **params: Any) -> tuple[Trace, list[dict[str, Any]]]:
    """The reference trace and the state after every update: dicts with t, alpha, w (the
    primal w = sum_j alpha_j x_j, meaningful for the linear kernel), case_ii."""
    rows, labels = exact_data(X, y)
    kern = parse_kernel(kernel)
    par = PARAMS.resolve(params)
    states: list[dict[str, Any]] = []

    def run(num: Numbers) -> tuple[Trace, float]:
        states.clear()
        return _romma_run(rows, labels, check_epochs(epochs), kern, par, num, True,
                          states.append)

    return run_modes(par["numbers"], kern.is_rational, epochs * len(rows), run), states


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """How far a float64 form's final w (or alpha) may lie from the exact one.

    For a trace the reference returned, the bounds its run derived (``trace.final_bounds``):
    w_d = sum_i alpha_i x_id with every coefficient off by at most rho |alpha_i|
    (ErrorModel, the final rho), then T + 8 roundings: 2 rho M_d + gamma_{T+8} M_d,
    M_d = sum_i |alpha_i x_id|; alpha_i: 2 rho |alpha_i| + a rounding.  For any other trace
    (read from a file) the coefficients behind w are unknown: rho = FALLBACK_RHO and
    M_d = |w_d| + ||w||_2 max_i |x_id| T.
    """
    known = trace.final_bounds
    if known is not None:
        return known
    rows = [[abs(float(v)) for v in row] for row in
            (X.toarray() if hasattr(X, "toarray") else X).tolist()]
    out: dict[str, Any] = {}
    if "alpha" in trace.final:
        out["final.alpha"] = [bound(FALLBACK_RHO, abs(float(a)), 2, a)
                              for a in trace.final["alpha"]]
    if "w" in trace.final:
        w = trace.final["w"]
        norm = math.sqrt(sum(float(v) ** 2 for v in w))
        out["final.w"] = [bound(FALLBACK_RHO, abs(float(v)) + norm * len(rows)
                                * max(r[d] for r in rows), len(rows) + 8, v)
                          for d, v in enumerate(w)]
    return out
