"""What a run of the exact reference costs, estimated before it starts (``run --max-seconds``).

The reference computes in Fractions and in mpmath; some runs it is asked for would take hours
or years (a polynomial kernel of degree 10^9, 10^9 epochs, ROMMA over thousands of examples).
:func:`check` refuses such a run, in one line naming ``--max-seconds`` and ``--impl fast``,
before any of its work; :func:`estimate` is the number it compares.

Each family's model is one formula in *work units*: the inner operations of its trial loop
(an operation on the reference's numbers, a kernel evaluation) times the cost of one such
operation on numbers of the run's size, relative to a small Fraction operation:

- ``N = epochs x T`` trials; ``M`` the updates (mistakes), unknown before the run: the
  estimate takes the upper bound ``M = N`` (every trial an update);
- ``S = min(M, T)``: the support of a dual state indexed by example (the Perceptron, ROMMA,
  PUMMA, ALMA's dual); SOP's and HO's kernel forms keep a matrix over the M mistakes;
- ``b``: the bits of an exact kernel value, ``degree x (2 bx + log2 n + 8 + the bits of
  gamma and coef0)``, ``bx`` the bits of the data's numbers as rationals (53 plus the
  largest binary exponent, by magnitude);
- ``rational(bits) = 1 + (bits / 2048)^1.6`` (CPython's big integers: Karatsuba products,
  and the gcds of Fraction); ``mp(P) = 4 (1 + P / 4096)`` for mpmath at P bits (the
  scoped ``numbers.precision``, 256 by default);
- ``kev``, one exact kernel evaluation: ``n/8 rational(b)`` (integer dot products) for the
  rational kernels, ``n + 20 mp(P)`` (a Fraction distance and an exponential) for the
  Gaussian one.

The formulas (``cost(bits)`` is ``rational(bits)``, or ``mp(P)`` for the Gaussian kernel):

- perceptron (dual scoring over the support, the Gram entries cached):
  ``N S cost(b) + T S kev``;
- pnorm_perceptron (primal, linear kernel): ``N n rational(2 b)``, ``N n mp(P)`` for a
  non-integer p;
- alma: linear kernel ``N n mp(P) w``, w = 10 (p = 2) or 120 (p != 2: powers) operations a
  feature a trial; other kernels ``N S mp(P) + T S kev``;
- second_order, linear kernel: ``N n^2 rational(min(M, n) b)`` (A^-1 over det A);
  higher_order, linear kernel: ``N n^2 (1 + M b / 4096)`` (integers over a denominator that
  gains about b bits a mistake), ``N n^2 10 mp(P)`` for p != 2;
  both with another kernel: ``N M^2 cost(M b) + T M kev`` (times ``SOP_KERNEL_WEIGHT``
  for SOP: its kernel route's units were measured cheaper);
- romma / pumma (the dual over the support; a kernel row of T numbers per example seen):
  ``(N S + min(N, T) T) c + min(N, T) T kev`` (pumma with p != 2: ``+ 10 N n c``), c the
  cost of its numbers: ``mp(B)`` for ``numbers=mpmath:B``; for ``auto`` (Fractions until
  4096 bits, then mpmath at ``64 + 4 N`` bits, ``reference.maximum_margin``) the larger of
  ``mp(64 + 4 N)`` and ``rational(min(b 2^M, 4096))``; for ``numbers=fraction``
  ``rational(b 2^(M/2))`` (the bits double per case-(ii) update, taken as half of them).

Seconds are ``FIXED_SECONDS + seconds_per_unit x work``, each family's :class:`CostModel`
(``PERCEPTRON``, ..., ``PUMMA`` below) holding its formula and constant.  The constants were
calibrated on the machine this was written on (2 cores, CPython 3.11, mpmath on Python
integers) by ``tests/budget_calibration.py``: it times small runs (T = 25 .. 400, n = 5 and
30, linear, cubic and Gaussian kernels, p = 2 and 3, the first rows of wdbc) with the model
fed each run's *actual* update count.  The largest measured/work ratios (seconds per unit) on
an otherwise idle machine were perceptron 1.9e-5, pnorm_perceptron 2.1e-5, alma 1.7e-5,
higher_order 1.8e-6, second_order 2.2e-6 (7.4e-6 beside a concurrent run), romma 5.1e-6,
pumma 1.0e-5, rounded up to the models' constants below; the smallest were 2 to 50 times lower
(the models are upper bounds).  With the bound ``M = N`` the estimate is higher again, by
(N / M) to (N / M)^3.6.  On a machine loaded by other work runs took up to 3 times longer.
``tests/test_budget.py`` checks estimates against measured runs, and that the runs that
cannot finish are refused in under a second while every golden case, fuzz draw and
built-in data set (but ``digits``) is accepted.

The aim is to refuse runs that would take hours, not to predict seconds: the estimate is an
upper bound for most data (its factor N / M is large on data that is nearly separable).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import OracleInputError
from .kernels import Kernel, parse_kernel
from .numbers import current_precision

#: The command line's default ``--max-seconds`` (the library's ``max_seconds=None`` checks
#: nothing): half an hour of estimated work.  The estimate is an upper bound (every trial
#: an update), 5-50 times an ordinary run's time (far more for SOP and HO with a non-linear
#: kernel on nearly separable data): every built-in data set but ``digits`` runs with every
#: family (at most a few seconds each; estimates up to 210 s), and so do every golden case
#: (the largest estimate 171 s) and every fuzz draw.  On the calibration's data (n = 5)
#: ROMMA is refused from about 3,050 examples (measured: 29 s at 1,600, growing as T^2.3:
#: about 2.5 minutes at 3,200), SOP with the Gaussian kernel from about 700 (6 s at 400).
DEFAULT_MAX_SECONDS = 1800.0

#: Seconds every run costs whatever its size (the fragile rule's shadow runs, set-up).
FIXED_SECONDS = 0.05

#: SOP's kernel route costs this much of a work unit of its linear route (calibrated:
#: measured/work ratios of 1.3e-7 to 8.4e-7 with kernels, 6e-7 to 7.4e-6 without).
SOP_KERNEL_WEIGHT = 0.15

#: ``numbers=auto`` leaves Fraction for mpmath beyond this many bits
#: (``reference.maximum_margin.FRACTION_BITS``).
_FRACTION_BITS = 4096


class BudgetError(OracleInputError):
    """A run of the exact reference whose estimated time exceeds the limit."""


@dataclass(frozen=True)
class Estimate:
    """The estimated seconds of a run and what the estimate took (for the message)."""

    seconds: float
    trials: int
    detail: str


def rational(bits: float) -> float:
    """The cost of a Fraction operation on ``bits``-bit numbers, relative to a small one
    (bits beyond 10^100 count as 10^100: the estimate stays a finite float)."""
    return 1.0 + math.pow(min(bits, 1e100) / 2048.0, 1.6)


def mp(bits: float) -> float:
    """The cost of an mpmath operation at ``bits`` bits of precision, relative to a small
    Fraction operation (four times one, and more with the bits)."""
    return 4.0 * (1.0 + bits / 4096.0)


def data_bits(X: Any) -> int:
    """The bits of the data's numbers read as rationals: 53 (a float64's significand) plus
    the largest binary exponent by magnitude (a denominator 2^k for |x| < 1)."""
    values = X.data if hasattr(X, "data") and hasattr(X, "indptr") else np.asarray(X)
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values) & (values != 0)]
    if values.size == 0:
        return 1
    exponents = np.frexp(values)[1]
    return 53 + int(np.max(np.abs(exponents)))


def kernel_bits(kern: Kernel, bx: int, n: int) -> float:
    """The bits of an exact kernel value: a dot product of two rows (2 bx + log2 n), as
    the kernel grows it (``Kernel.value_bits``: the polynomial kernel raises it to its
    degree, gamma and coef0 a few bits more each)."""
    return kern.value_bits(2.0 * bx + math.log2(max(n, 1)) + 8.0)


def kernel_evaluation(kern: Kernel, n: int, b: float, P: int) -> float:
    """The cost of one exact kernel evaluation: n products of the row's numbers (CPython
    integers, an eighth of a Fraction operation each) for the rational kernels; n Fraction
    operations and an exponential (about 20 mpmath operations) for the others (the
    Gaussian)."""
    if not kern.is_rational:
        return n + 20 * mp(P)
    return n / 8 * rational(b)


@dataclass(frozen=True)
class RunSize:
    """What a cost model reads of a run (module docstring): ``N`` trials, ``M`` updates (the
    bound ``N`` before the run), ``S = min(M, T)``, ``T`` examples of ``n`` features, ``b``
    the bits of a kernel value, ``P`` the mpmath precision, ``kev`` one kernel evaluation."""

    N: int
    M: int
    S: int
    T: int
    n: int
    b: float
    P: int
    kern: Kernel
    kev: float
    params: dict[str, Any]

    @property
    def p(self) -> Any:
        return self.params.get("p", 2)

    def cost(self, bits: float) -> float:
        """One operation on the run's numbers: ``rational(bits)``, or ``mp(P)`` when the
        kernel is not rational."""
        return rational(bits) if self.kern.is_rational else mp(self.P)


@dataclass(frozen=True)
class CostModel:
    """A family's cost model: ``work(size) -> (work units, a short description)`` and the
    seconds one unit takes (calibrated: module docstring)."""

    seconds_per_unit: float
    work: Callable[[RunSize], tuple[float, str]]


def perceptron_work(r: RunSize) -> tuple[float, str]:
    """Dual scoring over the support, the Gram entries cached."""
    return (r.N * r.S * r.cost(r.b) + r.T * r.S * r.kev,
            f"{r.N} trials x a support of up to {r.S}, kernel values of ~{r.b:.3g} bits")


def _kernel_dual_work(r: RunSize) -> tuple[float, str]:
    return r.N * r.S * mp(r.P) + r.T * r.S * r.kev, f"{r.N} trials x a support of up to {r.S}"


def pnorm_perceptron_work(r: RunSize) -> tuple[float, str]:
    """Primal: a Fraction operation a feature, mpmath for a non-integer p."""
    if not r.kern.is_linear:
        return _kernel_dual_work(r)
    each = mp(r.P) if _needs_mpmath(r.p) else rational(2 * r.b)
    return r.N * r.n * each, f"{r.N} trials x {r.n} features"


def alma_work(r: RunSize) -> tuple[float, str]:
    """The projection and norms in mpmath: 10 operations a feature, 120 with p != 2."""
    if not r.kern.is_linear:
        return _kernel_dual_work(r)
    weight = 10 if r.p == 2 else 120
    return r.N * r.n * mp(r.P) * weight, f"{r.N} trials x {r.n} features"


def _matrix_work(r: RunSize, growth: float, kernel_weight: float) -> tuple[float, str]:
    if r.kern.is_linear:
        return (r.N * r.n * r.n * growth,
                f"{r.N} trials x an {r.n} x {r.n} matrix over up to {r.M} updates")
    units = r.N * r.M * r.M * r.cost(r.M * r.b) + r.T * r.M * r.kev
    return units * kernel_weight, f"{r.N} trials x a {r.M} x {r.M} matrix over the mistakes"


def higher_order_work(r: RunSize) -> tuple[float, str]:
    """A_k: integers over a denominator that gains b bits a mistake (p = 2); B_k in mpmath,
    powers per entry (p != 2)."""
    return _matrix_work(r, 1 + r.M * r.b / 4096 if r.p == 2 else 10 * mp(r.P), 1.0)


def second_order_work(r: RunSize) -> tuple[float, str]:
    """A^-1: entries over det(A), at most n rows' bits."""
    return _matrix_work(r, rational(min(r.M, r.n) * r.b), SOP_KERNEL_WEIGHT)


