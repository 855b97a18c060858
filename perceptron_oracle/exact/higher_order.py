"""The fast exact engine of HO_p(c) (Brotto, Gentile & Vitale, NIPS 2007), equal trial for
trial to ``reference.higher_order``.  SPEC.md, "higher_order".

p = 2, linear kernel (the paper's Figure 1, section 2 item 1): the state of the reference's
``Primal`` engine, A_k = (I - rho x x^T) A_{k-1} (I - rho x x^T), v_k and w_k = A_k v_k, as
integers over one common denominator each (A = A_int / dA, w = w_int / dw, row j =
x_int[j] / dx[j]), held in Python integers while short and in FLINT's ``fmpz`` (GMP
arithmetic) beyond BIG_STATE_BITS.  A mistake is one rank-2 update of the upper triangle of
the symmetric A_int,

    A_int <- keep A_int - U V,   U = [cross a | x],   V = [x^T ; (cross a - corner x)^T]

(a = A_int x, keep = rd^2 dx^4, cross = rn rd dx^2, corner = rn^2 x.a for rho = rn / rd: the
expansion of the reference's ``Primal.apply_factor``), w_int follows from a in O(n)
(``IntegerPrimal.update``), and a score is one integer dot product w_int.x_int over dw dx.
The exact A of float64 data grows by ~250 bits a mistake (keep holds dx^4, dx ~ 2^60 for raw
data), so the cost is these linear passes over n^2 / 2 long integers; entry by entry on
``fmpz`` they measured faster than python-flint's ``fmpz_mat`` operations.  The
denominators are not reduced along the run (the reference's power-of-two reduction removes
a few bits a mistake; the exact values, all the trace holds, are the same): the scores and
the final w are reduced once each, by FLINT, when the trace needs them.

The fragile rule is the reference's (``reference.higher_order_bounds.ErrorModel``), with
the same float magnitudes computed by the same expressions; the comparison |score| <= err
is made on integers (``within_ratio``), and once every entry of the magnitude matrix |A| has
overflowed (inf or NaN: raw data) every later magnitude is non-finite, so the float
recursion stops and the rule's bound is infinite, as in the reference.

p != 2 and the non-linear kernels run the reference's own loop (``run_loop``) unchanged.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from flint import fmpq, fmpz

from ..kernels import Kernel, parse_kernel
from ..reference.common import (
    ShadowRuns,
    TrialRecord,
    check_epochs,
    exact_data,
    shadow_errors,
    sharpen,
)
from ..reference.higher_order import (
    PARAMS,
    HigherOrderParams,
    resolve_params,
    rho_rule,
    run_loop,
)
from ..reference.higher_order_bounds import ErrorModel, operations, primal_update
from ..reference.higher_order_engines import lcm2
from ..rounding import magnitude_float, score_error_bound
from ..trace import Trace

#: A score as the run keeps it until the trace needs its value: numerator, and the
#: denominator as two factors (dw, shared by the trials between two mistakes, and dx).
RawScore = tuple[Any, Any, Any]

#: Past this many bits of dw the state's integers move from Python's to FLINT's ``fmpz``
#: (measured: Python's are faster below ~4,000 bits, GMP's above).
BIG_STATE_BITS = 3000


def higher_order(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
                 c: Any = Fraction(2, 5), rho: Any = "c/k", sparse: Any = False,
                 record_scores: bool = False, shadows: ShadowRuns | None = None) -> Trace:
    """Run HO_p(c) over ``epochs`` passes of (X, y); the reference's exact trace
    (``reference.higher_order.higher_order``, same arguments and errors)."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = resolve_params(dict(p=p, c=c, rho=rho, sparse=sparse))
    sharpens = shadows is not None and not par.sparse  # SPEC.md 12.5
    if par.p == 2 and kern.is_linear:
        trace, raw = run_primal(rows, labels, epochs, kern, par,
                                keep_scores=record_scores or sharpens)
        scores = None  # reduced only where the trace or the shadow runs read them
        if raw is not None and (record_scores or trace.fragile):
            scores = [score_fraction(num, dw * dx) for num, dw, dx in raw]
    else:
        trace = run_loop(rows, labels, epochs, kern, par, record_scores=True)
        scores = trace.scores
    if trace.fragile and sharpens:
        assert scores is not None  # kept: shadows given, not sparse
        T = len(rows)
        trace.scores = scores
        errors = shadow_errors(shadows, X, y, epochs, kern.spec, PARAMS.as_dict(par), trace)
        trace.fragile = sharpen(trace.fragile, errors,
                                [labels[t % T] * sc for t, sc in enumerate(scores)],
                                [[0]] * len(scores))
    trace.scores = scores if record_scores else None
    return trace


