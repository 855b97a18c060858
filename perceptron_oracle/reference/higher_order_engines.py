"""The exact engines of HO_p(c): three ways to hold the state of Figure 1.  SPEC.md 12.4.

Brotto, Gentile & Vitale, "On Higher-Order Perceptron Algorithms" (NIPS 2007), section 2.
Each engine gives ``score(j)`` (the score w_{k-1}.x_j, a number with its sign, and the
magnitude M of its terms for the fragile rule), ``perceptron_score(j)`` (s = v_{k-1}.x_j and
its magnitude), ``update(j, label, rho)`` (v_k = v_{k-1} + y x, B_k = B_{k-1}
(I - rho x g(x)^T)) and ``final()``:

- ``Primal`` (p = 2, linear kernel; item 1): A_k = B_k^T B_k and w_k = A_k v_k as integers
  over one common denominator each (``common_denominator``, ``reduce_common``, ``twos``,
  ``lcm2``: the same numbers as Fraction arithmetic without a gcd per operation);
- ``Dual`` (p = 2, any kernel; item 2): dual coordinates over the mistakes, and ``IntDual``
  the same recursions in integers for a rational kernel;
- ``PNorm`` (p != 2, linear kernel; item 3): B_k explicitly, in mpmath once a factor with
  rho != 0 has been applied.

Every engine also runs its recursion on absolute values (floats): the magnitudes of the
float64 error model (``reference.higher_order_bounds``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import Kernel
from ..numbers import number_context
from ..pnorm import link_inverse, normaliser, to_mpf
from .common import Gram
from .higher_order_bounds import operations, primal_update
from .pnorm_perceptron import numerator, own_error, pnorm_magnitude

# -- p = 2, linear kernel: A_k in integers over a common denominator --------------------------

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


def as_exact(score: Any) -> Any:
    """A score as the trace holds it: (num, den) pairs become Fractions."""
    return Fraction(*score) if isinstance(score, tuple) else score


# -- the integer tricks -----------------------------------------------------------------------

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


# -- p = 2, any kernel: dual coordinates over the mistakes ------------------------------------

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
        self.dK, self._outer = kern.integer_form(dX)  # k = outer(a.b) / dK (None: a.b)
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
                dot = self._outer(dot)
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


# -- p != 2, linear kernel: B_k explicitly ----------------------------------------------------

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
            gx = [to_mpf(v, ctx) for v in link_inverse(x, p, ctx, rational=True)]
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
        self.norm = normaliser(self.theta, p, ctx)
        self.scale = float(self.norm)

    def final(self) -> dict[str, Any]:
        gt = link_inverse(self.theta, self.p, self.ctx, rational=True)
        if self.B is None:
            w = list(gt)
        else:
            w = [sum((self.B[i][l] * gt[i] for i in range(self.n)), self.ctx.mpf(0))
                 for l in range(self.n)]
        return {"w": w, "v": list(self.v)}
