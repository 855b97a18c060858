"""The Second-Order Perceptron's exact engines (``reference.second_order`` runs them): the
state holders that give, at each trial, s = x_t^T A^{-1} v_{k-1} and q = x_t^T A^{-1} x_t.

- ``Primal`` (linear kernel): A = a_k I + X X^T fraction-free, as adj(M) and det(M) of the
  integer matrix M = L A;
- ``IntDual`` (rational kernels, Theorem 3.3): H = (a_k I + G)^{-1} over the mistakes, the
  same fraction-free way, bordered per mistake (``_adjugate``, ``_exact_divider``);
- ``Dual`` (any kernel; the Gaussian kernel's numbers are mpmath's): H bordered per mistake;
- ``Pinv`` (section 3.3's pseudoinverse): a basis of span(X) among the mistakes, with the
  rank decision a float64 form makes (``PINV_RANK_TOL``) flagged where it is ambiguous.

SPEC.md 13.2 (the definitions) and 13.4 (how the engines stay exact).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Protocol

from ..errors import DataError
from ..rounding import UNIT_ROUNDOFF, float_or_inf, magnitude_float
from .common import Gram


class RegulariserParams(Protocol):
    """What the state holders read of ``second_order.SecondOrderParams`` (which this module
    cannot import: ``second_order`` imports it): the regulariser a and its growth."""

    @property
    def a(self) -> Fraction: ...

    @property
    def a_growth(self) -> str: ...

#: The fast forms' rank decision for the pseudoinverse: x_t counts as inside span(X) iff its
#: squared distance to it is at most PINV_RANK_TOL k(x_t, x_t).
PINV_RANK_TOL = 1e-9
#: Safety factor of the stated fragile rule (SPEC.md).
FRAGILE_FACTOR = 64.0


def a_k(par: RegulariserParams, k: int) -> Fraction:
    """The parameter in force at a trial with k - 1 mistakes before it (a_k, k >= 1)."""
    a: Fraction = par.a
    return a if par.a_growth == "constant" else a * k


def exact_inverse(M: list[list[Any]], one: Any) -> list[list[Any]]:
    """Exact Gauss-Jordan inverse of a nonsingular matrix (pivoting on nonzero entries)."""
    n = len(M)
    aug = [list(row) + [one if i == j else 0 * one for j in range(n)]
           for i, row in enumerate(M)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(aug[r][col]))
        aug[col], aug[piv] = aug[piv], aug[col]
        if not aug[col][col]:  # a I + K, a > 0: singular only at mpmath's precision
            raise DataError(
                "the matrix a I + K is singular at the reference's working precision "
                f"({getattr(getattr(one, 'context', None), 'prec', '?')} bits): a is below "
                "the resolution of the Gaussian kernel's values there; use a larger a")
        inv = one / aug[col][col]
        aug[col] = [v * inv for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col]:
                f = aug[r][col]
                aug[r] = [v - f * w for v, w in zip(aug[r], aug[col])]
    return [row[n:] for row in aug]


def _matvec(M: list[list[Any]], x: list[Any], zero: Any = Fraction(0)) -> list[Any]:
    """M x; every entry starts from ``zero`` (Fraction(0) or the context's mpf 0), so an
    empty or all-zero sum is never a Python int that a later division turns into a float."""
    return [sum((m * v for m, v in zip(row, x) if v), zero) for row in M]


def _dot(x: list[Any], z: list[Any], zero: Any = Fraction(0)) -> Any:
    return sum((a * b for a, b in zip(x, z)), zero)


def _fnorm(M: list[list[Any]]) -> float:
    """||M||_F as a float; inf where it lies beyond float64's range (a condition estimate
    that large makes every rule it feeds flag, as it should: no float64 form holds M)."""
    try:
        return math.sqrt(math.fsum(float(v) * float(v) for row in M for v in row))
    except OverflowError:
        return math.inf


class Primal:
    """Linear kernel: A = a_k I + X X^T (n x n), fraction-free.  With D a common denominator
    of the data (z = D x is an integer vector) and L = lcm(D^2, den(a)), M = L A is an integer
    matrix; keep N = adj(M) and d = det(M) (so A^{-1} = L N / d).  A mistake adds f z z^T,
    f = L / D^2: by the determinant lemma d' = d + f z^T N z, and Sherman-Morrison gives
    adj' = (d' N - f h h^T) / d with h = N z, an exact division.  The trial's quantities:
    s = f z^T N V / d (V = D v), q = f z^T N z / d, and score = s / (1 + q) = f z^T N V / d'."""

    def __init__(self, rows: list[list[Fraction]], par: RegulariserParams, one: Any):
        self.par = par
        n = len(rows[0])
        D = 1
        for row in rows:
            for v in row:
                D = D * v.denominator // math.gcd(D, v.denominator)
        self.D = D
        self.z = [[int(v * D) for v in row] for row in rows]
        self.a = a_k(par, 1)
        self.L = D * D * par.a.denominator // math.gcd(D * D, par.a.denominator)
        self.f = self.L // (D * D)
        aL = int(self.a * self.L)
        self.N = [[aL ** (n - 1) if i == j else 0 for j in range(n)] for i in range(n)]
        self.d = aL ** n
        self.V = [0] * n
        self.support: list[int] = []
        self.k = 1

    def score(self, j: int) -> tuple[Any, Any]:
        z = self.z[j]
        self.h = h = [sum(m * zi for m, zi in zip(row, z) if zi) for row in self.N]
        self.zNz = sum(hi * zi for hi, zi in zip(h, z))
        self.hV = sum(hi * vi for hi, vi in zip(h, self.V))
        return Fraction(self.f * self.hV, self.d), None  # q only through exact_score

    def exact_score(self, s: Any, q: Any) -> Fraction:
        """s / (1 + q) = f z^T N V / (d + f z^T N z): one reduction."""
        return Fraction(self.f * self.hV, self.d + self.f * self.zNz)

    def mistake(self, j: int, label: int, q: Any) -> None:
        z, h, f, d = self.z[j], self.h, self.f, self.d
        n = len(z)
        self.V = [vi + label * zi for vi, zi in zip(self.V, z)]
        self.support.append(j)
        self.k += 1
        new_a = a_k(self.par, self.k)
        if new_a != self.a:  # adaptive: a fresh adjugate of M = L (a_k I + C)
            self.a = new_a
            aL = int(new_a * self.L)
            M = [[aL if r == c else 0 for c in range(n)] for r in range(n)]
            for i in self.support:
                zi = self.z[i]
                for r in range(n):
                    if zi[r]:
                        Mr, fr = M[r], f * zi[r]
                        for c in range(n):
                            Mr[c] += fr * zi[c]
            self.N, self.d = _adjugate(M)
            return
        dn = d + f * self.zNz
        N = [[0] * n for _ in range(n)]
        for r in range(n):   # symmetric: the upper half, mirrored
            row, fh = self.N[r], f * h[r]
            for c in range(r, n):
                N[r][c] = N[c][r] = (row[c] * dn - fh * h[c]) // d
        self.N, self.d = N, dn

    def final(self) -> dict[str, Any]:
        """w = A^{-1} v = L N V / (D d) with a = a_{K+1}; v = V / D."""
        den = self.D * self.d
        return {"w": [Fraction(self.L * sum(m * v for m, v in zip(row, self.V)), den)
                      for row in self.N],
                "v": [Fraction(v, self.D) for v in self.V]}