def run_primal(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
               par: HigherOrderParams, *, keep_scores: bool
               ) -> tuple[Trace, list[RawScore] | None]:
    """The reference's ``run_loop`` over ``IntegerPrimal`` (p = 2, linear kernel), the
    scores kept unreduced (``RawScore``) when ``keep_scores``; the trace's ``scores`` is
    None."""
    state = IntegerPrimal(rows)
    errors = ErrorModel(kern, rows, epochs * len(rows), par.p)
    record = TrialRecord(labels, epochs, record_scores=False)
    raw: list[RawScore] | None = [] if keep_scores else None
    rhos: list[Any] = []
    for t, j, label in record.trials():
        num = state.score(j)  # w_{k-1}.x_t = num / (dw dx_j)
        if raw is not None:
            raw.append((num, state.dw, state.dx_f[j]))
        if score_is_fragile(errors, num, state, j):
            record.fragile.append(t)
        if not record.decide(t, label * num <= 0):  # iff y_t score_t <= 0 (den > 0)
            continue
        record.mistakes.append(t)
        k = len(record.mistakes)
        s, s_magnitude = state.perceptron_score(j)  # v_{k-1}.x_t
        s_err = errors.mistake(s_magnitude)
        rho_k = rho_rule(par, k, s)
        if par.sparse and rho_k:
            if errors.branches(t, s, s_err):
                record.flag(t)
            if label * s < 0:
                rho_k = Fraction(0)  # B left alone; v still updated
        if rho_k:
            errors.factor_applied(par, s_err)
        state.update(j, label, rho_k)
        rhos.append(rho_k)
    final = state.final()
    final["rho"] = rhos
    trace = record.trace("higher_order", kern, PARAMS.as_dict(par), final,
                         updates=list(record.mistakes))
    return trace, raw


def score_is_fragile(errors: ErrorModel, num: Any, state: IntegerPrimal, j: int) -> bool:
    """``ErrorModel.score_is_fragile`` for the score num / (dw dx_j) of example j, the
    magnitude and the denominator taken from ``state`` only where the rule reads them."""
    if errors.branch_from is not None:
        return True
    if errors.identity and errors.exact_identity:
        return False
    err = score_error_bound(operations(errors.K, errors.n, errors.depth, errors.rho_errors),
                            magnitude_float(state.magnitude(j)))
    return bool(err) and within_ratio(num, state.dw * state.dx_f[j], err)


def within_ratio(num: Any, den: Any, bound: float) -> bool:
    """|num / den| <= bound (den > 0) exactly, as ``rounding.within``: in integers, without
    reducing the fraction; an infinite or NaN bound holds every value."""
    if not bound < math.inf:
        return True
    top, bottom = bound.as_integer_ratio()
    return bool(abs(num) * bottom <= den * top)


