"""The shared base of the compiled per-trial loops (numba): the typed ``jit`` wrapper and the
jitted pieces several families' loops call (products and row helpers, kernel values and the
kernel duals' blocks, the closed forms of problems (2)/(3) for p = 2, the p-norm link
f^-1 = g).  The loops themselves are in one module per family:

- ``fast._numba_perceptron``: the Perceptron's primal loop and its kernel dual's blocks;
- ``fast._numba_pnorm``: the p-norm Perceptron's primal loop;
- ``fast._numba_romma``: ROMMA's primal loop and its kernel dual's blocks;
- ``fast._numba_pumma``: PUMMA's primal loops, p = 2 and p > 2 (with the compiled Newton);
- ``fast._numba_multiclass``: the Perceptron's one-vs-rest learners;
- ``fast._numba_higher_order``: the loops around in-place BLAS of HO's primal and implicit
  forms and SOP's primal.

What each loop computes, and why, is said by its family's front module: ``fast._compiled``
(Perceptron, p-norm Perceptron; engine choice and the flags), ``fast._compiled_romma``,
``fast._compiled_pumma``, ``fast._compiled_multiclass``, ``fast.higher_order`` and
``fast.second_order``.  The loop modules import numba, so they are imported only by those
fronts, at the first compiled run (``fast._compiled.kernels`` and the fronts' ``loops``).  The
slots of the state arrays a loop and its caller share are named in ``fast._slots``, its flags
and return codes in ``fast._flags`` (numba-free modules of constants: the compiled code reads
them as compile-time constants).

Every function here and in the loop modules is a module-level numba dispatcher, and a loop
calls its helpers as module globals (imported from this module by name).  A helper passed in
as a closure variable would make numba key its on-disk cache on the pickled dispatcher, which
differs in every process: each new process would compile the loop again and save it again.
As globals, the second process loads each loop from the cache.  numba keys that cache on the
time stamp of the loop's own source file only, not on the files of the functions and
constants it uses: after an edit of a helper here (or of a constant of ``fast._flags`` or
``fast._slots``) the loops cached from the other modules would be stale, so
:func:`purge_stale_cache` keeps a digest of all these files beside the cache and deletes
the cached loops when it changes.  The tunable constants of other modules (ROMMA's
``RESIDUAL_SINGULAR``) arrive as arguments.

Compilation (``jit``): ``nogil``, IEEE arithmetic (``error_model="numpy"``: a division by zero
gives inf or NaN as in numpy, and the overflow report follows), ``cache=True`` when numba can
write its cache (next to the loop's file, or its user-wide cache directory); without one (a
read-only install and a read-only home) the functions are compiled without a cache, in each
process, and nothing fails.
"""

from __future__ import annotations

import hashlib
import math
import pathlib
from collections.abc import Callable
from typing import Any, TypeVar, cast, overload

import numba
import numpy as np

F = TypeVar("F", bound=Callable[..., Any])


@overload
def jit(fn: F, *, reassoc: bool = False, inline: bool = False) -> F: ...
@overload
def jit(fn: None = None, *, reassoc: bool = False, inline: bool = False
        ) -> Callable[[F], F]: ...
def jit(fn: F | None = None, *, reassoc: bool = False, inline: bool = False
        ) -> F | Callable[[F], F]:
    """``numba.njit`` with this module's options (module docstring).  ``reassoc``: reductions
    compiled with reassociation allowed (LLVM vectorises them; the result is another rounding
    of the same sum); only ``reassoc``, so NaN and infinity keep their IEEE meaning and a
    loop's finiteness test stays valid.  ``inline``: inlined into its callers (numba's IR
    inlining).  Typed as the function it compiles: a dispatcher is called as the function
    is (numba's own types are not visible to mypy)."""
    options: dict[str, Any] = {"nogil": True, "error_model": "numpy"}
    if reassoc:
        options["fastmath"] = {"reassoc"}
    if inline:
        options["inline"] = "always"

    def compile_(f: F) -> F:
        try:
            return cast(F, numba.njit(cache=True, **options)(f))
        except RuntimeError:  # no writable cache location: compile in each process
            return cast(F, numba.njit(**options)(f))

    return compile_ if fn is None else compile_(fn)


# -- products and row helpers --------------------------------------------------------------------

