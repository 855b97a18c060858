"""Kernels, defined once: an exact evaluation for the reference, a vectorised one for ``fast``.

- ``linear``:                       k(x, z) = x.z
- ``poly:degree=D,coef0=C,gamma=G``: k(x, z) = (G x.z + C)^D      (D a positive integer)
- ``rbf:gamma=G``:                  k(x, z) = exp(-G ||x - z||^2)  (G > 0)

Parameters are read exactly (``gamma=0.5`` is 1/2).  The linear and polynomial kernels are
rational and evaluate in ``Fraction``; the Gaussian one evaluates in mpmath at the context's
precision.  ``spec`` gives the canonical text form used by the CLI and the traces.  numpy is
imported only by the float64 evaluation, so the reference stays free of it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .errors import KernelSpecError
from .numbers import format_exact, number_context, to_fraction
from .rounding import power_or_inf

#: The memory, in bytes, a dual fast form spends caching the kernel rows k(x_s, X) of its
#: support vectors (512 MiB): each row is computed once; rows beyond the budget are
#: recomputed per block.
KERNEL_CACHE_BYTES = 512 * 2**20

@dataclass(frozen=True)
class Kernel:
    name: str  # "linear" | "poly" | "rbf"
    degree: int = 1
    coef0: Fraction = Fraction(0)
    gamma: Fraction = Fraction(1)

    @property
    def is_linear(self) -> bool:
        return self.name == "linear"

    @property
    def is_rational(self) -> bool:
        return self.name != "rbf"

    @functools.cached_property
    def spec(self) -> str:
        """The kernel as the command line and the trace write it (made once per kernel)."""
        if self.name == "linear":
            return "linear"
        if self.name == "poly":
            return (f"poly:degree={self.degree},coef0={format_exact(self.coef0)},"
                    f"gamma={format_exact(self.gamma)}")
        return f"rbf:gamma={format_exact(self.gamma)}"

    # -- exact evaluation (reference) -------------------------------------------------------
    def exact(self, x: list[Fraction], z: list[Fraction], ctx: Any = None) -> Any:
        """k(x, z) on exact vectors: a Fraction, or an mpf (rbf) in ``ctx``'s precision."""
        if self.name == "rbf":
            ctx = ctx or number_context()
            sq = sum(((a - b) * (a - b) for a, b in zip(x, z)), Fraction(0))
            arg = -self.gamma * sq
            return ctx.exp(ctx.mpf(arg.numerator) / arg.denominator)
        dot = sum((a * b for a, b in zip(x, z)), Fraction(0))
        if self.name == "linear":
            return dot
        return (self.gamma * dot + self.coef0) ** self.degree

    # -- rounding bound (see rounding.py) ------------------------------------------------------
    def magnitude(self, x: list[float], z: list[float]) -> float:
        """An upper bound on the absolute values of the terms that a float64 evaluation of
        k(x, z) rounds, relative to which its error is at most ``depth`` roundings.  For the
        Gaussian kernel: the exponent's cancellation error, carried through exp (<= 1)."""
        if self.name == "rbf":
            return 1.0 + float(self.gamma) * sum((abs(a) + abs(b)) * (abs(a) + abs(b))
                                                 for a, b in zip(x, z))
        dot = sum(abs(a * b) for a, b in zip(x, z))
        if self.name == "linear":
            return dot
        return power_or_inf(abs(float(self.gamma)) * dot + abs(float(self.coef0)), self.degree)

    @property
    def depth(self) -> int:
        """How many times the roundings of an evaluation compound (the polynomial's degree)."""
        return self.degree if self.name == "poly" else 1

    # -- float64 evaluation (fast) ----------------------------------------------------------
    def matrix(self, A: Any, B: Any) -> Any:
        """The dense matrix k(A_i, B_j); A and B are 2-D arrays or CSR matrices."""
        import numpy as np
        import scipy.sparse as sp

        dots = A @ B.T
        dots = dots.toarray() if sp.issparse(dots) else np.asarray(dots, dtype=np.float64)
        if self.name == "linear":
            return dots
        if self.name == "poly":
            with np.errstate(over="ignore", invalid="ignore"):  # the runs name an overflow
                return (float(self.gamma) * dots + float(self.coef0)) ** self.degree
        sq = _row_sqnorms(A)[:, None] + _row_sqnorms(B)[None, :] - 2.0 * dots
        np.maximum(sq, 0.0, out=sq)  # cancellation can leave tiny negatives
        return np.exp(-float(self.gamma) * sq)

    def diagonal(self, A: Any) -> Any:
        """k(A_i, A_i) for every row of A."""
        import numpy as np

        sq = _row_sqnorms(A)
        if self.name == "linear":
            return sq
        if self.name == "poly":
            with np.errstate(over="ignore", invalid="ignore"):  # as in ``matrix``
                return (float(self.gamma) * sq + float(self.coef0)) ** self.degree
        return np.ones(A.shape[0])


def _row_sqnorms(A: Any) -> Any:
    import numpy as np
    import scipy.sparse as sp

    if sp.issparse(A):
        return np.asarray(A.multiply(A).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", A, A)


LINEAR = Kernel("linear")


def parse_kernel(text: str | Kernel | None) -> Kernel:
    """Read ``linear``, ``poly:degree=D,coef0=C,gamma=G`` or ``rbf:gamma=G``."""
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
    allowed = {"linear": set(), "poly": {"degree", "coef0", "gamma"}, "rbf": {"gamma"}}
    if name not in allowed:
        raise KernelSpecError(f"unknown kernel {name!r} (linear, poly, rbf)")
    unknown = set(fields) - allowed[name]
    if unknown:
        raise KernelSpecError(f"kernel {name} has no parameter {', '.join(sorted(unknown))}")
    try:
        if name == "linear":
            return LINEAR
        gamma = to_fraction(fields.get("gamma", "1"))
        if name == "rbf":
            if gamma <= 0:
                raise KernelSpecError("rbf gamma must be > 0")
            return Kernel("rbf", gamma=gamma)
        degree = to_fraction(fields.get("degree", "2"))
        if degree.denominator != 1 or degree < 1:
            raise KernelSpecError("poly degree must be a positive integer")
        return Kernel("poly", degree=int(degree), coef0=to_fraction(fields.get("coef0", "1")),
                      gamma=gamma)
    except (ValueError, TypeError) as exc:
        if isinstance(exc, KernelSpecError):
            raise
        raise KernelSpecError(f"kernel {text!r}: {exc}") from None