def integer_row(row: list[Fraction]) -> tuple[list[int], int]:
    """(integers, d) with row[i] = integers[i] / d, d the lcm of the denominators: the
    reference's ``common_denominator`` for a row of Fractions (``exact_data``'s)."""
    d = math.lcm(*(v.denominator for v in row))
    return [v.numerator * (d // v.denominator) for v in row], d


def score_fraction(num: Any, den: Any) -> Fraction:
    """num / den as the Fraction the reference records, reduced by FLINT."""
    return coprime_fraction(fmpq(num, den))


def coprime_fraction(value: fmpq) -> Fraction:
    """The Fraction equal to ``value``, whose numerator and denominator FLINT has already
    made coprime: built without CPython's gcd of the two (quadratic in their size)."""
    numerator, denominator = int(value.p), int(value.q)
    if denominator == 1:
        return Fraction(numerator)
    out = Fraction(0)
    object.__setattr__(out, "_numerator", numerator)
    object.__setattr__(out, "_denominator", denominator)
    return out


class IntegerPrimal:
    """The reference's ``Primal`` state (p = 2, linear kernel) in integers (Python's, then
    ``fmpz``: ``big_state``): A_int / dA (a list of rows; A is symmetric, so only its upper
    triangle is computed and each entry is shared with its mirror), w_int / dw, v_int / dv
    (Python integers: v is a sum of rows, small), row j = x_int[j] / dx[j]; and the same
    float magnitudes (``A_abs``, ``w_abs``, ``v_abs``) by the same expressions, until every
    entry of ``A_abs`` is non-finite (``saturated``)."""

    def __init__(self, rows: list[list[Fraction]]):
        n = len(rows[0])
        self.n = n
        scaled = [integer_row(row) for row in rows]
        self.x_int = [xs for xs, _ in scaled]
        self.dx = [d for _, d in scaled]
        # the integers the state is computed in: Python's while short, then fmpz (big_state)
        self.x_f: list[list[Any]] = self.x_int
        self.dx_f: list[Any] = self.dx
        # float(v) of a Fraction is numerator / denominator, one correctly rounded division
        self.abs_rows = [[abs(v.numerator / v.denominator) for v in row] for row in rows]
        self.A: list[list[Any]] = [[int(i == l) for l in range(n)] for i in range(n)]
        self.dA: Any = 1
        self.v_int, self.dv = [0] * n, 1
        self.w: list[Any] = [0] * n
        self.dw: Any = 1
        self.A_abs = [[float(i == l) for l in range(n)] for i in range(n)]
        self.v_abs = [0.0] * n
        self.w_abs = [0.0] * n
        self.saturated = False

    def score(self, j: int) -> Any:
        """The numerator of w_{k-1}.x_j over dw dx_j."""
        return sum([a * b for a, b in zip(self.w, self.x_f[j])])

    def magnitude(self, j: int) -> float:
        """M = |w|.|x_j| of the fragile rule (inf once ``A_abs`` is saturated: every term
        is then inf or NaN)."""
        if self.saturated:
            return math.inf
        return sum(a * b for a, b in zip(self.w_abs, self.abs_rows[j]))

    def perceptron_score(self, j: int) -> tuple[Fraction, float]:
        """(v.x_j, its magnitude), as the reference's ``Primal.perceptron_score``."""
        num = sum(a * b for a, b in zip(self.v_int, self.x_int[j]) if a and b)
        return (Fraction(num, self.dv * self.dx[j]),
                sum(a * b for a, b in zip(self.v_abs, self.abs_rows[j])))

    def update(self, j: int, label: int, rho: Any) -> None:
        """v_k = v_{k-1} + y x, A_k (Figure 1), w_k = A_k v_k, the integers w_int =
        A_int v_int (over dw = dA dv) computed in O(n) from a = A_int x_int: A_int v_int_k
        = w_int_{k-1} dv_k / dv_{k-1} + y (dv_k / dx) a, then the factor's rank-2 update."""
        xi, dx, xa = self.x_int[j], self.dx[j], self.abs_rows[j]
        lcm = lcm2(self.dv, dx)
        old, new = lcm // self.dv, label * (lcm // dx)
        self.v_int = [a * old + b * new for a, b in zip(self.v_int, xi)]
        self.dv = lcm
        self.v_abs = [a + b for a, b in zip(self.v_abs, xa)]
        a = [sum([e * c for e, c in zip(row, self.x_f[j]) if c]) for row in self.A]
        w = [e * old + c * new for e, c in zip(self.w, a)]
        if rho:
            w = self.apply_factor(j, rho, a, w)
            if not self.saturated:
                self.A_abs = primal_update(self.A_abs, xa, float(rho), absolute=True)
                self.saturated = all(not v < math.inf for row in self.A_abs for v in row)
        self.w = w
        self.dw = self.dA * self.dv
        if self.x_f is self.x_int and self.dw.bit_length() > BIG_STATE_BITS:
            self.big_state()
        if not self.saturated:
            self.w_abs = [sum(a * b for a, b in zip(row, self.v_abs)) for row in self.A_abs]

    def big_state(self) -> None:
        """Hold the state's long integers (A, w, dA, dw) and the rows in ``fmpz`` from now
        on: GMP's arithmetic beats Python's beyond BIG_STATE_BITS."""
        self.x_f = [[fmpz(v) for v in xs] for xs in self.x_int]
        self.dx_f = [fmpz(d) for d in self.dx]
        self.A = [[fmpz(e) for e in row] for row in self.A]
        self.w = [fmpz(e) for e in self.w]
        self.dA, self.dw = fmpz(self.dA), fmpz(self.dw)

    def apply_factor(self, j: int, rho: Fraction, a: list[Any], Av: list[Any]) -> list[Any]:
        """A <- (I - rho x x^T) A (I - rho x x^T), x = x_j, a = A_int x_int: A_int <-
        keep A_int - U V (the module docstring), dA <- dA keep.  Returns the new A_int v_int
        from ``Av`` = the old A_int v_int."""
        n, x, dx, A = self.n, self.x_f[j], self.dx[j], self.A
        rn, rd = rho.numerator, rho.denominator
        corner = rn * rn * sum([e * c for e, c in zip(a, x)])
        number = type(self.dA)  # int, or fmpz once the state is big
        keep, cross = number(rd * rd * dx ** 4), number(rn * rd * dx * dx)
        ca = [cross * e for e in a]
        w2 = [e - corner * c for e, c in zip(ca, x)]
        new: list[list[Any]] = [[None] * n for _ in range(n)]
        for i in range(n):
            row, new_i, ca_i, x_i = A[i], new[i], ca[i], x[i]
            for l in range(i, n):
                e = row[l] * keep - ca_i * x[l] - x_i * w2[l]
                new_i[l] = new[l][i] = e
        self.A = new
        self.dA *= keep
        v = [number(e) for e in self.v_int]
        xv = sum([e * c for e, c in zip(x, v)])
        w2v = sum([e * c for e, c in zip(w2, v)])
        return [e * keep - c * xv - d * w2v for e, c, d in zip(Av, ca, x)]

    def final(self) -> dict[str, Any]:
        """``Primal.final``: w and v as Fractions."""
        w = [coprime_fraction(fmpq(a, self.dw)) for a in self.w]
        return {"w": w, "v": [Fraction(a, self.dv) for a in self.v_int]}