@jit(inline=True)
def sparse_dot(data: Any, indices: Any, lo: int, hi: int, w: Any) -> float:
    """The CSR entries lo .. hi-1 against w: a gather into four running sums (one sum makes
    every addition wait for the last; two left the Perceptron primal's loop 0.01-0.02 us per
    trial slower on 200-entry rows, eight and other tails no faster), then the tail into
    the first.  Positions and indices are unsigned: a signed index costs a wraparound check
    per access, which made this loop 1.4x scipy's CSR product."""
    a0 = a1 = a2 = a3 = 0.0
    one, two, three, four = np.uintp(1), np.uintp(2), np.uintp(3), np.uintp(4)
    k, stop = np.uintp(lo), np.uintp(hi)
    while k + four <= stop:
        a0 += data[k] * w[np.uintp(indices[k])]
        a1 += data[k + one] * w[np.uintp(indices[k + one])]
        a2 += data[k + two] * w[np.uintp(indices[k + two])]
        a3 += data[k + three] * w[np.uintp(indices[k + three])]
        k += four
    while k < stop:
        a0 += data[k] * w[np.uintp(indices[k])]
        k += one
    return (a0 + a1) + (a2 + a3)


@jit
def dense_dot(a: Any, b: Any, n: int) -> float:
    """a . b over n entries: four running sums, then the tail."""
    a0 = a1 = a2 = a3 = 0.0
    k = 0
    while k + 4 <= n:
        a0 += a[k] * b[k]
        a1 += a[k + 1] * b[k + 1]
        a2 += a[k + 2] * b[k + 2]
        a3 += a[k + 3] * b[k + 3]
        k += 4
    s = (a0 + a1) + (a2 + a3)
    while k < n:
        s += a[k] * b[k]
        k += 1
    return s


@jit(reassoc=True)
def row_dot(X: Any, j: int, w: Any) -> float:
    """X[j].w for dense X (a vectorised loop: in a per-trial loop it beats a BLAS call)."""
    s = 0.0
    for k in range(w.shape[0]):
        s += X[j, k] * w[k]
    return s


@jit(reassoc=True)
def norm2(w: Any) -> float:
    s = 0.0
    for k in range(w.shape[0]):
        s += w[k] * w[k]
    return s


@jit
def scale(w: Any, eta: float) -> None:
    for k in range(w.shape[0]):
        w[k] *= eta


@jit(reassoc=True)
def sparse_residual(w: Any, zbuf: Any, r: float) -> float:
    s = 0.0
    for k in range(w.shape[0]):
        d = w[k] - r * zbuf[k]
        s += d * d
    return s


@jit(inline=True)
def add_row(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, j: int,
            step: float, w: Any) -> None:
    """w += step X[j], in place."""
    if sparse:
        for k in range(np.uintp(indptr[j]), np.uintp(indptr[j + 1])):
            w[np.uintp(indices[k])] += step * data[k]
    else:
        row = X[j]
        for i in range(w.shape[0]):
            w[i] += step * row[i]


@jit
def weighted_rows(X: Any, rows: Any, coef: Any, out: Any) -> None:
    """out[:, c] += sum_r coef[r, c] X[rows[r]] for every column c of coef (dense X; out:
    n x m, in place), reading each selected row of X once and copying none."""
    m = coef.shape[1]
    for r in range(rows.shape[0]):
        row = X[rows[r]]
        for i in range(row.shape[0]):
            for c in range(m):
                out[i, c] += coef[r, c] * row[i]


# -- kernel values and the kernel duals' blocks (the Perceptron's and ROMMA's duals) --------------

@jit
def kernel_value(kind: int, degree: int, gamma: float, coef0: float, dot: float,
                 sq_a: float, sq_b: float) -> float:
    """k(a, b) from a . b and the squared norms: 0 linear, 1 poly, 2 rbf."""
    if kind == 0:
        return dot
    if kind == 1:
        base = gamma * dot + coef0
        out = base
        for _ in range(degree - 1):
            out *= base
        return out
    sq = sq_a + sq_b - 2.0 * dot
    if sq < 0.0:
        sq = 0.0
    return math.exp(-gamma * sq)


@jit
def dual_block_kernel(sq: Any, lo: int, hi: int, sq_rows: Any, S0: int, kind: int,
                      degree: int, gamma: float, coef0: float, Kt: Any) -> None:
    """Kt[s, i - lo] holds x_s . x_i for the first S0 supports and the examples lo .. hi-1;
    turns it, in place, into ``kernel_value``'s k(x_s, x_i) (the polynomial kernel by
    repeated products), for the Gaussian kernel into the exponent
    -gamma max(|x_s|^2 + |x_i|^2 - 2 x_s.x_i, 0) only: the caller takes numpy's vectorised
    exp of the block."""
    if kind == 0:
        return
    for s in range(S0):
        row = Kt[s]
        if kind == 1 and degree == 2:  # the common case, in a loop LLVM vectorises
            for r in range(hi - lo):
                base = gamma * row[r] + coef0
                row[r] = base * base
        elif kind == 1:
            for r in range(hi - lo):
                base = gamma * row[r] + coef0
                value = base
                for _ in range(degree - 1):
                    value *= base
                row[r] = value
        else:
            for r in range(hi - lo):
                d = sq_rows[s] + sq[lo + r] - 2.0 * row[r]
                if d < 0.0:
                    d = 0.0
                row[r] = -gamma * d


