"""The Second-Order Perceptron's fast exact engine (SPEC.md 13): the trace of
``reference.second_order.second_order``, computed on integer data with FLINT.

Linear kernel, basic and adaptive a.  With D a common denominator of the data (float64 data:
a power of two, read without Fractions, ``float64_data``), z = D x is an integer vector and
M = L (a_k I + X X^T), L = lcm(D^2, den a), an integer matrix (``fmpz_mat``).  Two routes:

- the filtered run (``second_order_filtered``), when the scores are not returned: M^{-1} in
  Arb balls, every decision certified (the mistake test, the stated fragile rule, the shadow
  runs' test), or ``Undecided``; then
- the integer run (``IntegerPrimal``), the reference's ``Primal`` in FLINT: N = adj(M) and
  d = det(M) (A^{-1} = L N / d) and u = N V (V = D v), so s = x_t^T A^{-1} v = f z.u / d
  (f = L / D^2) is one integer dot product whose sign is the decision (the sign identity,
  SPEC.md 13.2); q = x^T A^{-1} x (h = N z) only at a mistake and for a returned score.  A
  mistake updates N' = (d' N - f h h^T) / d, d' = d + f z^T N z (determinant lemma, exact
  division); the adaptive form inverts M afresh.

The stated fragile rule (SPEC.md 13.5, ``second_order_bounds.FragileRule``) is filtered in
both (``FilteredFragileRule``): its bound grows with kmag = max_i |k|(x_i, x_t) over the
mistakes, the one costly term.  Bounds of kmag from numpy's |X| |x_i|, widened past any
summation order's error, bound the rule's bound from both sides, since every float
operation of the rule is monotone; |s| beyond the upper one is not fragile, within the lower
one fragile.  Between them the rule is evaluated as the reference does (the same float
expressions on the same values), so the flags are identical.

Other kernels and the pseudoinverse form run the reference's own engines
(``reference.second_order.second_order``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from operator import mul
from typing import Any

import numpy as np
from flint import ctx, fmpz, fmpz_mat

from ..kernels import LINEAR, parse_kernel
from ..reference import second_order as reference
from ..reference.common import (
    ShadowRuns,
    TrialRecord,
    check_epochs,
    exact_data,
    progress_report,
    recording_shadow_decisions,
    reporting_progress,
    shadow_errors,
    sharpen,
)
from ..reference.second_order import PARAMS, SecondOrderParams
from ..reference.second_order_engines import FRAGILE_FACTOR, a_k
from ..rounding import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF
from ..trace import Trace
from .second_order_filtered import (
    BALL_PRECISION,
    BallPrimal,
    Undecided,
    abs_at_most,
    run_shadows,
    sharpen_filtered,
)

#: How far an upper bound of kmag lies above numpy's |X| |x_i|: relatively, 4 (n + 2) u
#: covers the error of any summation order of n nonnegative rounded products (Higham 3.1,
#: twice: numpy's order and the reference's); absolutely, products that underflow.
KMAG_ABSOLUTE_SLACK = 1e-300
#: Above this an upper bound is treated as unknown (the reference's own sum may overflow).
KMAG_FINITE = 1e300


def second_order(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", a: Any = 1,
                 a_growth: Any = "constant", pseudoinverse: Any = False,
                 record_scores: bool = False, shadows: ShadowRuns | None = None) -> Trace:
    """Run the Second-Order Perceptron over ``epochs`` passes of (X, y): the reference's
    exact trace (``reference.second_order.second_order``, whose parameters these are).

    Linear kernel: the filtered run (``second_order_filtered``) where the scores are not
    returned and every decision is certified by its balls, else the exact integer run."""
    D, z, labels, abs_X = integer_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = reference.resolve_params(dict(a=a, a_growth=a_growth, pseudoinverse=pseudoinverse))
    if not kern.is_linear or par.pseudoinverse:
        return reference.second_order(X, y, epochs=epochs, kernel=kernel, a=a,
                                      a_growth=a_growth, pseudoinverse=pseudoinverse,
                                      record_scores=record_scores, shadows=shadows)
    run = Run(X, y, (D, z, labels, abs_X), epochs, par, shadows)
    report = progress_report()
    reached = -1   # the progress the filtered run reported: the exact run goes on from it

    def tracked(done: int, total: int) -> None:
        nonlocal reached
        reached = done
        if report is not None:
            report(done, total)

    def onward(done: int, total: int) -> None:
        if report is not None and done > reached:
            report(done, total)

    if not record_scores and not recording_shadow_decisions():  # no decision log asked for
        prec = ctx.prec
        ctx.prec = BALL_PRECISION
        try:
            with reporting_progress(tracked):
                return run.filtered(kern)
        except Undecided:
            pass
        finally:
            ctx.prec = prec
    with reporting_progress(onward):
        return run.exact(kern, record_scores)


class Run:
    """One run's data and parameters, and its two routes to the reference's trace."""

    def __init__(self, X: Any, y: Any, data: tuple[int, list[list[int]], list[int], Any],
                 epochs: int, par: SecondOrderParams, shadows: ShadowRuns | None):
        self.X, self.y = X, y
        self.D, self.z, self.labels, self.abs_X = data
        self.epochs, self.par, self.shadows = epochs, par, shadows
        D2 = self.D * self.D
        self.L = D2 * par.a.denominator // math.gcd(D2, par.a.denominator)
        self.f = self.L // D2

    def exact(self, kern: Any, record_scores: bool) -> Trace:
        """The integer run (``IntegerPrimal``): every score it needs exactly."""
        state = IntegerPrimal(self.z, self.D, self.L, self.par)
        rule = FilteredFragileRule(self.abs_X, self.labels, self.z, self.D, state)
        record = TrialRecord(self.labels, self.epochs)
        scores: dict[int, Fraction] = {}
        f, shadows = self.f, self.shadows
        for t, j, label in record.trials():
            zu = state.dot_u(j)   # s = f zu / d, d > 0: the sign of s

            def s_at_most(err: float, zu: int = zu) -> bool:
                num, den = err.as_integer_ratio()
                return bool(abs(f * zu) * den <= num * state.d)

            fragile = rule.flags(j, s_at_most)
            if fragile:
                record.fragile.append(t)
            if record_scores or (fragile and shadows is not None):
                scores[t] = state.exact_score(j, zu)
            if record.decide(t, label * zu <= 0):  # mistake iff y_t score_t <= 0
                record.mistakes.append(t)
                rule.mistake(j, label)
                state.mistake(j, label)
        trace = record.trace("second_order", kern, PARAMS.as_dict(self.par),
                             {"support": list(state.support), **state.final()},
                             updates=list(record.mistakes))
        # the scores read below: every trial's when recorded, else the candidates' (sharpen
        # and the shadows' errors at a candidate read its own score only; 0 elsewhere)
        trace.scores = [scores.get(t, Fraction(0)) for t in range(len(record.labels)
                                                                   * self.epochs)]
        if trace.fragile:  # the a-posteriori rule (SPEC.md 13.5)
            errors = shadow_errors(shadows, self.X, self.y, self.epochs, kern.spec,
                                   PARAMS.as_dict(self.par), trace)
            trace.fragile = sharpen(trace.fragile, errors,
                                    [self.labels[t % len(self.labels)] * sc
                                     for t, sc in enumerate(trace.scores)],
                                    [[0]] * len(trace.scores))
        if not record_scores:
            trace.scores = None
        return trace

    def filtered(self, kern: Any) -> Trace:
        """The ball run (``second_order_filtered``); raises ``Undecided``."""
        state = BallPrimal(self.z, self.f, self.L, self.par)
        rule = FilteredFragileRule(self.abs_X, self.labels, self.z, self.D, state)
        record = TrialRecord(self.labels, self.epochs)
        balls: dict[int, tuple[float, float, bool]] = {}
        f, shadows = self.f, self.shadows
        for t, j, label in record.trials():
            zu = state.s(j)
            zero = zu == 0   # an exact zero (no radius)
            s_ball = zu * f

            def s_at_most(err: float, s_ball: Any = s_ball) -> bool | None:
                return abs_at_most(s_ball, err)

            if rule.flags(j, s_at_most):
                record.fragile.append(t)
                if shadows is not None:
                    balls[t] = (*state.score(j, zu), bool(zero))
            if zero or label * zu < 0:   # mistake iff y_t score_t <= 0
                mistake = True
            elif label * zu > 0:
                mistake = False
            else:
                raise Undecided
            if record.decide(t, mistake):
                record.mistakes.append(t)
                rule.mistake(j, label)
                state.mistake(j, label)
        trace = record.trace("second_order", kern, PARAMS.as_dict(self.par),
                             {"support": list(state.support), **self.final(state)},
                             updates=list(record.mistakes))
        trace.scores = None
        if trace.fragile and shadows is not None:  # the a-posteriori rule (SPEC.md 13.5)
            runs = run_shadows(shadows, self.X, self.y, self.epochs, kern.spec,
                               PARAMS.as_dict(self.par), trace.updates,
                               len(self.labels) * self.epochs)
            if runs is not None:
                trace.fragile = sharpen_filtered(trace.fragile, balls, runs)
        return trace

    def final(self, state: BallPrimal) -> dict[str, Any]:
        """w = A^{-1} v = L M^{-1} V / D (a = a_{K+1}) by one exact solve; v = V / D."""
        n = len(state.V)
        w = state.M.solve(fmpz_mat(n, 1, state.V)).entries()
        return {"w": [Fraction(int(c.p) * self.L, int(c.q) * self.D) for c in w],
                "v": [Fraction(v, self.D) for v in state.V]}


def integer_rows(rows: list[list[Fraction]]) -> tuple[int, list[list[int]]]:
    """D, a common denominator of every entry, and the integer rows z = D x."""
    D = 1
    for row in rows:
        for v in row:
            if D % v.denominator:
                D = D * v.denominator // math.gcd(D, v.denominator)
    return D, [[v.numerator * (D // v.denominator) for v in row] for row in rows]


class IntegerPrimal:
    """A = a_k I + X X^T as N = adj(M), d = det(M) of the integer M = L A (FLINT), with
    u = N V kept for the trials' sign tests (module docstring)."""

    def __init__(self, z: list[list[int]], D: int, L: int, par: SecondOrderParams):
        self.par, self.z, self.D, self.L = par, z, D, L
        self.n = n = len(z[0])
        self.a = a_k(par, 1)
        self.f = L // (D * D)
        self.columns = [fmpz_mat(n, 1, z) for z in self.z]
        aL = int(self.a * self.L)
        self.N = fmpz_mat(n, n, [aL ** (n - 1) if r == c else 0
                                 for r in range(n) for c in range(n)])
        self.d = aL ** n
        self.V = [0] * n
        self.u = [0] * n   # N V
        self.C = fmpz_mat(n, n)  # f sum z z^T over the mistakes (adaptive form only)
        self.support: list[int] = []

    def dot_u(self, j: int) -> int:
        """z_j . u = z_j^T N V: s = f z.u / d."""
        return sum(map(mul, self.z[j], self.u))

    def quadratic(self, j: int) -> tuple[fmpz_mat, int]:
        """h = N z_j and z_j^T N z_j."""
        h = self.N * self.columns[j]
        return h, int((self.columns[j].transpose() * h)[0, 0])

    def exact_score(self, j: int, zu: int) -> Fraction:
        """score_t = s / (1 + q) = f z^T N V / (d + f z^T N z)."""
        _, zNz = self.quadratic(j)
        return Fraction(self.f * zu, self.d + self.f * zNz)

    def mistake(self, j: int, label: int) -> None:
        """v_k = v_{k-1} + y_t x_t, X_k = S_t; A grows by x x^T (and a_k -> a_{k+1})."""
        z, f, n = self.z[j], self.f, self.n
        self.V = [v + label * zi for v, zi in zip(self.V, z)]
        self.support.append(j)
        new_a = a_k(self.par, len(self.support) + 1)
        if new_a != self.a:  # adaptive: adj and det of M = L (a_k I + C) afresh
            self.a = new_a
            col = self.columns[j]
            self.C += col * col.transpose() * f
            aL = int(new_a * self.L)
            M = self.C + fmpz_mat(n, n, [aL if r == c else 0
                                         for r in range(n) for c in range(n)])
            inverse: Any = M.inv()   # an fmpq_mat
            N, d = inverse.numer_denom()
            self.N, self.d = N, int(d)
        else:
            h, zNz = self.quadratic(j)
            dn = self.d + f * zNz
            self.N = (self.N * fmpz(dn) - h * h.transpose() * f) / fmpz(self.d)
            self.d = dn
        self.u = [int(v) for v in (self.N * fmpz_mat(n, 1, self.V)).entries()]

    def final(self) -> dict[str, Any]:
        """w = A^{-1} v = L N V / (D d) with a = a_{K+1}; v = V / D."""
        den = self.D * self.d
        return {"w": [Fraction(self.L * ui, den) for ui in self.u],
                "v": [Fraction(v, self.D) for v in self.V]}


