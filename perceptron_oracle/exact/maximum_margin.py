"""What ROMMA's and PUMMA's fast exact engines share: ``reference.maximum_margin``'s kernel
rows, dual state and closed forms (15)/(19), holding the same numbers, computed faster.

- ``FastRows`` (``Rows``): the exact kernel values k(x_i, x_j) from one integer Gram matrix
  (``fmpz_mat``: the rows over a common denominator, A A^T, then the kernel's integer form),
  each converted to the run's numbers as the reference converts it (an mpf of a dyadic value
  directly by ``from_man_exp``, which rounds as ``mpf(n) / d`` does) when it is first read;
  the float magnitudes by numpy in the reference's summation order (a cumulative sum is
  sequential).
- ``FastDualWeights`` (``DualWeights``): the score w.phi(x_j) = sum_i alpha_i k(x_i, x_j) as
  one integer dot product (``fmpz_mat``) of the coefficients over a common scale with the
  kernel column over its own, then one conversion: a Fraction, or in mpmath the once-rounded
  exact sum, which is what ``fdot`` returns whenever its sum drops no term (mpmath's
  ``mpf_sum`` drops a term only across an exponent gap beyond twice the precision: the
  filter bounds the gap and, where that does not decide, ``fdot`` itself runs).  The error
  model's float sums (``magnitude``, ``slack_error``, ``norm_error``) are numpy evaluations
  of the reference's expressions in its order: ``math.fsum`` where it sums by ``fsum``, a
  sequential cumulative sum where it accumulates by ``+=``.
- ``solve_2norm_mpf``: ``reference.maximum_margin.solve_2norm`` in mpmath, operation for
  operation, its long products and quotients by FLINT and rounded by mpmath's own
  ``normalize`` as ``mpf_mul`` and ``mpf_div`` round them (``mul``, ``div``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpz, fmpz_mat
from mpmath.libmp import (
    from_int,
    from_man_exp,
    fzero,
    mpf_add,
    mpf_div,
    mpf_ge,
    mpf_le,
    mpf_mul,
    mpf_sub,
    normalize,
    round_nearest,
)

from ..kernels import LinearKernel, PolynomialKernel
from ..reference.common import Gram
from ..reference.maximum_margin import DualWeights, Numbers, Rows
from ..reference.maximum_margin_errors import StepError, clamped_float, finite
from ..rounding import ANY_STATE, SMALLEST_SUBNORMAL, power_or_inf, score_error_bound

#: Above this many bits a mantissa product or quotient is taken by FLINT (Python's below).
FLINT_BITS = 1500

#: Up to this many examples the magnitudes are also kept as one T x T matrix (``block``).
MATRIX_ROWS = 4096

Column = tuple[Any, int, int]   # (fmpz_mat, exponent or denominator, bit spread)
Raw = tuple[int, int, int, int]  # an mpf's (sign, mantissa, exponent, bit count)


# -- mpmath's products and quotients, long mantissas by FLINT ---------------------------------

def mul(s: Raw, t: Raw, prec: int) -> Raw:
    """``mpf_mul(s, t, prec, round_nearest)``."""
    ssign, sman, sexp, sbc = s
    tsign, tman, texp, tbc = t
    if not sman or not tman or sbc + tbc < 2 * FLINT_BITS:
        return mpf_mul(s, t, prec, round_nearest)  # type: ignore[no-any-return]
    man = int(fmpz(sman) * fmpz(tman))
    return normalize(ssign ^ tsign, man, sexp + texp, man.bit_length(),  # type: ignore[no-any-return]
                     prec, round_nearest)


def div(s: Raw, t: Raw, prec: int) -> Raw:
    """``mpf_div(s, t, prec, round_nearest)`` (its quotient with ``extra`` bits and a sticky
    bit for a remainder)."""
    ssign, sman, sexp, sbc = s
    tsign, tman, texp, tbc = t
    if not sman or not tman or tman == 1 or max(sbc, tbc) < FLINT_BITS:
        return mpf_div(s, t, prec, round_nearest)  # type: ignore[no-any-return]
    extra = max(prec - sbc + tbc + 5, 5)
    quot, rem = divmod(fmpz(sman) << extra, fmpz(tman))
    q = int(quot)
    if rem:
        q = (q << 1) + 1
        extra += 1
    return normalize(ssign ^ tsign, q, sexp - texp - extra, q.bit_length(),  # type: ignore[no-any-return]
                     prec, round_nearest)


def solve_2norm_mpf(vv: Any, zz: Any, vz: Any, r: int) -> tuple[Any, Any, float] | None:
    """``solve_2norm(vv, zz, vz, r, exact=False)`` for mpf ``vv``, ``zz``, ``vz`` of one
    context: the same operations on the same values (``mul``, ``div``)."""
    ctx = vv.context
    prec, make = ctx.prec, ctx.make_mpf
    V, Z, M, R = vv._mpf_, zz._mpf_, vz._mpf_, from_int(r)
    if zz == 0:
        return None
    P = mul(V, Z, prec)                                      # vv * zz
    RM = mpf_mul(M, R, prec, round_nearest)                  # r * vz
    if vv == 0 or mpf_ge(RM, P):                             # case (i)
        return make(div(R, Z, prec)), make(mpf_mul(V, fzero, prec, round_nearest)), 1.0
    MM = mul(M, M, prec)                                     # vz * vz
    D = mpf_sub(P, MM, prec, round_nearest)
    tiny = mpf_mul(P, from_man_exp(1, -(prec // 2)), prec, round_nearest)
    if mpf_le(D, fzero) or mpf_le(D, tiny):
        return None
    lam = div(mul(V, mpf_sub(R, M, prec, round_nearest), prec), D, prec)
    eta = div(mpf_sub(P, RM, prec, round_nearest), D, prec)
    kappa = min(clamped_float(make(div(mpf_add(P, MM, prec, round_nearest), D, prec))),
                ANY_STATE)
    return make(lam), make(eta), kappa


# -- the kernel rows ---------------------------------------------------------------------------

class LazyRow(list[Any]):
    """A kernel row whose entries are converted when first read (by index or iteration)."""

    def __init__(self, value: Any, size: int):
        super().__init__()
        self.value, self.size = value, size
        self.cache: dict[int, Any] = {}

    def __getitem__(self, i: Any) -> Any:
        if i not in self.cache:
            self.cache[i] = self.value(i)
        return self.cache[i]

    def __iter__(self) -> Any:
        return (self[i] for i in range(self.size))

    def __len__(self) -> int:
        return self.size


class KernelTables:
    """What the runs of one call share (``run_modes`` may run twice, Fraction then mpmath):
    for a rational kernel, the integer Gram matrix of the rows over their common
    denominator, k(x_i, x_j) = ``outer``(G_ij) / ``den``, its columns as integer matrices,
    and the float magnitudes of the linear and polynomial kernels."""

    def __init__(self, gram: Gram):
        rows = gram.rows
        self.T = len(rows)
        self.grams: list[Any] | None = None
        self.den, self.outer, self.den_shift = 1, None, -1
        self.columns: dict[int, tuple[Any, int]] = {}
        self.arrays: dict[int, Any] = {}
        self.matrix = np.zeros((self.T, self.T)) if self.T <= MATRIX_ROWS else None
        self.abs_rows = np.array(gram.abs_rows, dtype=np.float64)
        if gram.kernel.is_rational:
            scale = math.lcm(*(v.denominator for row in rows for v in row))
            A = fmpz_mat([[int(v * scale) for v in row] for row in rows])
            self.grams = (A * A.transpose()).entries()
            self.den, self.outer = gram.kernel.integer_form(scale)
            if self.den & (self.den - 1) == 0:
                self.den_shift = self.den.bit_length() - 1

    def integer(self, i: int, j: int) -> int:
        """k(x_i, x_j) times ``den`` (an integer)."""
        assert self.grams is not None
        g = int(self.grams[i * self.T + j])
        return g if self.outer is None else self.outer(g)

    def column(self, j: int) -> tuple[Any, int]:
        """(k(x_., x_j) den as a T x 1 fmpz_mat, the longest entry's bit length)."""
        if j not in self.columns:
            assert self.grams is not None
            T = self.T
            if self.outer is None:   # G is symmetric: column j is row j
                entries = self.grams[j * T:(j + 1) * T]
                bits = max(abs(v).bit_length() for v in entries)
                self.columns[j] = fmpz_mat(T, 1, entries), bits
            else:
                ints = [self.integer(i, j) for i in range(T)]
                bits = max(abs(v).bit_length() for v in ints)
                self.columns[j] = fmpz_mat(T, 1, ints), bits
        return self.columns[j]


class FastRows(Rows):
    """``Rows`` with the values of a rational kernel from one integer Gram matrix
    (``KernelTables``) and the magnitudes of the linear and polynomial kernels by numpy
    (same values, same floats)."""

    def __init__(self, gram: Gram, num: Numbers, T: int, tables: KernelTables | None = None):
        super().__init__(gram, num, T)
        self.tables = KernelTables(gram) if tables is None else tables
        shared = isinstance(gram.kernel, (LinearKernel, PolynomialKernel))
        self.arrays: dict[int, Any] = self.tables.arrays if shared else {}
        self.matrix = self.tables.matrix if shared else (
            np.zeros((T, T)) if T <= MATRIX_ROWS else None)   # ``array``'s rows
        self.columns: dict[int, Column | None] = {}
        self.abs_rows = self.tables.abs_rows
        self.grams = self.tables.grams
        self.den, self.outer, self.den_shift = (self.tables.den, self.tables.outer,
                                                self.tables.den_shift)
        self.integer = self.tables.integer

    def __call__(self, j: int) -> list[Any]:
        if j not in self.values:
            if self.grams is None:
                return super().__call__(j)
            self.values[j] = LazyRow(lambda i: self._number(self.integer(i, j)), self.T)
        return self.values[j]

    def _number(self, value: int) -> Any:
        """value / den in the run's numbers, as ``Numbers`` converts the exact Fraction."""
        num = self.num
        if num.exact:
            return Fraction(value, self.den)
        assert num.ctx is not None
        if self.den_shift >= 0:
            return num.ctx.make_mpf(from_man_exp(value, -self.den_shift, num.ctx.prec,
                                                 round_nearest))
        return num(Fraction(value, self.den))

    def array(self, j: int) -> Any:
        """``magnitude(j)`` as a float64 array (also row j of ``matrix``)."""
        if j not in self.arrays:
            row = self._magnitudes(j)
            self.arrays[j] = row
            if self.matrix is not None:
                self.matrix[j] = row
        return self.arrays[j]

    def _magnitudes(self, j: int) -> Any:
        kernel = self.gram.kernel
        if not isinstance(kernel, (LinearKernel, PolynomialKernel)):
            return np.array(super().magnitude(j), dtype=np.float64)
        with np.errstate(over="ignore"):       # float64's overflow: inf, as in Python
            dots = np.cumsum(self.abs_rows * self.abs_rows[j], axis=1)[:, -1]
        if isinstance(kernel, PolynomialKernel):
            g, c = abs(float(kernel.gamma)), abs(float(kernel.coef0))
            dots = np.array([power_or_inf(g * d + c, kernel.degree)
                             for d in dots.tolist()], dtype=np.float64)
        for i in np.flatnonzero(dots == 0).tolist():
            if self._nonzero(i, j):   # products below the float64 range
                dots[i] = SMALLEST_SUBNORMAL
        return dots

    def block(self, idx: Any) -> Any:
        """The magnitudes |k|(x_i, x_k) for i, k in ``idx`` (an array of indices)."""
        if self.matrix is None:
            return np.array([self.array(i)[idx] for i in idx.tolist()])
        for i in idx.tolist():
            if i not in self.arrays:
                self.array(i)
        return self.matrix[np.ix_(idx, idx)]

    def _nonzero(self, i: int, j: int) -> bool:
        if self.grams is None:
            return bool(self.gram(i, j) != 0)
        return self.integer(i, j) != 0

    def magnitude(self, j: int) -> list[float]:
        if j not in self.magnitudes:
            self.magnitudes[j] = self.array(j).tolist()
        return self.magnitudes[j]

    def column(self, j: int) -> Column | None:
        """Row j as integers over one scale, a T x 1 matrix: fraction, (k(x_., x_j) den, den,
        0); mpmath, (mantissas, e, spread) with the values = mantissas 2^e and spread
        bounding (top bit less least exponent), None if it exceeds twice the precision."""
        if j not in self.columns:
            self.columns[j] = self._column(j)
        return self.columns[j]

    def _column(self, j: int) -> Column | None:
        if self.grams is not None:
            ints, bits = self.tables.column(j)
            if self.num.exact:
                return ints, self.den, 0
            assert self.num.ctx is not None
            if self.den_shift >= 0 and bits <= self.num.ctx.prec:   # the mpf values exact
                return ints, -self.den_shift, bits
        assert self.num.ctx is not None
        return aligned([v._mpf_ for v in self(j)], 2 * self.num.ctx.prec, column=True)


def aligned(parts: list[Raw], limit: int, column: bool) -> Column | None:
    """Raw mpf ``parts`` as signed integers times 2^e (e their least exponent: a T x 1
    matrix, 1 x T if not ``column``), with their spread (top bit less e); None if a value
    is not finite or the spread exceeds ``limit``."""
    shape = (len(parts), 1) if column else (1, len(parts))
    live = [(s, m, e, bc) for s, m, e, bc in parts if m]
    if any(not m and e for _, m, e, _ in parts):
        return None
    if not live:
        return fmpz_mat(*shape), 0, 0
    low = min(e for _, _, e, _ in live)
    spread = max(e + bc for _, _, e, bc in live) - low
    if spread > limit:
        return None
    ints = [fmpz(-m if s else m) << (e - low) if m else 0 for s, m, e, _ in parts]
    return fmpz_mat(*shape, ints), low, spread


# -- the dual state ----------------------------------------------------------------------------

class FastDualWeights(DualWeights):
    """``DualWeights`` over ``FastRows``: the same coefficients, ||w||^2 and error
    bookkeeping; scores by one integer dot product, the update's products by ``mul``."""

    K: FastRows

    def __init__(self, K: FastRows, num: Numbers):
        super().__init__(K, num)
        self.scaled: Column | None = None   # the coefficients over one scale (``_scale``)
        self.current = False

    def dot(self, j: int) -> Any:
        """w.phi(x_j), equal to the reference's ``num.dot(alpha, K(j))``."""
        num = self.num
        if not self.support:
            return num.dot(self.alpha, self.K(j))
        if not self.current:
            self.scaled, self.current = self._scale(), True
        column = self.K.column(j)
        if self.scaled is None or column is None:
            return num.dot(self.alpha, self.K(j))
        row, a_scale, a_spread = self.scaled
        col, k_scale, k_spread = column
        if num.exact:
            return Fraction(int((row * col)[0, 0]), a_scale * k_scale)
        assert num.ctx is not None
        if a_spread + k_spread > 2 * num.ctx.prec:    # fdot may drop a term: its own way
            return num.dot(self.alpha, self.K(j))
        return num.ctx.make_mpf(from_man_exp(int((row * col)[0, 0]), a_scale + k_scale,
                                             num.ctx.prec, round_nearest))

    def _scale(self) -> Column | None:
        """The coefficients as integers over one scale: fraction, (alpha D, D, 0) with D the
        least common denominator; mpmath, ``aligned``."""
        if not self.num.exact:
            assert self.num.ctx is not None
            return aligned([a._mpf_ for a in self.alpha], 2 * self.num.ctx.prec,
                           column=False)
        D = math.lcm(*(a.denominator for a in self.alpha))
        ints = [a.numerator * (D // a.denominator) for a in self.alpha]
        return fmpz_mat(1, self.T, ints), D, 0

    def magnitude(self, j: int) -> float:
        if not self.support:
            return 0.0
        with np.errstate(all="ignore"):
            return math.fsum(np.multiply(self.size, self.K.array(j)).tolist())

    def slack_error(self, j: int) -> float:
        if not any(self.slack):
            return 0.0
        with np.errstate(all="ignore"):
            return 2 * math.fsum(np.multiply(self.slack, self.K.array(j)).tolist())

    def norm_error(self, rho: float, m: int, diagonal: float = 0.0) -> float:
        """``maximum_margin_errors.norm_error``: its terms by numpy, its two running sums
        (over i, then k) by sequential cumulative sums."""
        size, slack = np.array(self.size), np.array(self.slack)
        idx = np.flatnonzero((size != 0) | (slack != 0))
        if not len(idx):
            return 0.0 + score_error_bound(m, 0.0)
        with np.errstate(all="ignore"):
            G = self.K.block(idx) + np.where(np.eye(len(idx), dtype=bool), diagonal, 0.0)
            s, sl = size[idx], slack[idx]
            e = rho * s + sl
            f = s * (1 + rho) + sl
            terms = (e[:, None] * G) * f[None, :] + (f[:, None] * G) * e[None, :]
            err = float(np.cumsum(terms.ravel())[-1])
            mag = float(np.cumsum(((s[:, None] * G) * s[None, :]).ravel())[-1])
        return err + score_error_bound(m, mag)

    def step(self, lam: Any, eta: Any, z: dict[int, int], r: int, sens: StepError,
             rho: float) -> None:
        """``DualWeights.step``: the same values (the float bookkeeping elementwise in the
        reference's order, eta alpha_i by ``mul``)."""
        case_ii = eta != 0
        etaf = clamped_float(eta)
        size_was, slack_was = np.array(self.size), np.array(self.slack)
        with np.errstate(all="ignore"):
            first = etaf * slack_was if case_ii else 0.0
            slack = first + sens.eta_err * (size_was * (1 + rho) + slack_was)
            size = etaf * size_was if case_ii else np.zeros(self.T)
        alpha = self._times(eta) if case_ii else [self.zero] * self.T
        for i, c in z.items():
            alpha[i] += lam * c
            slack[i] += sens.lam_abs
            size[i] += abs(clamped_float(lam))
        self.alpha, self.size, self.slack = alpha, finite(size.tolist()), finite(slack.tolist())
        self.support = sum(1 for a in alpha if a)
        self.vv = r * lam + eta * self.vv
        self.current = False
        if self.num.exact:
            self.num.check_size(alpha)

    def _times(self, eta: Any) -> list[Any]:
        """[eta * a for a in alpha] (a zero coefficient stays the run's zero)."""
        ctx = self.num.ctx
        if ctx is None:
            return [eta * a if a else self.zero for a in self.alpha]
        E, prec, make = eta._mpf_, ctx.prec, ctx.make_mpf
        esign, eman, eexp, ebc = E
        if not eman or ebc < FLINT_BITS:
            return [eta * a if a else self.zero for a in self.alpha]
        long_eta = fmpz(eman)
        out = []
        for a in self.alpha:
            sign, man, exp, bc = a._mpf_
            if not man:
                out.append(self.zero)
            elif bc < FLINT_BITS:
                out.append(make(mul(E, a._mpf_, prec)))
            else:                       # mpf_mul's product and rounding (``mul``)
                product = int(long_eta * fmpz(man))
                out.append(make(normalize(sign ^ esign, product, exp + eexp,
                                          product.bit_length(), prec, round_nearest)))
        return out