class Dual:
    """Any kernel, Theorem 3.3: H = (a_k I + G)^{-1} over the mistakes, bordered per mistake."""

    def __init__(self, gram: Gram, par: RegulariserParams, one: Any, conv: Any):
        self.gram, self.par, self.one, self.conv = gram, par, one, conv
        self.a = conv(a_k(par, 1))
        self.support: list[int] = []
        self.labels: list[int] = []
        self.H: list[list[Any]] = []
        self.k = 1

    def score(self, j: int) -> tuple[Any, Any]:
        g = self.gram
        self.b = [g(i, j) for i in self.support]
        zero = 0 * self.one
        self.h = _matvec(self.H, self.b, zero)     # H b
        self.bh = _dot(self.b, self.h, zero)       # b^T H b
        s = _dot(self.labels, self.h, zero)        # y^T H b = x^T A^{-1} v
        c = g(j, j)
        return s, (c - self.bh) / self.a           # q = x^T A^{-1} x

    def mistake(self, j: int, label: int, q: Any) -> None:
        self.k += 1
        new_a = self.conv(a_k(self.par, self.k))
        self.support.append(j)
        self.labels.append(label)
        if new_a != self.a:
            self.a = new_a
            g = self.gram
            self.H = exact_inverse([[g(r, c) + (new_a if ri == ci else 0)
                                     for ci, c in enumerate(self.support)]
                                    for ri, r in enumerate(self.support)], self.one)
            return
        d = self.a * (1 + q)          # Schur complement a + c - b^T H b
        h = self.h
        H = [[hij + hi * hl / d for hij, hl in zip(row, h)] for row, hi in zip(self.H, h)]
        for row, hi in zip(H, h):
            row.append(-hi / d)
        H.append([-hi / d for hi in h] + [self.one / d])
        self.H = H

    def alpha(self) -> list[Any]:
        """H y: w = sum_i alpha_i x_i (in feature space) is A_K^{-1} v_K."""
        return _matvec(self.H, self.labels, 0 * self.one)


