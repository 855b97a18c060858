"""The general Perceptron of Khardon & Wachman (2007), fast and exact: the trace of
``reference.perceptron`` (Figures 1 and 2; SPEC.md, "perceptron"), trial for trial.

Linear kernel.  A float64 X is dyadic: scaled by D = 2^E (a Fraction X by the common
denominator D) every row is an integer vector a_j, and the state is kept in the PRIMAL as the
integer vector v = sum_j alpha_j y_j a_j (section 2.1's w = eta v / D).  Every score is then
one integer over the common denominator Q of the parameters,

    Q score_t = Q b0 + Q eta C sum_j alpha_j y_j + (Q eta / D^2) a_t.v
                (+ y_t (Q lam / D^2) |a_t|^2 with the lambda-trick)

and the update test y_t score_t <= tau an integer comparison.

Filtered trials.  Beside the exact state the run keeps a float64 copy v_f of v / D and
V_f = sum_j alpha_j |x_j| (componentwise).  For a block of upcoming trials (rows J) one float
product X_J v_f gives each margin with a rigorous error bound (Higham's gamma_m: every term
and partial sum of X_J v_f is bounded by |X_J| V_f, which is also the reference's fragile
magnitude sum_i alpha_i |k(x_i, x_t)| up to its own roundings).  A trial whose margin
interval lies above tau and above the largest error bound the reference's fragile rule
(``reference.perceptron._is_fragile``) can give it is a survival, decided without exact
work; the first trial that is not so certified is run exactly.  Its fragile test is decided
on the bracket [S_lo, S_up] of the reference's float magnitude S (the rule is monotone in S),
and only when the bracket does not decide, by the reference's own ``_is_fragile`` on its
``Gram`` (the same float sum, bit for bit).

A polynomial (any rational) kernel runs in the dual on integer kernel values (``_KernelRun``),
every trial exactly; the Gaussian kernel runs the reference itself (``reference.perceptron``).
"""

from __future__ import annotations

import bisect
import math
from fractions import Fraction
from operator import add, mul, sub
from typing import Any

import numpy as np
from flint import fmpz_mat

from ..kernels import Kernel, PolynomialKernel, parse_kernel
from ..reference import perceptron as reference
from ..reference.common import Gram, TrialRecord, check_epochs, exact_data
from ..reference.perceptron import PARAMS, PerceptronParams, final_error_bounds, predict
from ..rounding import (
    SMALLEST_SUBNORMAL,
    UNIT_ROUNDOFF,
    exact_in_float64,
    magnitude_float,
    max_dyadic_exponent,
    product_magnitude,
    score_error_bound,
)
from ..trace import Trace

__all__ = ["PARAMS", "final_error_bounds", "perceptron", "predict"]

#: Relative slack on every float bound of the filter (far above the few roundings of the
#: bounds themselves: a float comparison with it decides the exact one).
SLACK = 1e-12
#: Absolute slack: covers every underflow of the filter's float products (2^-1075 each).
TINY = 2.0 ** -1000
#: The first block of trials the filter certifies at once (then twice the last run).
FIRST_BLOCK = 16
LARGEST_BLOCK = 1024


def perceptron(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
               eta: Any = 1, b0: Any = 0, C: Any = 0, tau: Any = 0, lam: Any = 0,
               alpha_bound: Any = None, record_scores: bool = False) -> Trace:
    """Run the Perceptron over ``epochs`` passes of (X, y); the reference's exact trace."""
    data = IntegerData.read(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(eta=eta, b0=b0, C=C, tau=tau, lam=lam, alpha_bound=alpha_bound))
    if not kern.is_rational:
        return reference.perceptron(X, y, epochs=epochs, kernel=kernel, eta=eta, b0=b0, C=C,
                                    tau=tau, lam=lam, alpha_bound=alpha_bound,
                                    record_scores=record_scores)
    data.floats()  # the reference's Gram reads every float(x) here (OverflowError beyond)
    exact_floats = _float64_is_exact(kern, data, par, epochs * data.T)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow fails the filter
        if kern.is_linear:
            run = LinearRun(data, par, epochs, record_scores, exact_floats)
        else:
            run = _KernelRun(data, par, epochs, record_scores, exact_floats, kern)
        run.run()
    final = _final_state(run, par, kern.is_linear)
    return run.record.trace("perceptron", kern, PARAMS.as_dict(par), final)