def _ratio_float(num: int, den: int) -> float:
    """float(Fraction(num, den)) (den > 0) as ``rounding.float_or_inf`` gives it: Python's
    int division is correctly rounded, an infinity of the sign beyond float64's range."""
    try:
        return num / den
    except OverflowError:
        return math.inf if num > 0 else -math.inf


class FilteredFragileRule:
    """``second_order_bounds.FragileRule`` for the linear kernel (not the pseudoinverse), the
    same flags, with kmag's bound filtered (module docstring)."""

    def __init__(self, abs_X: Any, labels: list[int], z: list[list[int]], D: int,
                 state: Any):
        self.labels, self.z, self.state = labels, z, state
        T, n = len(z), len(z[0])
        self.ops_base = (n + 8) * LINEAR.depth + 8
        self.D2 = D * D
        self.abs_X = abs_X
        self.kmag_high = np.zeros(T)  # kmag <= kmag_high (the filter's bounds)
        self.kmag_low = np.zeros(T)   # max(0, kmag_low) <= kmag
        self.slack = 1.0 + 4 * (n + 2) * UNIT_ROUNDOFF
        self.support: list[int] = []
        self.distinct: set[int] = set()
        self.V2 = 0.0
        self.trC = 0.0
        self.gram_floats: dict[tuple[int, int], float] = {}
        self.abs_rows: dict[int, list[float]] = {}
        self.diagonal: list[float] = []   # float_or_inf(k(x_j, x_j))
        self.c_magnitude: list[float] = []  # magnitude_float(k(x_j, x_j))
        for j in range(T):
            c = self.gram(j, j)
            self.diagonal.append(c)
            self.c_magnitude.append(c if c or not self._dot(j, j) else SMALLEST_SUBNORMAL)

    def _dot(self, i: int, j: int) -> int:
        return sum(map(mul, self.z[i], self.z[j]))

    def gram(self, i: int, j: int) -> float:
        """float_or_inf(k(x_i, x_j)): the exact value rounded once."""
        key = (i, j) if i <= j else (j, i)
        value = self.gram_floats.get(key)
        if value is None:
            value = self.gram_floats[key] = _ratio_float(self._dot(i, j), self.D2)
        return value

    def bound(self, k: int, j: int, kmag: float) -> float:
        """The stated rule's bound on |s| (``FragileRule.flags``, the same float operations
        in the same order)."""
        ops = self.ops_base + k
        a_now = float(self.state.a)
        kappa = (a_now + self.trC) / a_now
        scale = 1.0 / a_now
        M = math.sqrt(self.c_magnitude[j] * max(self.V2, 0.0)) + k * kmag
        err = FRAGILE_FACTOR * UNIT_ROUNDOFF * ops * (k + 1) * kappa * scale * M
        if M:
            err += ops * (k + 1) * SMALLEST_SUBNORMAL
        return err

    def flags(self, j: int, s_at_most: Callable[[float], bool | None]) -> bool:
        """Whether the trial on example j is fragile; ``s_at_most(err)``: whether |s| <= err
        for a finite err >= 0 (None: not decided, then ``Undecided`` where the rule needs
        it)."""
        k = len(self.support)
        high = float(self.kmag_high[j])
        if high < KMAG_FINITE:
            err_high = self.bound(k, j, high)
            if err_high < math.inf and s_at_most(err_high) is False:
                return False  # |s| > err_high >= err
            err_low = self.bound(k, j, max(0.0, float(self.kmag_low[j])))
            if err_low and err_low < math.inf and s_at_most(err_low):
                return True   # |s| <= err_low <= err
        kmag = max((self.magnitude(i, j) for i in self.distinct), default=0.0)
        err = self.bound(k, j, kmag)
        if not err:
            return False
        if not err < math.inf:  # rounding.within: an infinite (or NaN) bound holds every s
            return True
        decided = s_at_most(err)
        if decided is None:
            raise Undecided
        return decided

    def magnitude(self, i: int, j: int) -> float:
        """``common.Gram.magnitude`` of the linear kernel: sum |x_i x_j| as the reference
        sums it, the smallest subnormal for a nonzero dot product below float64's range."""
        value = float(sum(abs(u * v) for u, v in zip(self.abs_row(i), self.abs_row(j))))
        if value == 0 and self._dot(i, j) != 0:
            value = SMALLEST_SUBNORMAL
        return value

    def abs_row(self, i: int) -> list[float]:
        if i not in self.abs_rows:
            self.abs_rows[i] = self.abs_X[i].tolist()
        return self.abs_rows[i]

    def mistake(self, j: int, label: int) -> None:
        """``FragileRule.mistake``: ||v||^2 and tr C grow (before the state's update), and
        the kmag bound takes x_j in."""
        c = self.diagonal[j]
        vx = sum(self.labels[i] * self.gram(i, j) for i in self.support)
        self.V2 = self.V2 + 2 * label * vx + c
        self.trC += float(self.c_magnitude[j])
        self.support.append(j)
        if j not in self.distinct:
            self.distinct.add(j)
            with np.errstate(over="ignore", invalid="ignore"):
                row = self.abs_X @ self.abs_X[j]
                np.maximum(self.kmag_high, row * self.slack + KMAG_ABSOLUTE_SLACK,
                           out=self.kmag_high)
                np.maximum(self.kmag_low, row / self.slack - KMAG_ABSOLUTE_SLACK,
                           out=self.kmag_low)