def _maximum_margin_numbers(r: RunSize) -> tuple[float, str]:
    """ROMMA's and PUMMA's cost of one operation on their numbers, and its description."""
    numbers = str(r.params.get("numbers", "auto"))
    if numbers.startswith("mpmath:"):
        return mp(int(numbers.partition(":")[2])), numbers
    if numbers == "fraction" and r.kern.is_rational:
        bits = r.b * 2.0 ** min(r.M / 2, 300)
        return rational(bits), f"Fractions of ~{bits:.3g} bits"
    mp_bits = max(r.P, 64 * math.ceil((64 + 4 * r.N) / 64))
    fraction = (rational(min(r.b * 2.0 ** min(r.M, 60), _FRACTION_BITS))
                if r.kern.is_rational else 1.0)
    return max(mp(mp_bits), fraction), f"mpmath at {mp_bits} bits"


def romma_work(r: RunSize) -> tuple[float, str]:
    """The dual over the support; a kernel row of T numbers per example seen."""
    each, numbers = _maximum_margin_numbers(r)
    seen = min(r.N, r.T)
    units = r.N * r.S * each + seen * r.T * (each + r.kev)
    return units, f"{r.N} trials x a support of up to {r.S}, {numbers}"


def pumma_work(r: RunSize) -> tuple[float, str]:
    """ROMMA's, plus the p-norm link's powers for p != 2 (10 operations a feature)."""
    units, detail = romma_work(r)
    if r.p != 2:
        units += r.N * r.n * _maximum_margin_numbers(r)[0] * 10
    return units, detail