class IntegerData:
    """The rows as integer vectors a_j = D x_j over one common denominator D (a power of two
    for float64 data), converted row by row when a trial needs them; the float64 rows, their
    absolute values and the rows' dyadic exponent (None when D is not a power of two)."""

    def __init__(self, labels: list[int], T: int, n: int):
        self.labels, self.T, self.n = labels, T, n
        self.D = 1
        self.e_x: int | None = 0
        self.X_f: Any = np.zeros((T, n))
        self._rows: list[list[int] | None] = [None] * T
        self._odd: Any = None        # float64 data: X = odd 2^shift, odd an integer
        self._shift: Any = None
        self._scaled: Any = None     # D X as float64 integers, where none overflows
        self._fractions: list[list[Fraction]] | None = None

    @classmethod
    def read(cls, X: Any, y: Any) -> IntegerData:
        """The data of (X, y), checked as ``exact_data`` checks them (its errors): a float64
        array with +-1 labels directly, anything else through ``exact_data``."""
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == np.float64 \
                and isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "iu" \
                and X.shape[0] == y.shape[0] and X.shape[0] and X.shape[1] \
                and np.isfinite(X).all() and np.isin(y, (-1, 1)).all():
            data = cls([int(v) for v in y.tolist()], X.shape[0], X.shape[1])
            data._scale_floats(np.ascontiguousarray(X))
            return data
        rows, labels = exact_data(X, y)
        data = cls(labels, len(rows), len(rows[0]))
        data._scale_fractions(rows)
        return data

    def _scale_floats(self, X: Any) -> None:
        """D = 2^E, E the largest dyadic exponent of X's entries (0 for integers)."""
        self.X_f = X
        if (X == np.rint(X)).all():
            E, shifted = 0, None
        else:
            mant, exp = np.frexp(X)
            m = np.ldexp(mant, 53).astype(np.int64)         # X = m 2^(exp - 53), exactly
            low = m & -m                                    # the lowest set bit of m
            zeros = np.where(m != 0, np.log2(np.where(low > 0, low, 1)).astype(np.int64), 0)
            shift = exp.astype(np.int64) - 53 + zeros       # X = (m >> zeros) 2^shift
            nonzero = m != 0
            E = max(0, int(-shift[nonzero].min())) if nonzero.any() else 0
            shifted = (m >> zeros, np.where(nonzero, shift + E, 0))
        self.D, self.e_x = 1 << E, E
        with np.errstate(over="ignore"):
            scaled = np.ldexp(X, E)                         # D X: integers, exact below 2^1024
        if np.isfinite(scaled).all():
            self._scaled = scaled
        else:   # D X beyond float64 (so E > 0): odd << shift, entry by entry
            assert shifted is not None
            self._odd, self._shift = shifted

    def _scale_fractions(self, rows: list[list[Fraction]]) -> None:
        D = math.lcm(*(v.denominator for row in rows for v in row))
        self.D = D
        self.e_x = D.bit_length() - 1 if D & (D - 1) == 0 else None
        self._rows = [[v.numerator * (D // v.denominator) for v in row] for row in rows]
        self._fractions = rows
        self.X_f = None

    def floats(self) -> None:
        """The float64 rows (a Fraction x as float(x), as the reference's Gram reads it)."""
        if self.X_f is None:
            assert self._fractions is not None
            self.X_f = np.array([[float(v) for v in row] for row in self._fractions])

    def radius(self) -> tuple[float, float]:
        """(R^2, max |x|) as the reference's exactness checks compute them: R^2 the largest
        sum(float(v) * float(v) for v in row), in order, times 1 + 1e-12."""
        X_f = self.X_f
        with np.errstate(over="ignore"):
            squares = X_f[:, 0] * X_f[:, 0]
            for k in range(1, self.n):
                squares = squares + X_f[:, k] * X_f[:, k]
        return float(squares.max()) * (1 + 1e-12), float(np.abs(X_f).max())

    def row(self, j: int) -> list[int]:
        """a_j, the integer row D x_j."""
        out = self._rows[j]
        if out is None:
            if self._scaled is not None:
                out = list(map(int, self._scaled[j].tolist()))
            else:
                out = [o << s for o, s in zip(self._odd[j].tolist(), self._shift[j].tolist())]
            self._rows[j] = out
        return out

    def fractions(self) -> list[list[Fraction]]:
        """The rows as ``exact_data`` gives them."""
        if self._fractions is None:
            self._fractions = [[Fraction(v) for v in row] for row in self.X_f.tolist()]
        return self._fractions


def _float64_is_exact(kern: Kernel, data: IntegerData, par: PerceptronParams,
                      max_updates: int) -> bool:
    """``reference.perceptron._float64_is_exact`` for the linear kernel, on the integer data:
    the rows' dyadic exponent is log2 D, and R^2 and max |x| the same float64 sums."""
    r2, x_max = data.radius()
    e_x = data.e_x
    values = {"eta": par.eta, "b0": par.b0, "C": par.C, "tau": par.tau, "lam": par.lam}
    exponents = {name: max_dyadic_exponent([v]) for name, v in values.items()}
    e_kernel = kern.value_exponent(e_x)
    if e_x is None or e_kernel is None or any(v is None for v in exponents.values()):
        return False
    e = {name: v for name, v in exponents.items() if v is not None}
    exponent = max(e["eta"] + e_kernel, e["eta"] + e["C"], e["b0"], e["lam"] + e_kernel,
                   e["tau"], e["eta"] + e_x)
    k_max = kern.exact_value_bound(r2, e_kernel)
    if k_max is None:
        return False
    eta, C = float(par.eta), float(par.C)
    magnitude = (abs(float(par.b0)) + abs(eta * C) * max_updates
                 + eta * max_updates * (k_max + x_max) + float(par.lam) * k_max
                 + float(par.tau))
    return exact_in_float64(exponent, magnitude)


def ratio(numerator: int, denominator: int) -> float:
    """numerator / denominator correctly rounded (CPython's int / int), an infinity of its
    sign beyond float64's range."""
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf if (numerator > 0) == (denominator > 0) else -math.inf


def _normal_or_zero(value: float) -> bool:
    """Whether a parameter's float64 is within a relative 2^-53 of it (not subnormal, not
    infinite): the filter's error model assumes it."""
    return value == 0 or 2.0 ** -1022 <= abs(value) < math.inf


class LinearRun:
    """The trial loop of Figures 1 and 2 in the primal, on integer data (module docstring):
    the exact state (v, alpha, the support in order, the votes c_k, the examples behind the
    updates) and its float64 shadow (v_f, V_f) for the filter."""

    def __init__(self, data: IntegerData, par: PerceptronParams, epochs: int,
                 record_scores: bool, exact_floats: bool):
        self.data, self.par, self.epochs, self.exact_floats = data, par, epochs, exact_floats
        self.record = TrialRecord(data.labels, epochs, record_scores)
        eta, b0, C, tau, lam = par.eta, par.b0, par.C, par.tau, par.lam
        D2 = data.D * data.D
        self.Q = Q = math.lcm(b0.denominator, (eta * C).denominator, (eta / D2).denominator,
                              (lam / D2).denominator)
        self.q_b0, self.q_etaC = int(b0 * Q), int(eta * C * Q)
        self.q_eta, self.q_lam = int(eta * Q / D2), int(lam * Q / D2)
        self.q_B = self.q_b0                       # Q (b0 + eta C sum_j alpha_j y_j)
        self.tau_num, self.tau_den = tau.numerator, tau.denominator
        self.bound = par.alpha_bound
        T, n = data.T, data.n
        self.v = [0] * n                           # sum_j alpha_j y_j a_j
        self.alpha = [0] * T
        self.support: list[int] = []
        self.votes = [0]
        self.update_examples: list[int] = []
        self.longest = (0, self.v)   # the longest survivor so far: its index and its v
        self._squares: dict[int, int] = {}
        self.kernel: Kernel = parse_kernel("linear")
        self._gram: Gram | None = None
        # the float64 shadow of the state, for the filter: the columns fl(eta y_t x_t),
        # |x_t|, y_t and |x_t|^2 (when x_t has caused an update: the lambda-trick's term);
        # the weights (v_f, -c1 V_f, B_f, lam (1 - k)) and (0, V_f, 0, 0), v_f and V_f views
        X_f = data.X_f
        self.floats = {"eta": _to_float(eta), "b0": _to_float(b0), "C": _to_float(C),
                       "tau": _to_float(tau), "lam": _to_float(lam)}
        self.filter_ok = all(_normal_or_zero(v) for v in self.floats.values())
        self.A = np.abs(X_f)
        self.sq_f = np.einsum("ij,ij->i", X_f, X_f)
        self.l1_max = float(self.A.sum(axis=1).max()) * (1 + 2 * n * UNIT_ROUNDOFF)
        self.row_max = (self.A.max(axis=1) * (1 + 4 * UNIT_ROUNDOFF)).tolist()
        self.a_max = max(self.row_max)
        self.V_max = 0.0     # >= max V_f: the sum of max |x_t| over the updates
        y_f = np.array(data.labels, dtype=np.float64)
        scaled = X_f * y_f[:, None] * self.floats["eta"]
        if self.floats["eta"] != 1:   # fl(eta y x) within 2u eta |x|: no underflow, no inf
            self.filter_ok &= bool(np.isfinite(scaled).all() and not (
                (np.abs(scaled) < 2.0 ** -1020) & (X_f != 0)).any())
        self.columns = np.hstack([scaled, self.A, y_f[:, None], np.zeros((T, 1))])
        self.weights = np.zeros((2 * n + 2, 2))
        self.v_f = self.weights[:n, 0]
        self.V_f = self.weights[n:2 * n, 1]
        self.tau_err = score_error_bound(1, float(tau))
        self.growth_cap: tuple[int, Any] = (-1, None)
        self._set_fixed()

    def _set_fixed(self) -> None:
        """The parts of the scores, of the fragile rule and of the filter that change with
        the updates only."""
        K = len(self.update_examples)
        if self.q_etaC or not K:   # else b and |b0| + |eta C| K stay as they were
            self.B_f = ratio(self.q_B, self.Q)
            self.fixed_magnitude = ratio(abs(self.q_b0) + abs(self.q_etaC) * K, self.Q)
        self.thresholds = self._filter_weights()

    def run(self) -> None:
        """Every trial, through ``TrialRecord.trials`` (its progress reports): blocks of
        certified survivals at once, certified mistakes without their score, the others
        exactly; a followed trial (``following``) always exactly."""
        record = self.record
        T, total = self.data.T, self.epochs * self.data.T
        followed = sorted(record.followed)
        resume = unsafe = mistake = -1
        block = FIRST_BLOCK
        for t, j, label in record.trials():
            if t < resume:
                continue
            if t == mistake:
                self._certain_mistake(t, j, label)
                continue
            if record.scores is None and t != unsafe:
                at = bisect.bisect_left(followed, t)
                stop = followed[at] if at < len(followed) else total
                end = min(T, j + block, j + (stop - t))
                certified, next_mistake = self._certified(j, end) if end > j else (0, False)
                if next_mistake:
                    mistake = t + certified
                if certified:
                    self.votes[-1] += certified
                    resume = t + certified
                    unsafe = resume if certified < end - j else -1
                    block = min(LARGEST_BLOCK, max(FIRST_BLOCK, 2 * certified))
                    continue
                if next_mistake:
                    self._certain_mistake(t, j, label)
                    continue
            self._exact_trial(t, j, label)

    def _certain_mistake(self, t: int, j: int, label: int) -> None:
        """A trial the filter certifies a mistake (margin < 0 <= tau) that is not fragile:
        the update unless the alpha-bound blocks it, with no vote either way."""
        self.record.mistakes.append(t)
        if self.bound is None or self.alpha[j] < self.bound:
            self._update(t, j, label)

    def _dot(self, j: int) -> int:
        """a_j.v, the score's integer part (one integer dot product)."""
        return sum(map(mul, self.data.row(j), self.v))

    def _square(self, j: int) -> int:
        """|a_j|^2, the lambda term's integer part."""
        out = self._squares.get(j)
        if out is None:
            row = self.data.row(j)
            out = self._squares[j] = sum(map(mul, row, row))
        return out

    def _exact_trial(self, t: int, j: int, label: int) -> None:
        """Trial t on example j, exactly (the reference's loop body)."""
        record = self.record
        lam_used = bool(self.q_lam) and self.alpha[j] > 0 and self._square(j) != 0
        N = self.q_B + self.q_eta * self._dot(j) + (label * self.q_lam * self._square(j)
                                                    if lam_used else 0)
        if record.scores is not None:
            record.scores.append(Fraction(N, self.Q))
        margin = label * N                         # Q y_t score_t
        if not self.exact_floats and self._fragile(margin, j, lam_used):
            record.fragile.append(t)
        if margin <= 0:
            record.mistakes.append(t)
        above_tau = margin * self.tau_den > self.tau_num * self.Q
        if record.decide(t, not above_tau and (self.bound is None or self.alpha[j] < self.bound)):
            self._update(t, j, label)
        elif above_tau:
            self.votes[-1] += 1

    def _update(self, t: int, j: int, label: int) -> None:
        """w += eta y_t x_t, b += eta y_t C (Figure 1); h_k retires, h_{k+1} starts."""
        self.record.updates.append(t)
        self._retire()
        self.votes.append(0)
        self.update_examples.append(j)
        if self.alpha[j] == 0:
            self.support.append(j)
            self.columns[j, -1] = self.sq_f[j]
        self.alpha[j] += 1
        row = self.data.row(j)
        if label > 0:
            self.v = list(map(add, self.v, row))
            self.v_f += self.data.X_f[j]
        else:
            self.v = list(map(sub, self.v, row))
            self.v_f -= self.data.X_f[j]
        self.V_f += self.A[j]
        self.V_max += self.row_max[j]
        self.q_B += label * self.q_etaC
        self._set_fixed()

    def _retire(self) -> None:
        """h_k retires with its vote c_k: the longest survivor if c_k beats every earlier
        vote (Figure 2's "if (tally > best tally)"); its v is kept (``_update`` builds a
        new list for h_{k+1})."""
        if self.votes[-1] > self.votes[self.longest[0]]:
            self.longest = (len(self.votes) - 1, self.v)

    # -- the filter ---------------------------------------------------------------------------
    def _relative_errors(self, K: int) -> tuple[float, float] | None:
        """(r_d, r_S): |fl(x.v_f) - x.v| <= r_d |x|.V_f (+ underflow), the error of the
        incremental v_f and of the product; and the reference's float S within a relative
        r_S of |x|.V_f (its n + |support| + 2 roundings, and V_f's K).  None once K is so
        large that the model's first-order bounds are no longer tight (then no filter)."""
        n = self.data.n
        if not self.filter_ok or 6 * (K + n + 4) * UNIT_ROUNDOFF > 1e-6:
            return None
        return 3 * (K + n + 4) * UNIT_ROUNDOFF, 6 * (K + n + 4) * UNIT_ROUNDOFF + SLACK

    def _filter_weights(self) -> tuple[float, float, float, float] | None:
        """(c0, c0m, c1, l2), and -c1 V_f, B_f and the lambda weight set in ``weights``:
        with (z0, z1) = c_t . weights (c_t trial t's row of ``columns``), z0 the float
        margin (its lambda term at lam (1 - k)) less c1 |x_t|.V_f and z1 = fl(|x_t|.V_f),
        trial t is a certified survival that is not fragile when z0 > c0, and a certified
        mistake that is not fragile when z0 + l2 |x_t|^2 + 2 c1 z1 < -c0m (l2 = 2 lam k).
        c1 |x_t|.V_f + c0m bounds
        the margin's error (r_d, eta's rounding into the columns, the product's 2n + 4
        roundings, B's own) plus the fragile rule's largest err + tau_err (its
        e1 |x_t|.V_f + e0, from S <= (1 + r_S) |x_t|.V_f); c0 adds tau; k is the lambda
        term's share of them.  None: no filter."""
        K = len(self.update_examples)
        if K > self.growth_cap[0] or self.q_etaC:
            self.growth_cap = (max(2 * K, 16), self._growth(max(2 * K, 16)))
        growth = self.growth_cap[1]
        if growth is None:
            return None
        r_S, e0, lam_share, c1 = growth
        u, n = UNIT_ROUNDOFF, self.data.n
        eta, lam, B = self.floats["eta"], self.floats["lam"], self.B_f
        g = (2 * n + 4) * u * 1.01
        c0m = ((self.tau_err + e0) * (1 + SLACK) + (2 * u + g) * abs(B) * 1.01 + eta * TINY
               + TINY) * (1 + SLACK)
        c0 = (self.floats["tau"] * (1 + SLACK) + c0m) * (1 + SLACK)
        # |x_t|.V_f <= max_t |x_t|_1 max V_f bounds every magnitude the reference sums
        # (each of its terms, alpha_i |x_i|.|x_t|, is at most |x_t|.V) and every |term| of
        # z0 and z1: none may overflow
        largest = ((eta * self.l1_max * self.V_max * (1 + r_S) + lam * self.l1_max * self.a_max
                    + self.fixed_magnitude + abs(B)) * 2)
        if not largest < 2.0 ** 1020:
            return None
        np.multiply(self.V_f, -c1, out=self.weights[n:2 * n, 0])
        self.weights[2 * n, 0] = B
        self.weights[2 * n + 1, 0] = lam * (1 - lam_share)
        return c0, c0m, c1, 2 * lam * lam_share

    def _growth(self, K: int) -> tuple[float, float, float, float] | None:
        """(r_S, e0, k, c1) of ``_filter_weights`` for up to K updates (each grows with K:
        taken at a K above the run's, they still bound its errors)."""
        errors = self._relative_errors(K)
        if errors is None:
            return None
        r_d, r_S = errors
        u, n = UNIT_ROUNDOFF, self.data.n
        eta = self.floats["eta"]
        g = (2 * n + 4) * u * 1.01
        e1 = e0 = growth = 0.0
        if not self.exact_floats:
            ops = n + 8 + K + 8
            m = ops * u
            growth = 2 * m / (1 - m) * (1 + r_S) * (1 + SLACK)
            e1 = growth * eta
            fixed = ratio(abs(self.q_b0) + abs(self.q_etaC) * K, self.Q)
            e0 = (growth * (fixed + eta * TINY + TINY)
                  + 2 * ops * SMALLEST_SUBNORMAL) * (1 + SLACK) + TINY
        lam_share = growth + (2 * n + 12) * u + 2 * g + SLACK
        c1 = (e1 + eta * (r_d + 2 * g + 5 * u)) * (1 + 2 * (K + 1) * u) * (1 + 2 * g) \
            * (1 + SLACK)
        return r_S, e0, lam_share, c1

    def _certified(self, j0: int, j1: int) -> tuple[int, bool]:
        """How many of the trials on rows j0 .. j1 - 1, from j0 on, are certified survivals
        that are not fragile, and whether the next one is a certified mistake that is not
        fragile (``_filter_weights``)."""
        if self.thresholds is None:
            return 0, False
        c0, c0m, c1, l2 = self.thresholds
        z = self.columns[j0:j1] @ self.weights
        ok = z[:, 0] > c0
        first = int(ok.argmin())
        if ok[first]:
            return j1 - j0, False
        z0, z1 = z[first].tolist()
        lam_term = l2 * float(self.columns[j0 + first, -1])
        total = z0 + lam_term + 2 * c1 * z1   # within 3u of the exact sum of the three
        return first, bool(total + SLACK * (abs(z0) + lam_term + 2 * c1 * z1) < -c0m)

    def _fragile(self, margin: int, j: int, lam_used: bool) -> bool:
        """``reference.perceptron._is_fragile`` for the margin ``margin / Q``: decided on the
        bracket [S_lo, S_up] of the reference's float magnitude S (the rule is monotone in
        S), else by the reference's rule itself on its Gram."""
        bracket = self._magnitude_bracket(j, lam_used)
        if bracket is None:
            return self._reference_fragile(margin, j, lam_used)
        s_lo, s_hi, m_lo, m_hi = bracket
        err_hi, tau_err_hi = self._errors(s_hi, m_hi, lam_used)
        m_f, tau_f = ratio(margin, self.Q), self.floats["tau"]
        if abs(m_f) * (1 - SLACK) - TINY > err_hi and \
                abs(m_f - tau_f) - SLACK * (abs(m_f) + tau_f) - TINY > tau_err_hi:
            return False
        exact = Fraction(margin, self.Q)
        err_lo, tau_err_lo = self._errors(s_lo, m_lo, lam_used)
        low = self._rule(exact, err_lo, tau_err_lo)
        if low == self._rule(exact, err_hi, tau_err_hi):
            return low
        return self._reference_fragile(margin, j, lam_used)

    def _magnitude_bracket(self, j: int, lam_used: bool
                           ) -> tuple[float, float, float, float] | None:
        """(S_lo, S_hi, M_lo, M_hi) around the reference's float magnitudes S = sum_i
        alpha_i |x_i|.|x_j| (in support order) and M = |x_j|.|x_j| (the lambda term's): S
        within a relative r_S of |x_j|.V_f.  None: no bracket (decide by the reference)."""
        K = len(self.update_examples)
        errors = self._relative_errors(K)
        if errors is None:
            return None
        r_S = errors[1]
        Mv = float(self.A[j] @ self.V_f)
        s_lo, s_hi = (max(0.0, Mv * (1 - r_S) - TINY), Mv * (1 + r_S) + TINY) if K else (0, 0)
        m_lo = m_hi = 0.0
        if lam_used:
            sq = float(self.sq_f[j])
            m_lo, m_hi = max(0.0, sq * (1 - r_S) - TINY), sq * (1 + r_S) + TINY
        return s_lo, s_hi, m_lo, m_hi

    def _errors(self, S: float, M_jj: float, lam_used: bool) -> tuple[float, float]:
        """The fragile rule's (err, tau_err) for the float magnitude sum S (and the lambda
        term's magnitude M_jj): ``_is_fragile``'s expression, with |b0| + |eta C| K taken
        as the float Fraction + float addition takes it."""
        par = self.par
        K = len(self.update_examples)
        fixed = self.fixed_magnitude
        if fixed == math.inf:  # beyond float64: the reference's Fraction + float raises
            fixed = float(abs(par.b0) + abs(par.eta * par.C) * K)
        magnitude = (fixed + product_magnitude(par.eta, S)
                     + (product_magnitude(par.lam, M_jj) if lam_used else 0))
        ops = (self.data.n + 8) * self.kernel.depth + K + 8
        err = score_error_bound(ops, magnitude_float(magnitude))
        return err, err + self.tau_err

    def _rule(self, margin: Fraction, err: float, tau_err: float) -> bool:
        """The last line of ``_is_fragile``: the margin within err of 0, or within tau_err
        of tau."""
        tau = self.par.tau
        return bool((err and abs(margin) <= err) or (tau_err and abs(margin - tau) <= tau_err))

    def _reference_fragile(self, margin: int, j: int, lam_used: bool) -> bool:
        """The reference's own rule on its Gram (the same float sums, bit for bit)."""
        if self._gram is None:
            self._gram = Gram(self.kernel, self.data.fractions())
        return reference._is_fragile(Fraction(margin, self.Q), self.par, self._gram, self.alpha,
                                     self.support, j, len(self.update_examples),
                                     lam_used=lam_used)


class _KernelRun(LinearRun):
    """The trial loop in the dual coordinates of section 2.1 for a rational kernel that is
    not the linear one: k(x_i, x_j) = f(a_i.a_j) / dK over integers (``integer_form``),
    the sums sum_i alpha_i y_i f(a_i.a_j) kept for every example as integers (a kernel
    column computed once per support example, its dot products by one FLINT product), and
    every trial run exactly, its fragile test the reference's ``_is_fragile`` on its Gram."""

    def __init__(self, data: IntegerData, par: PerceptronParams, epochs: int,
                 record_scores: bool, exact_floats: bool, kernel: Kernel):
        super().__init__(data, par, epochs, record_scores, exact_floats)
        self.kernel = kernel
        eta, b0, C, lam = par.eta, par.b0, par.C, par.lam
        dK, self.outer = kernel.integer_form(data.D)
        self.Q = Q = math.lcm(b0.denominator, (eta * C).denominator, (eta / dK).denominator,
                              (lam / dK).denominator)
        self.q_b0, self.q_etaC = int(b0 * Q), int(eta * C * Q)
        self.q_eta, self.q_lam = int(eta * Q / dK), int(lam * Q / dK)
        self.q_B = self.q_b0
        self.v = []
        self.longest = (0, self.v)
        self.sums = [0] * data.T
        self.rows = fmpz_mat([data.row(j) for j in range(data.T)])
        self._kernel_columns: dict[int, list[int]] = {}
        # the float magnitudes: sum_i alpha_i M_i, M_i = (|g| |X| |x_i| + |c0|)^degree
        # within a relative r_M of the reference's Gram.magnitude(i, .) (float sums and
        # powers of the same terms, each within (n + 4) u of the exact, to the degree)
        self.magnitude_sums = np.zeros(data.T)
        self._magnitude_columns: dict[int, Any] = {}
        u, n = UNIT_ROUNDOFF, data.n
        self.r_M = 2 * (kernel.depth * (2 * n + 8) + 8) * u
        self._set_fixed()

    def _set_fixed(self) -> None:
        """No float filter (every trial exactly); |b0| + |eta C| K for the fragile rule."""
        self.thresholds = None
        K = len(self.update_examples)
        self.fixed_magnitude = ratio(abs(self.q_b0) + abs(self.q_etaC) * K, self.Q)

    def _magnitude_column(self, u: int) -> Any:
        """M_u: (|gamma| |X| |x_u| + |coef0|)^degree, float64."""
        out = self._magnitude_columns.get(u)
        if out is None:
            kern = self.kernel
            assert isinstance(kern, PolynomialKernel)
            base = abs(float(kern.gamma)) * (self.A @ self.A[u]) + abs(float(kern.coef0))
            out = self._magnitude_columns[u] = base ** kern.degree
        return out

    def _magnitude_bracket(self, j: int, lam_used: bool
                           ) -> tuple[float, float, float, float] | None:
        """The reference's S = sum_i alpha_i M_ij (support order) within a relative
        r_M + 4 (K + 2) u of ``magnitude_sums`` (K rounded additions of nonnegative
        terms), M_jj within r_M of M_j[j]."""
        if not isinstance(self.kernel, PolynomialKernel):
            return None
        K = len(self.update_examples)
        r = self.r_M + 4 * (K + 2) * UNIT_ROUNDOFF + SLACK
        S = float(self.magnitude_sums[j])
        if r > 1e-6 or not S < math.inf:
            return None
        slack = TINY * (K + 1)
        m_lo = m_hi = 0.0
        if lam_used:
            M = float(self._magnitude_column(j)[j])
            if not M < math.inf:
                return None
            m_lo, m_hi = max(0.0, M * (1 - r) - TINY), M * (1 + r) + TINY
        return max(0.0, S * (1 - r) - slack), S * (1 + r) + slack, m_lo, m_hi

    def _kernel_column(self, u: int) -> list[int]:
        """f(a_u.a_j) for every example j."""
        out = self._kernel_columns.get(u)
        if out is None:
            dots = [int(d) for d in (self.rows * fmpz_mat(self.data.n, 1,
                                                          self.data.row(u))).entries()]
            out = dots if self.outer is None else [self.outer(d) for d in dots]
            self._kernel_columns[u] = out
        return out

    def _dot(self, j: int) -> int:
        """sum_i alpha_i y_i f(a_i.a_j), kept for every example."""
        return self.sums[j]

    def _square(self, j: int) -> int:
        """f(a_j.a_j), the lambda term's integer part."""
        return self._kernel_column(j)[j]

    def _update(self, t: int, j: int, label: int) -> None:
        if isinstance(self.kernel, PolynomialKernel):
            self.magnitude_sums += self._magnitude_column(j)
        self.record.updates.append(t)
        self._retire()
        self.votes.append(0)
        self.update_examples.append(j)
        if self.alpha[j] == 0:
            self.support.append(j)
        self.alpha[j] += 1
        self.sums = list(map(add if label > 0 else sub, self.sums, self._kernel_column(j)))
        self.q_B += label * self.q_etaC
        self._set_fixed()


def _to_float(value: Fraction) -> float:
    """float(value), an infinity beyond float64's range."""
    return ratio(value.numerator, value.denominator)


def _final_state(run: LinearRun, par: PerceptronParams, linear: bool) -> dict[str, Any]:
    """``final`` as the reference's ``_final_state`` builds it: h_K, the votes c_k, the
    longest survivor (kept by ``_retire``) and the averaged hypothesis sum_k c_k h_k,
    whose dual coefficients are sum over the updates m by example i of sum_{k >= m} c_k."""
    run._retire()  # h_K, in force at the end, with its vote c_K
    data = run.data
    T, labels = data.T, data.labels
    c = run.votes
    longest, longest_v = run.longest
    longest_alpha = [0] * T
    for j in run.update_examples[:longest]:
        longest_alpha[j] += 1
    suffix = [0] * (len(c) + 1)
    for k in range(len(c) - 1, -1, -1):
        suffix[k] = suffix[k + 1] + c[k]
    averaged = [0] * T
    for m, j in enumerate(run.update_examples, start=1):
        averaged[j] += suffix[m]
    eta = par.eta

    def hypothesis(coefs: list[int], W: list[int], weight: int = 1) -> dict[str, Any]:
        state = {"b": weight * par.b0 + eta * par.C * sum(map(mul, coefs, labels)),
                 "alpha": list(coefs)}
        if linear:
            state["w"] = [Fraction(eta.numerator * s, eta.denominator * data.D) for s in W]
        return state

    final = hypothesis(run.alpha, run.v)
    final["votes"] = c
    final["longest_survivor"] = {"index": longest, "vote": c[longest],
                                 **hypothesis(longest_alpha, longest_v)}
    final["averaged"] = {"total_votes": suffix[0],
                         **hypothesis(averaged, _primal_sum(data, run.support, averaged)
                                      if linear else [], suffix[0])}
    return final


def _primal_sum(data: IntegerData, support: list[int], coefs: list[int]) -> list[int]:
    """sum_j c_j y_j a_j over the support (c is 0 elsewhere), coordinate by coordinate."""
    weights = [coefs[j] * data.labels[j] for j in support]
    columns = zip(*[data.row(j) for j in support]) if support else [()] * data.n
    return [sum(map(mul, weights, column)) for column in columns]