def integer_data(X: Any, y: Any) -> tuple[int, list[list[int]], list[int], Any]:
    """``exact_data``'s data (its errors too) as D, a common denominator of every entry, the
    integer rows z = D x, the labels, and |x| as the reference's ``Gram`` reads it
    (abs(float(v))), a numpy array; valid float64 arrays are read without Fractions."""
    fast = float64_data(X, y)
    if fast is not None:
        return fast
    rows, labels = exact_data(X, y)
    D, z = integer_rows(rows)
    return D, z, labels, np.array([[abs(float(v)) for v in row] for row in rows],
                                  dtype=np.float64)


def float64_data(X: Any, y: Any) -> tuple[int, list[list[int]], list[int], Any] | None:
    """``integer_data`` of a finite two-dimensional float64 array X (dense, or CSR through
    ``toarray``) with labels in {-1, +1}: every x = m 2^e (m odd) exactly, D = 2^E for the
    largest -e; None for any other input (``exact_data`` then reads it, or says what is
    wrong)."""
    if hasattr(X, "toarray"):
        X = X.toarray()
    if not (isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2
            and X.shape[0] and X.shape[1] and isinstance(y, (list, tuple, np.ndarray))):
        return None
    labels = y.tolist() if hasattr(y, "tolist") else list(y)
    if len(labels) != X.shape[0] or not np.isfinite(X).all() or any(
            isinstance(label, (bool, complex)) or label not in (-1, 1) for label in labels):
        return None
    mantissa, exponent = np.frexp(X)       # x = mantissa 2^exponent, 1/2 <= |mantissa| < 1
    m = (mantissa * 2.0 ** 53).astype(np.int64)   # exact: 53 bits
    nonzero = m != 0
    low_bit = np.ones_like(m)
    low_bit[nonzero] = np.abs(m[nonzero]) & -np.abs(m[nonzero])
    twos = np.log2(low_bit.astype(np.float64)).astype(np.int64)  # a power of two: exact
    odd = m >> twos
    e = exponent.astype(np.int64) - 53 + twos   # x = odd 2^e
    E = max(0, int((-e[nonzero]).max())) if nonzero.any() else 0
    shift = np.where(nonzero, e + E, 0).tolist()
    z = [[o << s for o, s in zip(orow, srow)] for orow, srow in zip(odd.tolist(), shift)]
    return 1 << E, z, [int(label) for label in labels], np.abs(X)