PERCEPTRON = CostModel(2e-5, perceptron_work)
PNORM_PERCEPTRON = CostModel(2.5e-5, pnorm_perceptron_work)
ALMA = CostModel(2e-5, alma_work)
HIGHER_ORDER = CostModel(2e-6, higher_order_work)
SECOND_ORDER = CostModel(8e-6, second_order_work)
ROMMA = CostModel(6e-6, romma_work)
PUMMA = CostModel(1.2e-5, pumma_work)


def work(cost: CostModel, *, T: int, n: int, epochs: int, kern: Kernel, bx: int,
         params: dict[str, Any], updates: int | None = None,
         precision: int | None = None) -> tuple[float, str]:
    """The work units of a run under ``cost`` (module docstring) and a short description;
    ``updates`` None takes the bound (every trial an update)."""
    N = epochs * T
    M = N if updates is None else min(updates, N)
    P = precision or current_precision()
    b = kernel_bits(kern, bx, n)
    units, detail = cost.work(RunSize(N=N, M=M, S=min(M, T), T=T, n=n, b=b, P=P, kern=kern,
                                      kev=kernel_evaluation(kern, n, b, P), params=params))
    return float(units), detail


def _needs_mpmath(p: Any) -> bool:
    """Whether the p-norm Perceptron's link needs mpmath (a non-integer p)."""
    try:
        return bool(int(p) != p)
    except (TypeError, ValueError):
        return True


