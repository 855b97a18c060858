"""Kernels, defined once: an exact evaluation for the reference, a vectorised one for ``fast``.

- ``linear``:                       k(x, z) = x.z                      (:class:`LinearKernel`)
- ``poly:degree=D,coef0=C,gamma=G``: k(x, z) = (G x.z + C)^D          (:class:`PolynomialKernel`;
                                                                      D a positive integer)
- ``rbf:gamma=G``:                  k(x, z) = exp(-G ||x - z||^2)      (:class:`GaussianKernel`;
                                                                      G > 0)

Parameters are read exactly (``gamma=0.5`` is 1/2).  The linear and polynomial kernels are
rational and evaluate in ``Fraction``; the Gaussian one evaluates in mpmath at the context's
precision.  ``spec`` gives the canonical text form used by the CLI and the traces.  numpy is
imported only by the float64 evaluation, so the reference stays free of it.

A kernel is one class: a frozen dataclass whose fields are its parameters, derived from
:class:`Kernel` (the protocol, below), registered under its ``name`` in :data:`KERNELS`
(:func:`register_kernel`, or :func:`registered_kernel` for a test) so that
:func:`parse_kernel` reads it.  Every kernel here is a function of x.z, ||x||^2 and ||z||^2
(the fast forms' block products compute those): :meth:`Kernel.from_dots` and
:meth:`Kernel.value` evaluate it from them in float64.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, NamedTuple, TypeVar

from .errors import KernelSpecError
from .numbers import format_exact, number_context, to_fraction
from .rounding import exact_in_float64, max_dyadic_exponent, power_or_inf

#: The memory, in bytes, a dual fast form spends caching the kernel rows k(x_s, X) of its
#: support vectors (512 MiB): each row is computed once; rows beyond the budget are
#: recomputed per block.
KERNEL_CACHE_BYTES = 512 * 2**20

#: The formulas the compiled loops know (``fast._numba.kernel_value``), by their kind code:
#: k = x.z; k = (gamma x.z + coef0)^degree; k = exp(-gamma ||x - z||^2) (the exp taken by
#: numpy over a block, ``fast._compiled.kernel_block``).
COMPILED_DOT, COMPILED_POLYNOMIAL, COMPILED_GAUSSIAN = 0, 1, 2

#: A (signed) exact rational as the kernels' specs write it: "p" or "p/q".
RATIONAL_PATTERN = "-?[0-9]+(/[0-9]+)?"
#: A non-negative one.
NONNEGATIVE_PATTERN = "[0-9]+(/[0-9]+)?"


class CompiledKernel(NamedTuple):
    """A kernel as the compiled loops evaluate it: the formula's kind code (``COMPILED_*``)
    and its parameters as the loops take them."""

    kind: int
    degree: int
    gamma: float
    coef0: float


class Kernel(ABC):
    """The kernel protocol.  A kernel class is a frozen dataclass (its fields its parameters,
    in the order its spec writes them; equality and hashing by class and fields) with:

    - ``name`` and ``spec_pattern`` (class attributes): the name its spec starts with, and a
      regular expression (no anchors) of its canonical spec text;
    - :meth:`from_fields`: the kernel from its spec's NAME=VALUE fields (text), validated
      (a :class:`KernelSpecError` for a bad value);
    - :meth:`exact`: k(x, z) on exact vectors (a Fraction for a rational kernel, else an mpf
      at the context's precision); ``is_rational`` says which;
    - :meth:`magnitude` and ``depth``: the rounding-bound model of a float64 evaluation
      (rounding.py);
    - :meth:`from_dots` (and :meth:`value`, its scalar form): float64 values from the dot
      products and the rows' squared norms (read only when ``needs_sqnorms``); ``matrix``
      and ``diagonal`` follow from them;
    - ``compiled``: how the compiled loops evaluate it, or None when they cannot (runs with
      an engine choice then take the numpy engine; ``engine="numba"`` is a ParamError);
    - what the algorithms ask of a kernel: ``is_linear`` (k(x, z) = x.z: the primal forms
      apply), ``unit_diagonal`` (k(x, x) = 1 for every x), ``propagates_nonfinite`` (a NaN
      or infinity in a row makes every value with it non-finite), ``may_overflow`` (a
      float64 value can overflow for finite rows), :meth:`exact_of_dot`,
      :meth:`integer_form`, :meth:`value_exponent`, :meth:`exact_value_bound` and
      :meth:`value_bits` (below).
    """

    name: ClassVar[str]
    spec_pattern: ClassVar[str]
    #: specs the test strategies and the fuzzer draw (``properties.strategies.kernel_specs``;
    #: none: the kernel is never drawn).
    examples: ClassVar[tuple[str, ...]] = ()
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]  # a dataclass each

    # -- what the algorithms ask ------------------------------------------------------------
    #: k(x, z) = x.z: w is kept explicitly (the primal forms) and read off the dual.
    is_linear: ClassVar[bool] = False
    #: exact values are rationals (Fraction); else mpmath numbers at the context precision.
    is_rational: ClassVar[bool] = True
    #: :meth:`from_dots` reads the rows' squared norms (else it is given None or zeros).
    needs_sqnorms: ClassVar[bool] = False
    #: k(x, x) = 1 for every x.
    unit_diagonal: ClassVar[bool] = False
    #: a NaN or infinity in x makes k(x, z) non-finite for every z: a run's scores over
    #: the kernel values of every row are then the finiteness check of X.
    propagates_nonfinite: ClassVar[bool] = False
    #: a float64 evaluation can overflow for finite rows (the values are not bounded by
    #: the rows' norms alone).
    may_overflow: ClassVar[bool] = False

    @classmethod
    @abstractmethod
    def from_fields(cls, fields: dict[str, str]) -> Kernel:
        """The kernel of the NAME=VALUE fields of its spec (every name a field of ``cls``)."""

    @functools.cached_property
    def spec(self) -> str:
        """The kernel as the command line and the trace write it (made once per kernel):
        its name, then ``:field=value,...`` over its fields in order (exact numbers)."""
        values = [f"{f.name}={format_exact(getattr(self, f.name))}"
                  for f in dataclasses.fields(self)]
        return f"{self.name}:{','.join(values)}" if values else self.name

    # -- exact evaluation (reference) -------------------------------------------------------
    @abstractmethod
    def exact(self, x: list[Fraction], z: list[Fraction], ctx: Any = None) -> Any:
        """k(x, z) on exact vectors: a Fraction, or an mpf in ``ctx``'s precision."""

    def exact_of_dot(self, dot: Fraction) -> Fraction | None:
        """k(x, z) exactly from x.z alone, where a rational kernel is a function of x.z
        (the linear and polynomial kernels); None otherwise (evaluate :meth:`exact`)."""
        return None

    def integer_form(self, dX: int) -> tuple[int, Callable[[int], int] | None]:
        """For rows x = a / dX with integer vectors a (one common denominator dX): (dK, f)
        with k(x, z) = f(a.b) / dK, f an integer function (None: the identity).  Every
        rational kernel has one (the reference's integer engines hold kernel values over
        one common denominator)."""
        raise NotImplementedError(f"kernel {self.spec} has no integer form")

    # -- rounding bound (see rounding.py) ------------------------------------------------------
    @abstractmethod
    def magnitude(self, x: list[float], z: list[float]) -> float:
        """An upper bound on the absolute values of the terms that a float64 evaluation of
        k(x, z) rounds, relative to which its error is at most ``depth`` roundings."""

    @property
    def depth(self) -> int:
        """How many times the roundings of an evaluation compound."""
        return 1

    def value_exponent(self, e_x: int | None) -> int | None:
        """E such that every k(x, z) lies on the grid 2^-E when every entry of x and z lies
        on the grid 2^-e_x (a dyadic exponent, rounding.py); None when unknown (then no run
        with this kernel is proved exact in float64)."""
        return None

    def exact_value_bound(self, r2: float, exponent: int) -> float | None:
        """A bound on |k(x, z)| for ||x||^2, ||z||^2 <= r2, when float64 computes every such
        value on the grid 2^-``exponent`` (:meth:`value_exponent`) exactly beyond the dot
        product x.z (whose exactness the scores' own check covers); None when it may not."""
        return None

    def value_bits(self, dot_bits: float) -> float:
        """The bits of an exact kernel value whose dot product has ``dot_bits`` bits (the
        time budget's model)."""
        return dot_bits

    # -- float64 evaluation (fast) ----------------------------------------------------------
    @property
    def compiled(self) -> CompiledKernel | None:
        """How the compiled loops evaluate this kernel; None: they cannot."""
        return None

    @abstractmethod
    def from_dots(self, dots: Any, sq_a: Any, sq_b: Any) -> Any:
        """k from the inner products ``dots`` (a float64 array) and the squared norms sq_a,
        sq_b of the two sides broadcast against it (read when ``needs_sqnorms``)."""

    def value(self, dot: float, sq_x: float, sq_z: float) -> float:
        """k(x, z) as a float from x.z, ||x||^2 and ||z||^2 (the scalar ``from_dots``)."""
        import numpy as np

        return float(self.from_dots(np.array(dot), np.array(sq_x), np.array(sq_z)))

    def matrix(self, A: Any, B: Any) -> Any:
        """The dense matrix k(A_i, B_j); A and B are 2-D arrays or CSR matrices."""
        import numpy as np
        import scipy.sparse as sp

        dots = A @ B.T
        dots = dots.toarray() if sp.issparse(dots) else np.asarray(dots, dtype=np.float64)
        sq_a = sq_b = None
        if self.needs_sqnorms:
            sq_a, sq_b = _row_sqnorms(A)[:, None], _row_sqnorms(B)[None, :]
        if not self.may_overflow:
            return self.from_dots(dots, sq_a, sq_b)
        with np.errstate(over="ignore", invalid="ignore"):  # the runs name an overflow
            return self.from_dots(dots, sq_a, sq_b)

    def diagonal(self, A: Any) -> Any:
        """k(A_i, A_i) for every row of A."""
        import numpy as np

        if self.unit_diagonal:
            return np.ones(A.shape[0])
        sq = _row_sqnorms(A)
        if not self.may_overflow:
            return self.from_dots(sq, sq, sq)
        with np.errstate(over="ignore", invalid="ignore"):  # as in ``matrix``
            return self.from_dots(sq, sq, sq)


def _row_sqnorms(A: Any) -> Any:
    import numpy as np
    import scipy.sparse as sp

    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", A, A)


def _dot(x: list[Fraction], z: list[Fraction]) -> Fraction:
    return sum((a * b for a, b in zip(x, z)), Fraction(0))


@dataclass(frozen=True)
class LinearKernel(Kernel):
    """k(x, z) = x.z."""

    name: ClassVar[str] = "linear"
    spec_pattern: ClassVar[str] = "linear"
    examples: ClassVar[tuple[str, ...]] = ("linear",)
    is_linear: ClassVar[bool] = True
    propagates_nonfinite: ClassVar[bool] = True

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> Kernel:
        return LINEAR

    def exact(self, x: list[Fraction], z: list[Fraction], ctx: Any = None) -> Any:
        return _dot(x, z)

    def exact_of_dot(self, dot: Fraction) -> Fraction | None:
        return dot

    def integer_form(self, dX: int) -> tuple[int, Callable[[int], int] | None]:
        return dX * dX, None

    def magnitude(self, x: list[float], z: list[float]) -> float:
        return sum(abs(a * b) for a, b in zip(x, z))

    def value_exponent(self, e_x: int | None) -> int | None:
        return None if e_x is None else 2 * e_x

    def exact_value_bound(self, r2: float, exponent: int) -> float | None:
        return r2  # a dot product: the scores' check covers it

    @property
    def compiled(self) -> CompiledKernel | None:
        return CompiledKernel(COMPILED_DOT, 1, 1.0, 0.0)

    def from_dots(self, dots: Any, sq_a: Any, sq_b: Any) -> Any:
        return dots

    def value(self, dot: float, sq_x: float, sq_z: float) -> float:
        return dot


@dataclass(frozen=True)
class PolynomialKernel(Kernel):
    """k(x, z) = (gamma x.z + coef0)^degree, degree a positive integer."""

    degree: int = 2
    coef0: Fraction = Fraction(1)
    gamma: Fraction = Fraction(1)

    name: ClassVar[str] = "poly"
    spec_pattern: ClassVar[str] = (f"poly:degree=[0-9]+,coef0={RATIONAL_PATTERN},"
                                   f"gamma={RATIONAL_PATTERN}")
    examples: ClassVar[tuple[str, ...]] = ("poly:degree=2,coef0=1,gamma=1",
                                           "poly:degree=3,coef0=1/2,gamma=1/2")
    propagates_nonfinite: ClassVar[bool] = True
    may_overflow: ClassVar[bool] = True

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> Kernel:
        gamma = to_fraction(fields.get("gamma", "1"))
        degree = to_fraction(fields.get("degree", "2"))
        if degree.denominator != 1 or degree < 1:
            raise KernelSpecError("poly degree must be a positive integer")
        return cls(degree=int(degree), coef0=to_fraction(fields.get("coef0", "1")),
                   gamma=gamma)

    @functools.cached_property
    def _floats(self) -> tuple[float, float]:
        return float(self.gamma), float(self.coef0)

    def exact(self, x: list[Fraction], z: list[Fraction], ctx: Any = None) -> Any:
        return (self.gamma * _dot(x, z) + self.coef0) ** self.degree

    def exact_of_dot(self, dot: Fraction) -> Fraction | None:
        return (self.gamma * dot + self.coef0) ** self.degree

    def integer_form(self, dX: int) -> tuple[int, Callable[[int], int] | None]:
        gd, cd = self.gamma.denominator, self.coef0.denominator
        gn, cn, degree = self.gamma.numerator * cd, self.coef0.numerator * gd * dX * dX, \
            self.degree

        def outer(dot: int) -> int:
            value: int = (gn * dot + cn) ** degree
            return value
        return (gd * cd * dX * dX) ** degree, outer

    def magnitude(self, x: list[float], z: list[float]) -> float:
        dot = sum(abs(a * b) for a, b in zip(x, z))
        return power_or_inf(abs(float(self.gamma)) * dot + abs(float(self.coef0)), self.degree)

    @property
    def depth(self) -> int:
        return self.degree

    def value_exponent(self, e_x: int | None) -> int | None:
        e_g, e_c = max_dyadic_exponent([self.gamma]), max_dyadic_exponent([self.coef0])
        if e_g is None or e_c is None or e_x is None:
            return None
        return self.degree * max(e_g + 2 * e_x, e_c)

    def exact_value_bound(self, r2: float, exponent: int) -> float | None:
        k_max = power_or_inf(abs(float(self.gamma)) * r2 + abs(float(self.coef0)),
                             self.degree)
        return k_max if exact_in_float64(exponent, k_max) else None

    def value_bits(self, dot_bits: float) -> float:
        extra = sum(v.numerator.bit_length() + v.denominator.bit_length()
                    for v in (self.gamma, self.coef0))
        return float(min(self.degree, 10**100)) * (dot_bits + extra)

    @property
    def compiled(self) -> CompiledKernel | None:
        gamma, coef0 = self._floats
        return CompiledKernel(COMPILED_POLYNOMIAL, int(self.degree), gamma, coef0)

    def from_dots(self, dots: Any, sq_a: Any, sq_b: Any) -> Any:
        gamma, coef0 = self._floats
        return (gamma * dots + coef0) ** self.degree

    def value(self, dot: float, sq_x: float, sq_z: float) -> float:
        gamma, coef0 = self._floats  # beyond float64: an infinity, named by the run's checks
        return power_or_inf(gamma * dot + coef0, self.degree)


@dataclass(frozen=True)
class GaussianKernel(Kernel):
    """k(x, z) = exp(-gamma ||x - z||^2), gamma > 0."""

    gamma: Fraction = Fraction(1)

    name: ClassVar[str] = "rbf"
    spec_pattern: ClassVar[str] = f"rbf:gamma={NONNEGATIVE_PATTERN}"
    examples: ClassVar[tuple[str, ...]] = ("rbf:gamma=1/2", "rbf:gamma=2")
    is_rational: ClassVar[bool] = False
    needs_sqnorms: ClassVar[bool] = True
    unit_diagonal: ClassVar[bool] = True

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> Kernel:
        gamma = to_fraction(fields.get("gamma", "1"))
        if gamma <= 0:
            raise KernelSpecError("rbf gamma must be > 0")
        return cls(gamma=gamma)

    def exact(self, x: list[Fraction], z: list[Fraction], ctx: Any = None) -> Any:
        ctx = ctx or number_context()
        sq = sum(((a - b) * (a - b) for a, b in zip(x, z)), Fraction(0))
        arg = -self.gamma * sq
        return ctx.exp(ctx.mpf(arg.numerator) / arg.denominator)

    def magnitude(self, x: list[float], z: list[float]) -> float:
        """The exponent's cancellation error, carried through exp (<= 1)."""
        return 1.0 + float(self.gamma) * sum((abs(a) + abs(b)) * (abs(a) + abs(b))
                                             for a, b in zip(x, z))

    @property
    def compiled(self) -> CompiledKernel | None:
        return CompiledKernel(COMPILED_GAUSSIAN, 1, float(self.gamma), 0.0)

    def from_dots(self, dots: Any, sq_a: Any, sq_b: Any) -> Any:
        import numpy as np

        d2 = sq_a + sq_b - 2.0 * dots
        np.maximum(d2, 0.0, out=d2)  # cancellation can leave tiny negatives
        return np.exp(-float(self.gamma) * d2)

    def value(self, dot: float, sq_x: float, sq_z: float) -> float:
        return math.exp(-float(self.gamma) * max(sq_x + sq_z - 2.0 * dot, 0.0))


LINEAR = LinearKernel()

#: The kernels :func:`parse_kernel` reads, by name.
KERNELS: dict[str, type[Kernel]] = {}

K = TypeVar("K", bound=type[Kernel])


def register_kernel(cls: K) -> K:
    """Make ``parse_kernel`` read ``cls`` (by its ``name``); usable as a class decorator."""
    name = cls.name
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a kernel's name is an identifier, not {name!r}")
    if name in KERNELS and KERNELS[name] is not cls:
        raise ValueError(f"a kernel named {name!r} is registered already")
    if not dataclasses.is_dataclass(cls):
        raise ValueError(f"kernel {name}: the class is a (frozen) dataclass")
    KERNELS[name] = cls
    return cls


def unregister_kernel(name: str) -> type[Kernel]:
    """Remove the kernel ``name`` from the registry; returns its class."""
    return KERNELS.pop(name)


@contextlib.contextmanager
def registered_kernel(cls: type[Kernel]) -> Iterator[type[Kernel]]:
    """``cls`` registered inside the block, removed after it (for tests)."""
    register_kernel(cls)
    try:
        yield cls
    finally:
        unregister_kernel(cls.name)


for _cls in (LinearKernel, PolynomialKernel, GaussianKernel):
    register_kernel(_cls)


def spec_pattern() -> str:
    """A regular expression (anchored) of every registered kernel's spec text."""
    return "^(" + "|".join(cls.spec_pattern for cls in KERNELS.values()) + ")$"


def parse_kernel(text: str | Kernel | None) -> Kernel:
    """Read ``linear``, ``poly:degree=D,coef0=C,gamma=G``, ``rbf:gamma=G`` or the spec of
    any other registered kernel (``NAME`` or ``NAME:FIELD=VALUE,...``)."""
    if text is None:
        return LINEAR
    if isinstance(text, Kernel):
        return text
    name, _, rest = str(text).strip().partition(":")
    fields: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise KernelSpecError(f"kernel parameter {item!r} is not NAME=VALUE")
        fields[key.strip()] = value.strip()
    cls = KERNELS.get(name)
    if cls is None:
        raise KernelSpecError(f"unknown kernel {name!r} ({', '.join(KERNELS)})")
    allowed = {f.name for f in dataclasses.fields(cls)}
    unknown = set(fields) - allowed
    if unknown:
        raise KernelSpecError(f"kernel {name} has no parameter {', '.join(sorted(unknown))}")
    try:
        return cls.from_fields(fields)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, KernelSpecError):
            raise
        raise KernelSpecError(f"kernel {text!r}: {exc}") from None
