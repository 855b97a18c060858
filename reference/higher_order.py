"""The Higher-Order Perceptron HO_p(c) of Brotto, Gentile & Vitale, "On Higher-Order
Perceptron Algorithms" (NIPS 2007), exact.  SPEC.md, "higher_order".

Figure 1, with the dual-norm generalisation of section 2 item 3 (p = 2: g = identity):

    score_t = w_{k-1}.x_t,   w_{k-1} = B_{k-1}^T g(B_{k-1} v_{k-1})
    mistake iff y_t score_t <= 0;   on the k-th mistake (k = 1, 2, ...):
        v_k = v_{k-1} + y_t x_t,    B_k = B_{k-1} (I - rho_k x_t g(x_t)^T)

with B_0 = I, v_0 = 0 and g(theta) = grad ||theta||_p^2 / 2 (g(0) = 0).  For p = 2 the state
is A_k = B_k^T B_k, A_k = (I - rho x x^T) A_{k-1} (I - rho x x^T), and the score v^T A x.

rho_k (parameter ``rho``; s = v_{k-1}.x_t, the plain Perceptron score of the sum vector):

    "c/k"       rho_k = c / k                    c in [0, 1)   (the paper's standard choice)
    "theorem1"  rho_k = (1 - c) / (1 + |s|)      c in (0, 1]   (the largest Theorem 1 allows)
    "constant"  rho_k = c                        c in [0, 1)
    sparse      rho_k as above if y_t s >= 0, else 0 (B left alone; v still updated)

The algorithm is defined for x as given (no normalisation inside; the CLI normalises by
default).  Every mistake updates v, so updates == mistakes.

How the reference computes (all exact):
- p = 2, linear kernel: the primal state A_k, v_k, w_k = A_k v_k in Fraction (item 1).
- p = 2, any other kernel: dual coordinates over the mistakes (item 2): w = sum_j g_j phi(x_j)
  with g = y + D h; D grows by one row and column per mistake (general, non-unit x:
  d_kk = rho^2 (x^T X b + k(x, x)) - 2 rho, b = D X^T x); the same path runs the linear kernel
  when asked (``run_loop(..., engine=Dual)``, used by the tests to tie the two together).
- p != 2 (linear kernel only): B_k explicitly as an n x n matrix in mpmath; while every rho so
  far is 0 (B = I) the score's numerator is rational for an integer p and decided exactly.
  Otherwise the sign of the numerator N = sum_i sign(theta_i)|theta_i|^(p-1) (B x)_i
  (theta = B v; the positive normaliser ||theta||_p^(p-2) does not change the sign) is taken
  from mpmath, and |N| <= E_P (the reference's own rounding bound at its precision) is a
  tie: score 0, a mistake, and always fragile.

``final`` (SPEC.md, the higher_order chapter, "`final`"):
- linear kernel: ``w`` (w_K = B_K^T g(B_K v_K), list of n), ``v`` (v_K, list of n),
  ``rho`` (rho_k for each mistake k = 1..K, in order; 0 where B was left alone);
- other kernels: ``support`` (the example index of each mistake, in order: an example
  recurs once per mistake on it), ``g`` (the dual coefficients: score(x) =
  sum_k g_k k(x_support[k], x)), ``rho`` (as above).

Fragile trials (SPEC.md, the higher_order chapter, "Fragile trials and final-state
bounds"): |score| within SAFETY gamma_m M, with M = |x|^T |B|^T |B| |v| the magnitude of the
absolute-value computation (identical for the primal update of A, the dual recursions of D, h,
g and the implicit unwrapping of B), m = (K + 2)(K + 2 n d + 16) + 2 sum_i e_i (e_i: the
roundings in the float value of rho_i).  A sparse decision y s >= 0 within rounding of 0 flags
its trial and every later trial (the states may part ways there), and then
``final_error_bounds`` allows any final state.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..numbers import number_context
from ..params import Param, ParamSchema
from ..rounding import (
    ANY_STATE,
    SMALLEST_SUBNORMAL,
    UNIT_ROUNDOFF,
    linear_sums_exact,
    magnitude_float,
    score_error_bound,
    within,
)
from ..trace import Trace
from .common import Gram, TrialRecord, check_epochs, exact_data, norm_param, shadow_errors, sharpen
from .pnorm_perceptron import gradient, norm_power, numerator, own_error, pnorm_magnitude, to_mpf

RHO_RULES = ("c/k", "theorem1", "constant")

PARAMS = ParamSchema(
    norm_param("norm parameter p >= 2 (section 2 item 3); p = 2 is Figure 1"),
    Param("c", "rational", Fraction(2, 5), "the constant c of rho: in [0, 1) for rho=c/k and "
          "rho=constant, in (0, 1] for rho=theorem1 (default 2/5, the paper's Figure 2)",
          check=lambda v: 0 <= v <= 1, requirement="in [0, 1]"),
    Param("rho", "name", "c/k", "rho_k: c/k (k the 1-based mistake index), theorem1 "
          "((1-c)/(1+|v_{k-1}.x_t|)) or constant (c)", choices=RHO_RULES),
    Param("sparse", "bool", False, "the sparse variant (section 4): rho_k = 0 when "
          "y_t v_{k-1}.x_t < 0"),
)

def resolve_params(given: dict[str, Any]) -> dict[str, Any]:
    """PARAMS.resolve plus the range of c that depends on rho."""
    params = PARAMS.resolve(given)
    c = params["c"]
    if params["rho"] == "theorem1" and not 0 < c <= 1:
        raise ParamError(f"parameter c must be in (0, 1] for rho=theorem1, got {c}")
    if params["rho"] != "theorem1" and not 0 <= c < 1:
        raise ParamError(f"parameter c must be in [0, 1) for rho={params['rho']}, got {c}")
    return params


def rho_rule(params: dict[str, Any], k: int, s: Any) -> Any:
    """rho_k on the k-th mistake (k >= 1), s = v_{k-1}.x_t (before the sparse rule)."""
    c = params["c"]
    if params["rho"] == "c/k":
        return c / k
    if params["rho"] == "constant":
        return c
    return (1 - c) / (1 + abs(s))


def rho_roundings(params: dict[str, Any], s_error: float) -> int:
    """e: how many unit roundoffs the float64 value of rho may be off, relatively (SPEC.md,
    the higher_order chapter, "Fragile trials and final-state bounds"): c/k 3 (c, the
    division, slack), constant 1, theorem1 3 + u c/(1-c) + err(s) / u."""
    if params["rho"] == "c/k":
        return 3
    if params["rho"] == "constant":
        return 1
    c = float(params["c"])
    extra = c / (1 - c) if c < 1 else 0.0
    return 4 + math.ceil(extra + s_error / UNIT_ROUNDOFF)


def operations(K: int, n: int, depth: int, rho_errors: int) -> int:
    """m of the fragile rule: (K + 2)(K + 2 (n + 8) d + 16) + 2 sum_i e_i."""
    return (K + 2) * (K + 2 * (n + 8) * depth + 16) + 2 * rho_errors


# -- the three ways the reference holds the state -------------------------------------------
class Primal:
    """p = 2, linear kernel: A_k = B_k^T B_k, v_k and w_k = A_k v_k, exact (item 1).

    Exact rationals held as integer arrays over one common denominator each (A = A_int / dA,
    v = v_int / dv, w = w_int / dw, row j = x_int[j] / dx[j]), reduced by their gcd once per
    mistake: the same numbers as Fraction arithmetic without a gcd per operation.
    ``A_abs`` is the same recursion on absolute values (floats): |B|^T |B|."""

    def __init__(self, rows: list[list[Fraction]], kern: Kernel, p: Fraction):
        n = len(rows[0])
        self.rows, self.n = rows, n
        self.abs_rows = [[abs(float(v)) for v in row] for row in rows]
        scaled = [common_denominator(row) for row in rows]
        self.x_int = [xs for xs, _ in scaled]
        self.dx = [d for _, d in scaled]
        self.A_int = [[int(i == j) for j in range(n)] for i in range(n)]
        self.dA = 1
        self.v_int, self.dv = [0] * n, 1
        self.w_int, self.dw = [0] * n, 1
        self.A_abs = [[float(i == j) for j in range(n)] for i in range(n)]
        self.v_abs = [0.0] * n
        self.w_abs = [0.0] * n

    @property
    def A(self) -> list[list[Fraction]]:
        return [[Fraction(a, self.dA) for a in row] for row in self.A_int]

    @property
    def v(self) -> list[Fraction]:
        return [Fraction(a, self.dv) for a in self.v_int]

    def score(self, j: int) -> tuple[Any, Any, float]:
        """(score, a number with the score's sign, magnitude M); the score as (num, den)."""
        num = sum(a * b for a, b in zip(self.w_int, self.x_int[j]) if a and b)
        return ((num, self.dw * self.dx[j]), num,
                sum(a * b for a, b in zip(self.w_abs, self.abs_rows[j])))

    def perceptron_score(self, j: int) -> tuple[Any, float]:
        """(v.x_j, its magnitude)."""
        num = sum(a * b for a, b in zip(self.v_int, self.x_int[j]) if a and b)
        return (Fraction(num, self.dv * self.dx[j]),
                sum(a * b for a, b in zip(self.v_abs, self.abs_rows[j])))

    def update(self, j: int, label: int, rho: Any) -> None:
        xi, dx, xa = self.x_int[j], self.dx[j], self.abs_rows[j]
        if rho:
            self.apply_factor(j, rho)
            self.A_abs = primal_update(self.A_abs, xa, float(rho), absolute=True)
        lcm = lcm2(self.dv, dx)
        self.v_int = [a * (lcm // self.dv) + label * b * (lcm // dx)
                      for a, b in zip(self.v_int, xi)]
        self.dv = lcm
        self.v_abs = [a + b for a, b in zip(self.v_abs, xa)]
        w = [[sum(a * b for a, b in zip(row, self.v_int) if a and b) for row in self.A_int]]
        (self.w_int,), self.dw = reduce_common(w, self.dA * self.dv)
        self.w_abs = [sum(a * b for a, b in zip(row, self.v_abs)) for row in self.A_abs]

    def apply_factor(self, j: int, rho: Any) -> None:
        """A <- (I - rho x x^T) A (I - rho x x^T), x = x_j."""
        xi, dx, n = self.x_int[j], self.dx[j], self.n
        # A - rho a x^T - rho x a^T + rho^2 (x^T a) x x^T over dA b^2 dx^4, a = A x
        rn, rd = rho.numerator, rho.denominator
        a = [sum(r * c for r, c in zip(row, xi) if c) for row in self.A_int]
        q = sum(c * e for c, e in zip(xi, a))
        keep, cross, corner = rd * rd * dx ** 4, rn * rd * dx * dx, rn * rn * q
        self.A_int = [[self.A_int[i][l] * keep - cross * (a[i] * xi[l] + xi[i] * a[l])
                       + corner * xi[i] * xi[l] for l in range(n)] for i in range(n)]
        self.dA *= keep
        self.A_int, self.dA = reduce_common(self.A_int, self.dA)

    def final(self) -> dict[str, Any]:
        return {"w": [Fraction(a, self.dw) for a in self.w_int], "v": self.v}


def common_denominator(values: list[Fraction]) -> tuple[list[int], int]:
    """(integers, d) with values[i] = integers[i] / d, d the lcm of the denominators."""
    d = math.lcm(*(Fraction(v).denominator for v in values))
    return [Fraction(v).numerator * (d // Fraction(v).denominator) for v in values], d


def reduce_common(M: list[list[int]], d: int) -> tuple[list[list[int]], int]:
    """M / d with the common power of two of every entry and d divided out (cheap; the odd
    common factors, small products of rho's denominators, are left)."""
    shift = twos(d, *(a for row in M for a in row))
    if shift:
        M = [[a >> shift for a in row] for row in M]
        d >>= shift
    return M, d


def twos(*values: int) -> int:
    """The largest e with 2^e dividing every nonzero value."""
    out = None
    for v in values:
        if v:
            e = (v & -v).bit_length() - 1
            out = e if out is None else min(out, e)
            if out == 0:
                return 0
    return out or 0


def lcm2(a: int, b: int) -> int:
    """lcm(a, b) > 0, the gcd taken on the odd parts only (the powers of two are cheap)."""
    ea, eb = twos(a), twos(b)
    oa, ob = a >> ea, b >> eb
    return (oa * ob // math.gcd(oa, ob)) << max(ea, eb)


def as_exact(score: Any) -> Any:
    """A score as the trace holds it: (num, den) pairs become Fractions."""
    return Fraction(*score) if isinstance(score, tuple) else score




def primal_update(A: list[list[Any]], x: list[Any], rho: Any,
                  absolute: bool = False) -> list[list[Any]]:
    """A - rho a x^T - rho x a^T + rho^2 (x^T a) x x^T with a = A x (item 1, any x): the
    expansion of (I - rho x x^T) A (I - rho x x^T).  ``absolute``: every sign +, the
    magnitude recursion of the fragile rule."""
    n = len(x)
    a = [sum(A[i][l] * x[l] for l in range(n)) for i in range(n)]
    q = sum(x[i] * a[i] for i in range(n))
    sign = 1 if absolute else -1
    return [[A[i][l] + sign * rho * (a[i] * x[l] + x[i] * a[l]) + rho * rho * q * x[i] * x[l]
             for l in range(n)] for i in range(n)]


class Dual:
    """p = 2, any kernel: dual coordinates over the mistakes (item 2).

    A_k = I + sum_{i,j} D_ij phi(x_i) phi(x_j)^T, v_k = sum_i y_i phi(x_i), w_k = A_k v_k =
    sum_j g_j phi(x_j), g = y + D h, h_i = sum_j y_j k(x_i, x_j).  On a mistake with
    kvec_i = k(x_i, x), q = k(x, x), b = D kvec:
        D <- [[D, -rho b], [-rho b^T, rho^2 (kvec.b + q) - 2 rho]]
        h_i += y kvec_i,  h_new = kvec.y + y q
        g_i += b_i (y - rho h_new),  g_new = y - rho sum_i b_i h_i + d_new h_new
    D is kept only over the mistakes with rho != 0 (the others' rows and columns are 0).
    The ``_abs`` twins run the same recursions on absolute values (floats)."""

    def __init__(self, rows: list[list[Fraction]], kern: Kernel, p: Fraction):
        self.gram = Gram(kern, rows)
        self.n = len(rows[0])
        self.support: list[int] = []
        self.labels: list[int] = []
        self.active: list[int] = []          # positions (in support) with rho != 0
        self.D: dict[tuple[int, int], Any] = {}
        self.D_abs: dict[tuple[int, int], float] = {}
        self.h: list[Any] = []
        self.h_abs: list[float] = []
        self.g: list[Any] = []
        self.g_abs: list[float] = []
        self.ctx = self.gram.ctx   # None for rational kernels

    def dot(self, xs: Any, ys: Any) -> Any:
        """sum x y: exact for rationals; mpmath's fdot (one rounding) for the Gaussian."""
        xs, ys = list(xs), list(ys)
        if self.ctx is None:
            return sum((a * b for a, b in zip(xs, ys)), Fraction(0))
        return self.ctx.fdot(xs, ys) if xs else Fraction(0)

    def score(self, j: int) -> tuple[Any, Any, float]:
        gm = self.gram
        s = self.dot(self.g, (gm(i, j) for i in self.support))
        m = sum(ga * gm.magnitude(i, j) for ga, i in zip(self.g_abs, self.support))
        return s, s, m

    def perceptron_score(self, j: int) -> tuple[Any, float]:
        gm = self.gram
        return (self.dot(self.labels, (gm(i, j) for i in self.support)),
                sum(gm.magnitude(i, j) for i in self.support))

    def update(self, j: int, label: int, rho: Any) -> None:
        gm, k = self.gram, len(self.support)
        kvec = [gm(i, j) for i in self.support]
        kabs = [gm.magnitude(i, j) for i in self.support]
        q, qa = gm(j, j), gm.magnitude(j, j)
        b = {i: self.dot((self.D[i, l] for l in self.active), (kvec[l] for l in self.active))
             for i in self.active}
        ba = {i: sum(self.D_abs[i, l] * kabs[l] for l in self.active) for i in self.active}
        h_new = self.dot(self.labels, kvec) + label * q
        ha_new = sum(kabs) + qa
        self.h = [h + label * kv for h, kv in zip(self.h, kvec)]
        self.h_abs = [h + kv for h, kv in zip(self.h_abs, kabs)]
        ra = abs(float(rho))
        g_new = label - rho * self.dot((b[i] for i in self.active),
                                       (self.h[i] for i in self.active))
        ga_new = 1.0 + ra * sum(ba[i] * self.h_abs[i] for i in self.active)
        for i in self.active:
            self.g[i] += b[i] * (label - rho * h_new)
            self.g_abs[i] += ba[i] * (1.0 + ra * ha_new)
        if rho:
            d_new = rho * rho * (self.dot((kvec[i] for i in self.active),
                                          (b[i] for i in self.active)) + q) - 2 * rho
            da_new = ra * ra * (sum(kabs[i] * ba[i] for i in self.active) + qa) + 2 * ra
            g_new += d_new * h_new
            ga_new += da_new * ha_new
            for i in self.active:
                self.D[i, k] = self.D[k, i] = -rho * b[i]
                self.D_abs[i, k] = self.D_abs[k, i] = ra * ba[i]
            self.D[k, k], self.D_abs[k, k] = d_new, da_new
            self.active.append(k)
        self.support.append(j)
        self.labels.append(label)
        self.h.append(h_new)
        self.h_abs.append(ha_new)
        self.g.append(g_new)
        self.g_abs.append(ga_new)

    def final(self) -> dict[str, Any]:
        if self.gram.kernel.is_linear:
            rows, n = self.gram.rows, self.n
            return {"w": [sum((gi * rows[i][c] for gi, i in zip(self.g, self.support)),
                              Fraction(0)) for c in range(n)],
                    "v": [sum((l * rows[i][c] for l, i in zip(self.labels, self.support)),
                              Fraction(0)) for c in range(n)]}
        return {"support": list(self.support), "g": list(self.g)}


class IntDual(Dual):
    """``Dual``'s recursions for a rational kernel (linear, poly), with every vector and
    matrix held as integers over one common denominator (no gcd per operation): kernel values
    k(x_i, x_j) = K_int / dK with dK = (gamma_den coef0_den dX^2)^degree (dX the common
    denominator of the data), h = h_int / dK, D = D_int / dD, g = g_int / dg.  Scalars of one
    mistake (rho, d_kk, ...) are Fractions.  Tested equal to ``Dual``."""

    def __init__(self, rows: list[list[Fraction]], kern: Kernel, p: Fraction):
        super().__init__(rows, kern, p)
        dX = math.lcm(*(v.denominator for row in rows for v in row))
        self.x_int = [[v.numerator * (dX // v.denominator) for v in row] for row in rows]
        if kern.name == "poly":
            gd, cd = kern.gamma.denominator, kern.coef0.denominator
            self.dK = (gd * cd * dX * dX) ** kern.degree
            self._outer = (kern.gamma.numerator * cd, kern.coef0.numerator * gd * dX * dX,
                           kern.degree)
        else:
            self.dK, self._outer = dX * dX, None
        self.K_int: dict[tuple[int, int], int] = {}
        self.D_int: dict[tuple[int, int], int] = {}
        self.dD = 1
        self.h_int: list[int] = []
        self.g_int: list[int] = []
        self.dg = 1

    def kernel_int(self, i: int, j: int) -> int:
        key = (i, j) if i <= j else (j, i)
        value = self.K_int.get(key)
        if value is None:
            dot = sum(a * b for a, b in zip(self.x_int[i], self.x_int[j]))
            if self._outer is not None:
                gn, cn, degree = self._outer
                dot = (gn * dot + cn) ** degree
            value = self.K_int[key] = dot
        return value

    def score(self, j: int) -> tuple[Any, Any, float]:
        num = sum(g * self.kernel_int(i, j) for g, i in zip(self.g_int, self.support) if g)
        m = sum(ga * self.gram.magnitude(i, j) for ga, i in zip(self.g_abs, self.support))
        return (num, self.dg * self.dK), num, m

    def perceptron_score(self, j: int) -> tuple[Any, float]:
        num = sum(l * self.kernel_int(i, j) for l, i in zip(self.labels, self.support))
        return (Fraction(num, self.dK),
                sum(self.gram.magnitude(i, j) for i in self.support))

    def update(self, j: int, label: int, rho: Any) -> None:
        """``Dual.update`` over the common denominators: b = D kvec is b_int / db, the
        rows of D added on a factor go to ``_border``, g's changes to ``_add_to_g`` and
        ``_append_g``."""
        gm, k, dK, act = self.gram, len(self.support), self.dK, self.active
        kvec = [self.kernel_int(i, j) for i in self.support]
        q = self.kernel_int(j, j)
        kabs = [gm.magnitude(i, j) for i in self.support]
        qa = gm.magnitude(j, j)
        # b = D kvec, over dD dK
        b = {i: sum(self.D_int[i, l] * kvec[l] for l in act) for i in act}
        db = self.dD * dK
        h_new = sum(l * kv for l, kv in zip(self.labels, kvec)) + label * q      # / dK
        self.h_int = [h + label * kv for h, kv in zip(self.h_int, kvec)]
        # absolute twins, as in Dual
        ba = {i: sum(self.D_abs[i, l] * kabs[l] for l in act) for i in act}
        ha_new = sum(kabs) + qa
        self.h_abs = [h + kv for h, kv in zip(self.h_abs, kabs)]
        ra = abs(float(rho))
        ga_new = 1.0 + ra * sum(ba[i] * self.h_abs[i] for i in act)
        for i in act:
            self.g_abs[i] += ba[i] * (1.0 + ra * ha_new)
        # g_i += b_i (y - rho h_new) for the active i; g_new
        self._add_to_g(b, db, label - rho * Fraction(h_new, dK))
        g_new = Fraction(label) - rho * Fraction(sum(b[i] * self.h_int[i] for i in act),
                                                 db * dK)
        if rho:
            kb = Fraction(sum(kvec[i] * b[i] for i in act), dK * db)
            d_new = rho * rho * (kb + Fraction(q, dK)) - 2 * rho
            da_new = ra * ra * (sum(kabs[i] * ba[i] for i in act) + qa) + 2 * ra
            g_new += d_new * Fraction(h_new, dK)
            ga_new += da_new * ha_new
            self._border(k, rho, b, db, d_new, {i: ra * ba[i] for i in act}, da_new)
            act.append(k)
        self._append_g(g_new)
        self.support.append(j)
        self.labels.append(label)
        self.h_int.append(h_new)
        self.h_abs.append(ha_new)
        self.g_abs.append(ga_new)

    def _add_to_g(self, b: dict[int, int], db: int, step: Fraction) -> None:
        """g_i += (b_i / db) step for the active i, g kept over one denominator dg."""
        if self.active:
            scale_den = step.denominator * db
            lcm = lcm2(self.dg, scale_den)
            mine, theirs = lcm // self.dg, step.numerator * (lcm // scale_den)
            self.g_int = [g * mine for g in self.g_int]
            for i in self.active:
                self.g_int[i] += b[i] * theirs
            self.dg = lcm

    def _append_g(self, g_new: Fraction) -> None:
        """g gains its entry for the new mistake; common powers of two leave dg."""
        lcm = lcm2(self.dg, g_new.denominator)
        self.g_int = [g * (lcm // self.dg) for g in self.g_int]
        self.g_int.append(g_new.numerator * (lcm // g_new.denominator))
        self.dg = lcm
        shift = twos(self.dg, *self.g_int)
        if shift:
            self.g_int = [g >> shift for g in self.g_int]
            self.dg >>= shift

    def _border(self, k: int, rho: Any, b: dict[int, int], db: int, d_new: Fraction,
                b_abs: dict[int, float], da_new: float) -> None:
        """D <- [[D, -rho b], [-rho b^T, d_new]] (b over db), D kept over one denominator
        dD; the same border of absolute values (``b_abs`` = |rho| |b|) on D_abs."""
        row_den = rho.denominator * db
        lcm = lcm2(lcm2(self.dD, row_den), d_new.denominator)
        mine, theirs = lcm // self.dD, -rho.numerator * (lcm // row_den)
        self.D_int = {key: v * mine for key, v in self.D_int.items()}
        for i in self.active:
            self.D_int[i, k] = self.D_int[k, i] = b[i] * theirs
            self.D_abs[i, k] = self.D_abs[k, i] = b_abs[i]
        self.D_int[k, k] = d_new.numerator * (lcm // d_new.denominator)
        self.D_abs[k, k] = da_new
        self.dD = lcm
        shift = twos(self.dD, *self.D_int.values())
        if shift:
            self.D_int = {key: v >> shift for key, v in self.D_int.items()}
            self.dD >>= shift

    @property
    def g(self) -> list[Fraction]:
        return [Fraction(v, self.dg) for v in self.g_int]

    @g.setter
    def g(self, value: Any) -> None:  # Dual.__init__ assigns []
        pass

    @property
    def D(self) -> dict[tuple[int, int], Fraction]:
        return {key: Fraction(v, self.dD) for key, v in getattr(self, "D_int", {}).items()}

    @D.setter
    def D(self, value: Any) -> None:
        pass


class PNorm:
    """p != 2, linear kernel: B_k explicitly (n x n), v_k exact; B in mpmath once a factor
    with rho != 0 has been applied (item 3).  ``B_abs``: the product of the factors
    (I + rho |x| |g(x)|^T) (floats)."""

    def __init__(self, rows: list[list[Fraction]], kern: Kernel, p: Fraction):
        if not kern.is_linear:
            raise ParamError("higher_order takes a non-linear kernel only for p = 2")
        n = len(rows[0])
        self.rows, self.n, self.p = rows, n, p
        self.ctx = number_context()
        self.abs_rows = [[abs(float(v)) for v in row] for row in rows]
        self.B: list[list[Any]] | None = None        # None: B = I
        self.B_abs = [[float(i == j) for j in range(n)] for i in range(n)]
        self.v = [Fraction(0)] * n
        self.v_abs = [0.0] * n
        self.theta: list[Any] = list(self.v)
        self.theta_abs = list(self.v_abs)
        self.scale = 0.0
        self.norm: Any = Fraction(0)
        self.K = 0
        self.rho_errors = 0

    def apply(self, M: list[list[Any]] | None, z: list[Any]) -> list[Any]:
        if M is None:
            return list(z)
        return [sum((a * b for a, b in zip(row, z) if b), self.ctx.mpf(0)) for row in M]

    def score(self, j: int) -> tuple[Any, Any, float]:
        p, ctx = self.p, self.ctx
        z = self.apply(self.B, self.rows[j])
        z_abs = [sum(a * b for a, b in zip(row, self.abs_rows[j])) for row in self.B_abs]
        num = numerator(self.theta, z, p, ctx)
        magnitude = pnorm_magnitude(self.theta_abs, z_abs, p, self.scale)
        if not isinstance(num, Fraction):
            ops = operations(self.K, self.n, 1, self.rho_errors)
            if abs(num) <= own_error(p, ops, self.theta, z, ctx):
                num = Fraction(0)  # a tie at the reference's precision (module docstring)
        score = Fraction(0) if num == 0 else to_mpf(num, ctx) / self.norm
        return score, num, magnitude

    def perceptron_score(self, j: int) -> tuple[Any, float]:
        return (sum((a * b for a, b in zip(self.v, self.rows[j]) if a and b), Fraction(0)),
                sum(a * b for a, b in zip(self.v_abs, self.abs_rows[j])))

    def update(self, j: int, label: int, rho: Any) -> None:
        x, xa, n, ctx, p = self.rows[j], self.abs_rows[j], self.n, self.ctx, self.p
        self.K += 1
        if rho:
            B = self.B or [[ctx.mpf(int(i == l)) for l in range(n)] for i in range(n)]
            gx = [to_mpf(v, ctx) for v in gradient(x, p, ctx)]
            a = self.apply(B, x)
            r = to_mpf(rho, ctx)
            self.B = [[B[i][l] - r * a[i] * gx[l] for l in range(n)] for i in range(n)]
            ga = [abs(float(v)) for v in gx]
            aa = [sum(u * w for u, w in zip(row, xa)) for row in self.B_abs]
            ra = abs(float(rho))
            self.B_abs = [[self.B_abs[i][l] + ra * aa[i] * ga[l] for l in range(n)]
                          for i in range(n)]
        self.v = [a + label * b for a, b in zip(self.v, x)]
        self.v_abs = [a + b for a, b in zip(self.v_abs, xa)]
        self.theta = self.apply(self.B, self.v)
        self.theta_abs = [sum(u * w for u, w in zip(row, self.v_abs)) for row in self.B_abs]
        self.norm = norm_power(self.theta, p, ctx)
        self.scale = float(self.norm)

    def final(self) -> dict[str, Any]:
        gt = gradient(self.theta, self.p, self.ctx)
        if self.B is None:
            w = list(gt)
        else:
            w = [sum((self.B[i][l] * gt[i] for i in range(self.n)), self.ctx.mpf(0))
                 for l in range(self.n)]
        return {"w": w, "v": list(self.v)}


def default_engine(kern: Kernel, p: Fraction) -> type:
    if p != 2:
        return PNorm
    if kern.is_linear:
        return Primal
    return IntDual if kern.is_rational else Dual


# -- the run ----------------------------------------------------------------------------
def higher_order(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
                 c: Any = Fraction(2, 5), rho: Any = "c/k", sparse: Any = False,
                 record_scores: bool = False) -> Trace:
    """Run HO_p(c) over ``epochs`` passes of (X, y); returns the exact trace."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    params = resolve_params(dict(p=p, c=c, rho=rho, sparse=sparse))
    trace = run_loop(rows, labels, epochs, kern, params, record_scores=True)
    if trace.fragile and not params["sparse"]:  # SPEC.md 12.5
        T = len(rows)
        errors = shadow_errors("higher_order", X, y, epochs, kern.spec, params, trace)
        trace.fragile = sharpen(trace.fragile, errors,
                                [labels[t % T] * sc for t, sc in enumerate(trace.scores)],
                                [[0]] * len(trace.scores))
    if not record_scores:
        trace.scores = None
    return trace


def run_loop(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
             params: dict[str, Any], *, record_scores: bool = False,
             engine: type | None = None,
             rule: Callable[[dict[str, Any], int, Any], Any] = rho_rule,
             observe: Callable[[dict[str, Any]], None] | None = None,
             is_mistake: Callable[[Any], bool] = lambda margin: margin <= 0,
             sparse_skips: Callable[[int, Any], bool] = lambda label, s: label * s < 0,
             algorithm: str = "higher_order") -> Trace:
    """The loop of Figure 1 over any state holder (``engine``).  ``observe`` receives, after
    every mistake, {"t", "j", "k", "label", "s" (v_{k-1}.x_t), "rho", "state" (the engine)};
    the tests and the planted wrong implementations use it, as they use ``rule`` (rho_k),
    ``is_mistake`` (of the margin y score) and ``sparse_skips`` (of y and s).  The float64
    error model is ``_ErrorModel``'s."""
    p, sparse = params["p"], params["sparse"]
    state = (engine or default_engine(kern, p))(rows, kern, p)
    T = len(rows)
    errors = _ErrorModel(kern, rows, epochs * T, p)
    rhos: list[Any] = []
    record = TrialRecord(labels, epochs, record_scores)

    for t, j, label in record.trials():
        score, decider, magnitude = state.score(j)  # w_{k-1}.x_t
        if record.scores is not None:
            record.scores.append(as_exact(score))
        if errors.score_is_fragile(score, magnitude):
            record.fragile.append(t)
        if not is_mistake(label * decider):  # mistake iff y_t score_t <= 0
            continue
        record.mistakes.append(t)
        k = len(record.mistakes)
        s, s_magnitude = state.perceptron_score(j)  # v_{k-1}.x_t
        s_err = errors.mistake(s_magnitude)
        rho_k = rule(params, k, s)
        if sparse and rho_k:
            if errors.branches(t, s, s_err):
                record.flag(t)
            if sparse_skips(label, s):
                rho_k = Fraction(0)  # B left alone; v still updated
        if rho_k:
            errors.factor_applied(params, s_err)
        state.update(j, label, rho_k)  # v_k = v_{k-1} + y_t x_t, B_k (Figure 1)
        rhos.append(rho_k)
        if observe is not None:
            observe({"t": t, "j": j, "k": k, "label": label, "s": s,
                     "rho": rho_k, "state": state})

    final = state.final()
    final["rho"] = rhos
    return record.trace(algorithm, kern, params, final, updates=list(record.mistakes))


class _ErrorModel:
    """The fragile rule of the module docstring along a run: K mistakes so far, the rounding
    count sum_i e_i of the rho_i applied, and whether B = I still (every rho 0), when a
    float64 form's p = 2 scores are exact (``_identity_is_exact``).  After a sparse decision
    float64 may take the other way (``branches``), every trial is fragile."""

    def __init__(self, kern: Kernel, rows: list[list[Fraction]], trials: int, p: Any):
        self.depth, self.n = kern.depth, len(rows[0])
        self.exact_identity = p == 2 and _identity_is_exact(kern, rows, trials)
        self.K, self.rho_errors, self.identity = 0, 0, True
        self.branch_from: int | None = None

    def score_is_fragile(self, score: Any, magnitude: float) -> bool:
        """|score| within SAFETY gamma_m M (m = ``operations``), or a branch taken before."""
        if self.branch_from is not None:
            return True
        if self.identity and self.exact_identity:
            return False
        err = score_error_bound(operations(self.K, self.n, self.depth, self.rho_errors),
                                magnitude_float(magnitude))
        return bool(err and within(score, err))

    def mistake(self, s_magnitude: float) -> float:
        """Count a mistake; the rounding bound of its s = v_{k-1}.x_t (0 when exact)."""
        self.K += 1
        if self.exact_identity and self.identity:
            return 0.0
        return score_error_bound(self.K + (self.n + 8) * self.depth,
                                 magnitude_float(s_magnitude))

    def branches(self, t: int, s: Any, s_err: float) -> bool:
        """Whether trial t is the first whose sparse decision y s >= 0 float64 may take the
        other way (s within s_err of 0)."""
        if s_err and within(s, s_err) and self.branch_from is None:
            self.branch_from = t
            return True
        return False

    def factor_applied(self, params: dict[str, Any], s_err: float) -> None:
        """A factor with rho != 0: B leaves I, and rho's roundings e join m."""
        self.identity = False
        self.rho_errors += rho_roundings(params, s_err)


def _identity_is_exact(kern: Kernel, rows: list[list[Fraction]], max_updates: int) -> bool:
    """While B = I (every rho so far 0) and p = 2, a float64 form computes v.x (primal: A = I
    exactly; dual: g = y; implicit: factors with rho = 0 leave z unchanged).  True iff that is
    exact for every trial: linear kernel, data on a dyadic grid, sums below 2^53 steps."""
    return kern.is_linear and linear_sums_exact(rows, max_updates)


# -- final-state bounds -----------------------------------------------------------------
def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """:func:`_final_error_bounds`, every bound at most ANY_STATE: a magnitude beyond
    float64's range (raw data whose |B| overflows) allows any final state, as a float64 form
    cannot hold that state either."""
    def cap(value: Any) -> Any:
        if isinstance(value, list):
            return [cap(v) for v in value]
        return value if value < ANY_STATE else ANY_STATE  # inf and NaN included
    return {key: cap(value) for key, value in _final_error_bounds(trace, X).items()}


def _final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """How far a float64 form's ``final`` may lie from the exact one (SPEC.md, the
    higher_order chapter, "Fragile trials and final-state bounds").

    The same absolute-value recursions as the fragile rule, rebuilt from the trace (the
    mistakes' examples and ``final.rho``): w_i within SAFETY gamma_m (|A| |v|)_i (p = 2) or
    (|B|^T G)_i with G_i = (p + 1) Theta_i^(p-1) / ||theta||_p^(p-2) (p != 2,
    ``_pnorm_w_bounds``); g_j within SAFETY gamma_m |g|_j (dual, kernels); v_i within
    gamma_{K+8} sum |x_ti|; rho_k within SAFETY gamma_{e_k} |rho_k|.  m is the fragile
    rule's, for K = all mistakes, plus T.  A sparse run with a fragile mistake may have
    taken the other branch: every bound is then ANY_STATE.
    """
    dense = X.toarray() if hasattr(X, "toarray") else X
    rows = [list(r) for r in (dense.tolist() if hasattr(dense, "tolist") else dense)]
    T, n = len(rows), len(rows[0])
    params = resolve_params(trace.params)
    p = params["p"]
    kern = parse_kernel(trace.kernel)
    mistakes = [t % T for t in trace.mistakes]
    K = len(mistakes)
    final = trace.final
    rhos = final["rho"]
    abs_rows = [[abs(float(v)) for v in row] for row in rows]

    rho_e, gram = _rho_roundings_along(rows, mistakes, kern, params)
    total_e = sum(e for e, r in zip(rho_e, rhos) if r)
    ops = operations(K, n, kern.depth, total_e) + T
    if params["sparse"] and set(trace.fragile or ()) & set(trace.mistakes):
        return {f"final.{key}": ([ANY_STATE] * len(val) if isinstance(val, list) else
                                 ANY_STATE) for key, val in final.items()}
    out: dict[str, Any] = {
        "final.rho": [_bound(e, abs(float(r)), r) if r else 0.0 for e, r in zip(rho_e, rhos)]}
    if not kern.is_linear and gram is not None:  # dual coefficients: the dual recursions
        g_abs = _dual_g_abs(gram, mistakes, rhos)
        out["final.g"] = [_bound(ops, ga, g) for ga, g in zip(g_abs, final["g"])]
        return out
    v_abs = [0.0] * n
    for j in mistakes:
        v_abs = [a + b for a, b in zip(v_abs, abs_rows[j])]
    out["final.v"] = [_bound(K + 8, a, vi) for a, vi in zip(v_abs, final["v"])]
    if p == 2:
        A_abs = [[float(i == l) for l in range(n)] for i in range(n)]
        for j, r in zip(mistakes, rhos):
            if r:
                A_abs = primal_update(A_abs, abs_rows[j], abs(float(r)), absolute=True)
        w_mag = [sum(a * b for a, b in zip(row, v_abs)) for row in A_abs]
        out["final.w"] = [_bound(ops, m, wi) for m, wi in zip(w_mag, final["w"])]
        return out
    out["final.w"] = _pnorm_w_bounds(rows, abs_rows, mistakes, rhos, p, final, v_abs, ops)
    return out


def _bound(ops: int, magnitude: float, exact: Any) -> float:
    """gamma_ops magnitude; a magnitude that underflowed to 0 while the exact value is not
    counts as the smallest subnormal."""
    return score_error_bound(ops, magnitude if magnitude or not exact else SMALLEST_SUBNORMAL)


def _rho_roundings_along(rows: list[list[Any]], mistakes: list[int], kern: Kernel,
                         params: dict[str, Any]) -> tuple[list[int], Gram | None]:
    """e_k of each mistake's rho, with the s_err the run used (an upper bound without the
    labels), and the Gram matrix the bounds read (theorem1 or a kernel; else None)."""
    n, rule = len(rows[0]), params["rho"]
    exact_rows = None
    if rule == "theorem1":
        exact_rows, _ = exact_data(rows, [1] * len(rows))
    gram = Gram(kern, exact_rows or [[Fraction(v) for v in r] for r in rows]) \
        if rule == "theorem1" or not kern.is_linear else None
    rho_e = []
    for k, j in enumerate(mistakes, start=1):
        if gram is not None and rule == "theorem1":
            mag = sum(gram.magnitude(i, j) for i in mistakes[:k - 1])
            s_err = score_error_bound(k + (n + 8) * kern.depth, magnitude_float(mag))
        else:
            s_err = 0.0
        rho_e.append(rho_roundings(params, s_err))
    return rho_e, gram


def _pnorm_w_bounds(rows: list[list[Any]], abs_rows: list[list[float]], mistakes: list[int],
                    rhos: list[Any], p: Any, final: dict[str, Any], v_abs: list[float],
                    ops: int) -> list[float]:
    """p != 2: the bounds on w, with B rebuilt (mpmath) for theta = B v and the
    normaliser, and |B| as in ``PNorm``."""
    n = len(rows[0])
    ctx = number_context()
    exact_x = [[Fraction(v) for v in rows[j]] for j in mistakes]
    B = [[ctx.mpf(int(i == l)) for l in range(n)] for i in range(n)]
    B_abs = [[float(i == l) for l in range(n)] for i in range(n)]
    for x, xa, r in zip(exact_x, (abs_rows[j] for j in mistakes), rhos):
        if not r:
            continue
        gx = [to_mpf(v, ctx) for v in gradient(x, p, ctx)]
        a = [sum((B[i][l] * x[l] for l in range(n)), ctx.mpf(0)) for i in range(n)]
        B = [[B[i][l] - to_mpf(r, ctx) * a[i] * gx[l] for l in range(n)] for i in range(n)]
        ga = [abs(float(v)) for v in gx]
        aa = [sum(u * w for u, w in zip(row, xa)) for row in B_abs]
        B_abs = [[B_abs[i][l] + abs(float(r)) * aa[i] * ga[l] for l in range(n)]
                 for i in range(n)]
    theta = [sum((B[i][l] * to_mpf(final["v"][l], ctx) for l in range(n)), ctx.mpf(0))
             for i in range(n)]
    theta_abs = [sum(u * w for u, w in zip(row, v_abs)) for row in B_abs]
    scale = float(norm_power(theta, p, ctx))
    if not scale:
        # theta = 0, or ||theta||_p^p below float64's range: a float form's theta may be its
        # rounding error alone.  g is 1-homogeneous, |g(t)_i| <= ||t||_p <= ||t||_1, so
        # |w - w~| <= |B|^T (|g(theta)| + |g(theta~)|) <= |B|^T 1 (2 n max|theta| + err).
        top = max(abs(float(t)) for t in theta)
        err = score_error_bound(ops + n + 16, n * max(theta_abs))
        spread = 2 * n * top + err
        return [sum(B_abs[i][l] for i in range(n)) * spread for l in range(n)]
    G = [pnorm_magnitude([ta], [1.0], p, scale) for ta in theta_abs]
    w_mag = [sum(B_abs[i][l] * G[i] for i in range(n)) for l in range(n)]
    return [_bound(ops + n + 16, m, wi) for m, wi in zip(w_mag, final["w"])]


def _dual_g_abs(gram: Gram, mistakes: list[int], rhos: list[Any]) -> list[float]:
    """|g| of the dual recursions (class Dual's ``_abs`` twins), from the mistakes and rho."""
    active: list[int] = []
    D: dict[tuple[int, int], float] = {}
    h: list[float] = []
    g: list[float] = []
    for k, (j, r) in enumerate(zip(mistakes, rhos)):
        kabs = [gram.magnitude(i, j) for i in mistakes[:k]]
        qa = gram.magnitude(j, j)
        ba = {i: sum(D[i, l] * kabs[l] for l in active) for i in active}
        ha_new = sum(kabs) + qa
        h = [a + b for a, b in zip(h, kabs)]
        ra = abs(float(r))
        ga_new = 1.0 + ra * sum(ba[i] * h[i] for i in active)
        for i in active:
            g[i] += ba[i] * (1.0 + ra * ha_new)
        if r:
            da = ra * ra * (sum(kabs[i] * ba[i] for i in active) + qa) + 2 * ra
            ga_new += da * ha_new
            for i in active:
                D[i, k] = D[k, i] = ra * ba[i]
            D[k, k] = da
            active.append(k)
        h.append(ha_new)
        g.append(ga_new)
    return g