def estimate(cost: CostModel, X: Any, *, epochs: int = 1, kernel: Any = "linear",
             updates: int | None = None, **params: Any) -> Estimate:
    """The estimated seconds of an exact reference's run under ``cost`` on X (a 2-D
    array, CSR matrix or nested lists) with its resolved ``params`` (module docstring);
    ``updates`` None takes the upper bound, every trial an update."""
    if not (hasattr(X, "shape") and len(X.shape) == 2):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimension(s)")
    T, n = int(X.shape[0]), int(X.shape[1])
    kern = parse_kernel(kernel)
    units, detail = work(cost, T=T, n=n, epochs=int(epochs), kern=kern, bx=data_bits(X),
                         params=params, updates=updates)
    return Estimate(FIXED_SECONDS + cost.seconds_per_unit * units, int(epochs) * T,
                    detail)


def check(algorithm: str, cost: CostModel, X: Any, *, epochs: int = 1, kernel: Any = "linear",
          max_seconds: float, runs: int = 1, **params: Any) -> Estimate | None:
    """Raise :class:`BudgetError` (one line) if ``runs`` runs' estimate under ``cost`` (the
    family ``algorithm``'s model) exceeds ``max_seconds``; return the estimate otherwise.
    X, epochs or a kernel that the reference would refuse (not 2-D or not numeric, epochs
    not a positive integer) give None: the reference names the problem."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        return None
    try:
        found = estimate(cost, X, epochs=epochs, kernel=kernel, **params)
    except (TypeError, ValueError, OverflowError):
        return None
    seconds = found.seconds * runs
    if not seconds <= max_seconds:
        several = f"{runs} one-vs-rest runs of " if runs > 1 else ""
        raise BudgetError(
            f"the exact reference would take about {seconds:.2g} s for {several}"
            f"{algorithm} ({found.detail}), beyond --max-seconds {max_seconds:g}: use "
            "--impl fast, a smaller run, or a larger --max-seconds")
    return found