class IntDual:
    """Rational kernels, Theorem 3.3 fraction-free: with L a common denominator of a and of
    every kernel value seen, M = L (a_k I + G) is an integer matrix and H = L N / d with
    N = adj(M), d = det(M).  Growing M by the border (b', c') = L (b, a + c) gives
    d' = d c' - b'^T N b' and N' = [[(d' N + h h^T) / d, -h], [-h^T, d]] with h = N b',
    every division exact (Bareiss).  Python integers, no gcd: much faster than Fraction."""

    def __init__(self, gram: Gram, par: RegulariserParams):
        self.gram, self.par = gram, par
        self.a = a_k(par, 1)
        self.L = self.a.denominator
        self.support: list[int] = []
        self.labels: list[int] = []
        self.N: list[list[int]] = []
        self.d = 1
        self.k = 1

    def _rescale(self, values: list[Fraction]) -> None:
        L = self.L
        for v in values:
            den = v.denominator
            if L % den:
                L = L * den // math.gcd(L, den)
        if L != self.L:
            r, k = L // self.L, len(self.support)
            if k:
                f = r ** (k - 1)
                self.N = [[v * f for v in row] for row in self.N]
                self.d *= r ** k
            self.L = L

    def score(self, j: int) -> tuple[Any, Any]:
        g = self.gram
        b = [g(i, j) for i in self.support]
        c = g(j, j)
        self._rescale(b + [c, self.a])
        L = self.L
        self.bi = [v.numerator * (L // v.denominator) for v in b]
        ac = self.a + c
        self.ci = ac.numerator * (L // ac.denominator)
        self.hi = [sum(m * v for m, v in zip(row, self.bi) if v) for row in self.N]
        self.bh = sum(u * v for u, v in zip(self.bi, self.hi))
        s = Fraction(sum(l * v for l, v in zip(self.labels, self.hi)), self.d)
        q = (c - Fraction(self.bh, L * self.d)) / self.a
        return s, q

    def mistake(self, j: int, label: int, q: Any) -> None:
        self.k += 1
        self.support.append(j)
        self.labels.append(label)
        new_a = a_k(self.par, self.k)
        if new_a != self.a:  # adaptive: start again from M = L (a_k I + G)
            self.a = new_a
            g = self.gram
            G = [[g(r, c) for c in self.support] for r in self.support]
            self._rescale([v for row in G for v in row] + [new_a])
            L = self.L
            M = [[int((v + (new_a if r == c else 0)) * L) for c, v in enumerate(row)]
                 for r, row in enumerate(G)]
            self.N, self.d = _adjugate(M)
            return
        d, h, dn = self.d, self.hi, self.d * self.ci - self.bh
        k = len(h)
        N = [[0] * k for _ in range(k)]
        top = max((abs(v) for row in self.N for v in row), default=0).bit_length() \
            + dn.bit_length() + 2
        div = _exact_divider(d, max(top, 2 * max((abs(v) for v in h), default=0).bit_length()
                                    + 2))
        for i, (row, hi) in enumerate(zip(self.N, h)):  # symmetric: the upper half, mirrored
            out = N[i]
            for l in range(i, k):
                out[l] = N[l][i] = div(row[l] * dn + hi * h[l])
        for row, hi in zip(N, h):
            row.append(-hi)
        N.append([-hi for hi in h] + [d])
        self.N, self.d = N, dn

    def alpha(self) -> list[Any]:
        return [Fraction(self.L * sum(m * l for m, l in zip(row, self.labels)), self.d)
                for row in self.N]


def _exact_divider(d: int, bits: int) -> Any:
    """n -> n / d for n known to be a multiple of d with |n| < 2^bits: Jebelean's exact
    division, a multiplication by d's inverse modulo 2^B (B bounds the quotient), several
    times faster than Python's long division at thousands of bits."""
    if bits <= 2000:
        return lambda n: n // d
    tz = (d & -d).bit_length() - 1
    B = bits - d.bit_length() + 3
    mask, half, full = (1 << B) - 1, 1 << (B - 1), 1 << B
    inv = pow(d >> tz, -1, full)

    def divide(n: int) -> int:
        q = (((n >> tz) & mask) * inv) & mask
        return q - full if q >= half else q
    return divide


def _adjugate(M: list[list[int]]) -> tuple[list[list[int]], int]:
    """adj(M) and det(M) of a positive definite integer matrix, by fraction-free
    Gauss-Jordan elimination (Bareiss): every division is exact, no pivoting is needed."""
    n = len(M)
    A = [list(row) + [1 if i == j else 0 for j in range(n)] for i, row in enumerate(M)]
    prev = 1
    for i in range(n):
        piv = A[i][i]
        for r in range(n):
            if r != i:
                f = A[r][i]
                A[r] = [(piv * u - f * w) // prev for u, w in zip(A[r], A[i])]
        prev = piv
    return [row[n:] for row in A], prev


class Pinv:
    """Pseudoinverse: a basis B of span(X) among the mistakes (Gram G_B), the mistakes'
    coordinates beta_i in it, Bm = sum beta_i beta_i^T and gamma = sum y_i beta_i; for x, v in
    span(X), x^T C^+ v = alpha^T Bm^{-1} gamma with alpha the coordinates of x (SPEC.md)."""

    def __init__(self, gram: Gram, one: Any, exact: bool):
        self.gram, self.one, self.exact = gram, one, exact
        self.basis: list[int] = []
        self.GBinv: list[list[Any]] = []
        self.Bm: list[list[Any]] = []
        self.Bminv: list[list[Any]] = []
        self.gamma: list[Any] = []
        self.GB: list[list[Any]] = []
        self.support: list[int] = []

    def score(self, j: int) -> tuple[Any, Any]:
        g = self.gram
        self.bB = [g(i, j) for i in self.basis]
        self.c = g(j, j)
        zero = 0 * self.one
        self.alpha_x = _matvec(self.GBinv, self.bB, zero)
        self.rho = self.c - _dot(self.bB, self.alpha_x, zero)  # squared distance to span(X)
        if self.exact:
            self.inside = self.rho == 0
        else:  # mpmath: zero within the working precision
            assert self.gram.ctx is not None      # not exact: the Gram's context
            self.inside = abs(self.rho) <= abs(self.c) * 2.0 ** (-self.gram.ctx.prec // 2)
        if not self.inside:
            return 0 * self.one, 0 * self.one
        self.z = _matvec(self.Bminv, self.alpha_x, zero)
        return _dot(self.z, self.gamma, zero), _dot(self.z, self.alpha_x, zero)

    def mistake(self, j: int, label: int, q: Any) -> None:
        self.support.append(j)
        if not self.inside:   # the rank grows: border G_B^{-1}, extend Bm by a unit block
            al, rho = self.alpha_x, self.rho
            G = [[gij + ai * al_ / rho for gij, al_ in zip(row, al)]
                 for row, ai in zip(self.GBinv, al)]
            for row, ai in zip(G, al):
                row.append(-ai / rho)
            G.append([-ai / rho for ai in al] + [self.one / rho])
            self.GBinv = G
            for row, bi in zip(self.GB, self.bB):
                row.append(bi)
            self.GB.append(self.bB + [self.c])
            for M in (self.Bm, self.Bminv):
                for row in M:
                    row.append(0 * self.one)
                M.append([0 * self.one] * (len(M)) + [self.one])
            self.gamma.append(label * self.one)
            self.basis.append(j)
            return
        al, z, d = self.alpha_x, self.z, 1 + q
        self.Bm = [[m + ai * aj for m, aj in zip(row, al)] for row, ai in zip(self.Bm, al)]
        self.Bminv = [[m - zi * zj / d for m, zj in zip(row, z)]
                      for row, zi in zip(self.Bminv, z)]
        self.gamma = [gi + label * ai for gi, ai in zip(self.gamma, al)]

    def alpha(self) -> list[Any]:
        """Coefficients over the mistakes (nonzero on the basis only) of C^+ v =
        X_B G_B^{-1} Bm^{-1} gamma."""
        zero = 0 * self.one
        coef = _matvec(self.GBinv, _matvec(self.Bminv, self.gamma, zero), zero) \
            if self.basis else []
        at = dict(zip(self.basis, coef))
        out, seen = [], set()
        for j in self.support:  # the first mistake on a basis example carries its weight
            out.append(at[j] if j in at and j not in seen else 0 * self.one)
            seen.add(j)
        return out

    def rank_ambiguous(self, ops: int) -> bool:
        """Whether float64 may decide "x_t in span(X)" the other way (SPEC.md): the exact
        squared distance rho against PINV_RANK_TOL k(x, x), with rho's float64 error taken
        as 64 u m (r + 1) kappa k(x, x)."""
        if not self.c:  # x = 0 in feature space: every form computes rho = 0 exactly
            return False
        cf = magnitude_float(abs(self.c))
        err = FRAGILE_FACTOR * UNIT_ROUNDOFF * ops * (len(self.basis) + 1) \
            * self.condition_G() * cf
        tol = PINV_RANK_TOL * cf
        if self.inside:
            return err >= tol
        return not float_or_inf(self.rho) - err > tol  # inf - inf: ambiguous

    def condition_G(self) -> float:
        """||G_B||_F ||G_B^{-1}||_F: the condition of the basis' Gram matrix."""
        return _fnorm(self.GB) * _fnorm(self.GBinv) if self.basis else 1.0

    def condition(self) -> float:
        """||G_B||_F ||G_B^{-1}||_F ||Bm||_F ||Bm^{-1}||_F: the condition the rule uses."""
        if not self.basis:
            return 1.0
        return (_fnorm(self.GB) * _fnorm(self.GBinv) * _fnorm(self.Bm) * _fnorm(self.Bminv))
