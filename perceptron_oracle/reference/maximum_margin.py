"""What ROMMA and PUMMA share: the exact machinery of both references.  SPEC.md 14.4.

PUMMA (Ishibashi, Hatano & Takeda, "Online Learning of Approximate Maximum p-Norm Margin
Classifiers with Bias", COLT 2008) is built on ROMMA (Li & Long, "The Relaxed Online Maximum
Margin Algorithm", Machine Learning 2002): both replace the version space by two linear
constraints and solve, at each update, with v the current weight,

    w <- argmin 1/2 ||w'||^2  s.t.  w'.z >= r,  w'.v >= ||v||^2

ROMMA's problem (2) with z = y x and r = 1; PUMMA's problem (3) with p = 2, z = x_pos - x_neg
and r = 2 (its two margin constraints have equal multipliers by (6)).  So both share:

- ``solve_2norm``: the closed forms of section 3.1, case (i) eta = 0 (15) and case (ii) both
  constraints tight (19), and infeasibility (z = 0, or D = 0 in case (ii));
- ``DualWeights``: w = sum_i alpha_i phi(x_i) in dual coordinates, so every kernel works
  (the update is alpha <- eta alpha, alpha_i += lam z_i);
- ``Numbers``, ``Rows``, ``run_modes``: the exact arithmetic (below), whose choice is a
  function of the input alone;
- ``ShadowNotes``, ``near_singular``, ``sharpen_by_shadows``: the a-posteriori fragile rule
  (shadow runs) up to the first ill-conditioned update;
- the parameters ``delta`` (update iff y score (+ xi_j) < 1 - delta) and ``numbers``.

The float64 error model both follow is ``reference.maximum_margin_errors``.

Numbers (parameter ``numbers``; the trace's params record the mode actually used):

- ``fraction``: exact rationals.  Possible for the linear and polynomial kernels (PUMMA:
  p = 2 and a rational C).  The bit length of the coefficients roughly doubles at each
  case-(ii) update (IMPLEMENTING.md, "Exact ROMMA and PUMMA grow exponentially").
- ``mpmath:BITS`` (or ``mpmath``: bits chosen from the run): mpmath at BITS bits, with the
  error bound of the fragile rule carried along at unit roundoff 2^-BITS; if that bound ever
  exceeds 2^-64 (relative), the run is repeated at more bits (``_precision_for``); so is a
  run whose Newton (PUMMA, p > 2) stalls (``NotConverged``), at twice the bits, twice; then
  it raises.
- ``auto`` (default): ``fraction`` where possible, abandoned for ``mpmath`` as soon as a
  coefficient's numerator or denominator exceeds ``FRACTION_BITS`` bits.  The choice is a
  function of the input alone, so a run is reproducible from its recorded params.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

from ..errors import ParamError
from ..kernels import Kernel
from ..numbers import current_precision, number_context, precision
from ..params import Param
from ..rounding import ANY_STATE, float_or_inf
from ..trace import Trace
from .common import Gram, ShadowRuns, shadow_errors, shadow_test_errors, sharpen
from .maximum_margin_errors import NEAR_SINGULAR, StepError, clamped_float, finite, norm_error

#: ``auto`` leaves Fraction once a numerator or denominator is longer than this (bits).
FRACTION_BITS = 4096


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


# -- numbers (the ``numbers`` parameter, SPEC.md 14.4) ----------------------------------------

class TooLarge(Exception):
    """Raised by a Fraction run in ``auto`` mode when the numbers outgrow FRACTION_BITS."""


class NotConverged(ArithmeticError):
    """Raised by an mpmath run whose Newton stalls short of its tolerance (``run_modes``
    retries at more bits)."""


class Numbers:
    """One run's arithmetic: exact Fractions, or mpf in a private context at ``bits``."""

    def __init__(self, mode: str, bits: int | None = None, capped: bool = False):
        self.exact = mode == "fraction"
        self.bits = bits
        self.capped = capped
        self.ctx = None if self.exact else number_context(bits)
        self.unit = 0.0                     # the reference's own roundoff
        if not self.exact:
            assert bits is not None, "an mpmath run names its bits (run_modes)"
            self.unit = 2.0 ** -bits

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
        assert self.ctx is not None         # not exact: an mpmath run
        if isinstance(value, Fraction):
            return self.ctx.mpf(value.numerator) / value.denominator
        return self.ctx.mpf(value)

    def dot(self, a: list[Any], b: list[Any]) -> Any:
        """sum_i a_i b_i (mpmath: one rounding, ``fdot``)."""
        if self.exact:
            return sum(map(operator.mul, a, b), Fraction(0))
        assert self.ctx is not None
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
        value = self.gram.kernel.exact_of_dot(dot)  # None: not a function of x.z alone
        return self.gram(i, j) if value is None else value

    def __call__(self, j: int) -> list[Any]:
        if j not in self.values:
            self.values[j] = [self.num(self.exact(i, j)) for i in range(self.T)]
        return self.values[j]

    def magnitude(self, j: int) -> list[float]:
        if j not in self.magnitudes:
            self.magnitudes[j] = [self.gram.magnitude(i, j) for i in range(self.T)]
        return self.magnitudes[j]