@jit
def dual_block_base(Kt: Any, coef: Any, S0: int, base: Any) -> None:
    """base[i] = sum_s coef[s] Kt[s, i] over the first S0 supports, each sum in support
    order as the per-trial sum over the support set adds it (a support at a time over the
    whole block: independent sums, which LLVM vectorises without reordering any)."""
    B = Kt.shape[1]
    for i in range(B):
        base[i] = 0.0
    for s in range(S0):
        c = coef[s]
        row = Kt[s]
        for i in range(B):
            base[i] += c * row[i]


@jit(reassoc=True)
def dual_block_column(X: Any, sq: Any, j: int, lo: int, hi: int, kind: int, degree: int,
                      gamma: float, coef0: float, step: float, base: Any) -> None:
    """base[i - lo] += step k(x_j, x_i) for the examples i = j+1 .. hi-1 (x_j a support
    that entered in this block: its kernel values are not in the block's Kb)."""
    x = X[j]
    n = X.shape[1]
    for i in range(j + 1, hi):
        row = X[i]
        d = 0.0
        for f in range(n):
            d += x[f] * row[f]
        base[i - lo] += step * kernel_value(kind, degree, gamma, coef0, d, sq[j], sq[i])


# -- problems (2)/(3) for p = 2: the closed forms (15)/(19) (ROMMA and PUMMA) ---------------------

@jit
def step_case(c: float, zz: float, vz: float, vv: float) -> int:
    """Problem (2)/(3) for p = 2 (``fast.maximum_margin.step2``, constant c): 0 infeasible
    (z = 0), 1 case (i), eq. (15), 2 case (ii), eq. (19), which needs the residual.  The
    closed forms are compiled without reassociation (their callers reassociate their sums),
    so each is evaluated as written."""
    if not zz > 0.0:
        return 0
    if vv == 0.0 or c * vz >= zz * vv:
        return 1
    return 2


@jit
def case_two(c: float, zz: float, vz: float, vv: float, res: float,
             singular: float) -> tuple[bool, float, float]:
    """Case (ii), eq. (19), from the residual res = ||v - (v.z/||z||^2) z||^2: (feasible,
    lambda, eta) with D = ||z||^2 res."""
    det = zz * res
    if det <= singular * zz * vv:
        return False, 0.0, 0.0
    return True, vv * (c - vz) / det, (zz * vv - c * vz) / det


# -- the p-norm link f^-1 = g (the p-norm Perceptron, PUMMA p > 2, HO_p's explicit B_k) -----------

@jit
def abs_max_bits(v: Any) -> int:
    """The largest |v_i| as its IEEE bit pattern (sign bit cleared: NaN above infinity above
    every finite value).  For non-negative doubles the integer order is the float order, and
    an integer maximum vectorises (a float one, whose NaN rules LLVM must keep, does not)."""
    bits = v.view(np.int64)
    top = 0
    for i in range(bits.shape[0]):
        b = bits[i] & 0x7FFFFFFFFFFFFFFF
        if b > top:
            top = b
    return top


@jit(inline=True)
def whole_power(t: float, whole: int) -> float:
    """t^whole for an integer 1 <= ``whole`` <= 8: t times t, whole - 1 times in order; each
    of the seven possible factors is t or 1.0 (a product by 1.0 is exact), so a loop calling
    it has no inner loop and vectorises."""
    pw = t
    pw *= t if whole >= 2 else 1.0
    pw *= t if whole >= 3 else 1.0
    pw *= t if whole >= 4 else 1.0
    pw *= t if whole >= 5 else 1.0
    pw *= t if whole >= 6 else 1.0
    pw *= t if whole >= 7 else 1.0
    pw *= t if whole >= 8 else 1.0
    return pw


@jit(reassoc=True)
def pnorm_powers(v: Any, inv: float, whole: int, q: float, w: Any) -> float:
    """w_i = t_i^q with t_i = |v_i| inv (inv = 2^-e exactly: the product is the correctly
    rounded |v_i| / 2^e), and returns sum_i t_i^q t_i.  For an integer q = ``whole`` <= 8 the
    power is ``whole_power``'s."""
    total = 0.0
    if whole:
        for i in range(v.shape[0]):
            t = abs(v[i]) * inv
            pw = whole_power(t, whole)
            w[i] = pw
            total += pw * t
    else:
        for i in range(v.shape[0]):
            t = abs(v[i]) * inv
            pw = t ** q
            w[i] = pw
            total += pw * t
    return total