R = TypeVar("R")


def run_modes(numbers: str, rational: bool, trials: int,
              run: Callable[[Numbers], tuple[R, float]]) -> R:
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


# -- the update: problem (2), and (3) with p = 2 (section 3.1) --------------------------------

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
    kappa = min(clamped_float((vv * zz + vz * vz) / D), ANY_STATE)
    return lam, eta, kappa


def _tiny(x: Any) -> Any:
    """2^-(prec/2) in the context of the mpf ``x``."""
    return x.context.ldexp(1, -(x.context.prec // 2))


# -- the state in dual coordinates (ROMMA; PUMMA with p = 2) ----------------------------------

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
        etaf = clamped_float(eta)
        slack = [(etaf * s if case_ii else 0.0) + sens.eta_err * (a * (1 + rho) + s)
                 for a, s in zip(self.size, self.slack)]
        alpha = [eta * a for a in self.alpha] if case_ii else [self.zero] * self.T
        size = [etaf * a for a in self.size] if case_ii else [0.0] * self.T   # |terms|
        for i, c in z.items():
            alpha[i] += lam * c
            slack[i] += sens.lam_abs
            size[i] += abs(clamped_float(lam))
        self.alpha, self.size, self.slack = alpha, finite(size), finite(slack)
        self.support = sum(1 for a in alpha if a)
        self.vv = r * lam + eta * self.vv
        if self.num.exact:
            self.num.check_size(alpha)


def dual_final(w: DualWeights, rows: list[list[Fraction]], kern: Kernel) -> dict[str, Any]:
    """``final``'s weights: {"w": the primal w} for the linear kernel, else {"alpha": ...}."""
    return {"w": w.primal(rows)} if kern.is_linear else {"alpha": w.alpha}


# -- the a-posteriori fragile rule (shadow runs, SPEC.md 14.5) --------------------------------

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
    if float_or_inf(zz) <= NEAR_SINGULAR * zz_scale:
        return True
    P = vv * zz
    return P != 0 and float((P - vz * vz) / P) <= SHADOW_SINGULAR


def sharpen_by_shadows(shadows: ShadowRuns | None, X: Any, y: Any, epochs: int, kernel: str,
                       params: dict[str, Any], trace: Trace, singular: list[int],
                       thresholds: list[list[Any]], tested: list[Any] | None = None
                       ) -> list[int]:
    """The a-posteriori rule (SPEC.md section 3, "shadow runs") on the a-priori fragile
    trials before the first of ``singular`` (the update tests whose problem is
    ``near_singular``); from there on the a-priori rule decides, and every trial of
    ``singular`` is fragile (a float64 form may call its problem infeasible, or solve it
    with amplified errors).  ``thresholds[t]``: the margins trial t is tested against.
    ``shadows``: the family's fast forms, from the caller (``common.ShadowRuns``); None
    keeps the a-priori fragile list.

    With ``tested`` (PUMMA's soft margin, SPEC.md 14.5): ``tested[t]`` is the exact left
    side y score + xi_j of trial t's update test (None where it makes none), compared with
    ``thresholds[t][1]``; the mistake test (``thresholds[t][0]`` = 0) is sharpened on the
    score errors, the update test on the errors of the left side as the fast forms compute
    it (``shadows.forced_tested``; ``common.shadow_test_errors``)."""
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
        errors = shadow_errors(shadows, X, y, epochs, kernel, params, trace)
        if errors is None:
            return sorted(set(fragile) | set(singular))
        return sharpen(early, errors, margins, thresholds) + late
    both = shadow_test_errors(shadows, X, y, epochs, kernel, params, trace, tested)
    if both is None:
        return sorted(set(fragile) | set(singular))
    errors, test_errors = both
    mistake = sharpen(early, errors, margins, [c[:1] for c in thresholds])
    update = sharpen(early, test_errors, [0 if v is None else v for v in tested],
                     [c[1:] if v is not None else [] for c, v in zip(thresholds, tested)])
    return sorted(set(mistake) | set(update)) + late