@jit
def link_inverse_scalar(v: Any, p: float, w: Any) -> None:
    """``link_inverse`` one element at a time (a float maximum, divisions by the scale),
    for the v the vectorised passes leave out: v = 0, a largest |v_i| that is subnormal or
    at least 2^1023 (2^-e or 2^e would leave float64), or not finite."""
    n = v.shape[0]
    largest = 0.0
    for i in range(n):
        a = abs(v[i])
        if a > largest:
            largest = a
    if largest == 0.0:
        for i in range(n):
            w[i] = 0.0
        return
    scale = math.ldexp(1.0, math.frexp(largest)[1])
    total = 0.0
    q = p - 1.0
    whole = int(q) if q == math.floor(q) and q <= 8.0 else 0   # t^q by q - 1 products
    for i in range(n):
        ti = abs(v[i]) / scale
        if whole:
            pw = ti
            for _ in range(whole - 1):
                pw *= ti
        else:
            pw = ti ** q
        w[i] = pw
        total += pw * ti
    factor = scale / total ** ((p - 2.0) / p)
    for i in range(n):
        w[i] = math.copysign(w[i], v[i]) * factor


# f^-1 = g, the p-norm link: defined (exact and float64) in ``perceptron_oracle.pnorm`` and
# ``perceptron_oracle.pnorm_float`` (``link_inverse``, its "binary" scaling); compiled here
# under the same name, its integer powers by products.
@jit
def link_inverse(v: Any, p: float, w: Any) -> None:
    """w = g(v) = f^-1(v), the gradient of ||v||_p^2 / 2 (``pnorm_float.link_inverse``), in
    place, on v scaled by 2^-e, 2^e the power of two just above max |v_i| (g is
    1-homogeneous).  Three
    passes that vectorise: the maximum's exponent from the bit patterns, the powers with
    their sum, the signs and the normaliser.  For an integer p - 1 up to 8 the powers are
    repeated products (p - 2 roundings, within the reference's (p + 1) gamma allowance for
    them), several times faster than ``pow``; the sum of the powers is another rounding of
    the same sum (SPEC.md 3: the allowance holds for any summation order)."""
    n = v.shape[0]
    if p == 2.0:
        for i in range(n):
            w[i] = v[i]
        return
    biased = abs_max_bits(v) >> 52
    if biased == 0 or biased >= 2046:   # v = 0, subnormal, >= 2^1023, inf or NaN
        link_inverse_scalar(v, p, w)
        return
    e = biased - 1022                   # math.frexp(max |v_i|)[1]
    q = p - 1.0
    whole = int(q) if q == math.floor(q) and q <= 8.0 else 0
    total = pnorm_powers(v, math.ldexp(1.0, -e), whole, q, w)
    # ||t||_p^(p-2) = total^((p-2)/p): for p = 4 the square root (correctly rounded; pow
    # agrees but for its last bit, and costs about a fifth of the whole gradient at n = 200)
    norm = math.sqrt(total) if p == 4.0 else total ** ((p - 2.0) / p)
    factor = math.ldexp(1.0, e) / norm
    for i in range(n):
        w[i] = math.copysign(w[i], v[i]) * factor


# -- numba's cache, kept true to every file the loops are made of ----------------------------

#: The digest of the loops' sources, kept in numba's cache directory beside the cached loops.
SOURCES_STAMP = "perceptron_oracle-compiled-sources.sha256"


def purge_stale_cache() -> None:
    """Delete the cached loops of these modules when any file they are compiled from changed.

    numba keys a cached loop on its own file's time stamp only, while a loop calls the
    helpers of this module and reads the constants of ``fast._flags`` and ``fast._slots``:
    an edit there (or an upgrade that changes them alone) would leave the loops of the other
    modules stale.  A digest of every such file (``_numba*.py``, ``_flags.py``,
    ``_slots.py``) is kept in numba's cache directory; when it differs, the cached
    ``_numba*`` entries there are deleted before any loop loads, and each compiles once
    anew.  Without a cache (``jit`` fell back) or a writable directory, nothing is done."""
    cache = getattr(dense_dot, "_cache", None)
    directory = getattr(cache, "_cache_path", None)
    if directory is None:
        return
    here = pathlib.Path(__file__).parent
    sources = sorted([*here.glob("_numba*.py"), here / "_flags.py", here / "_slots.py"])
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    stamp = pathlib.Path(directory) / SOURCES_STAMP
    try:
        if stamp.read_text(encoding="ascii") == digest.hexdigest():
            return
    except OSError:
        pass   # no stamp yet: the cache may hold loops of any earlier sources
    try:
        for cached in pathlib.Path(directory).glob("_numba*.nb[ic]"):
            cached.unlink(missing_ok=True)
        stamp.write_text(digest.hexdigest(), encoding="ascii")
    except OSError:
        pass   # a cache directory numba reads but this process cannot clean: as numba does


purge_stale_cache()
