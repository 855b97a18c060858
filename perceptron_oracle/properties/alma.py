"""Invariants of ALMA_p(alpha; B, C) from C. Gentile, "A New Approximate Maximal Margin
Classification Algorithm" (JMLR 2 (2001) 213-242), checked on any implementation's traces
(SPEC.md 15.6).  Each check raises ``InvariantViolation`` naming what failed.

- ``check_link_inverse``: f(f^-1(th)) = th, ||f^-1(th)||_q = ||th||_p and
  f^-1(th).th = ||th||_p^2 (Lemma 3 of Ishibashi, Hatano & Takeda 2008), in mpmath.
- ``check_state``: k = corrections + 1, and ||w||_q <= 1 (the projection w'/max{1, ||w'||_q}).
- ``check_corrections_bound``: on data that a unit q-norm u separates with p-norm margin
  gamma (normalised instances), with B = 1/alpha and C = sqrt(2) the number of corrections
  is at most 2 (p-1)/gamma^2 (2/alpha - 1)^2 + 8/alpha - 4 (Gentile's Theorem 3, separable
  case: the abstract's O((p-1)/(alpha^2 gamma^2))).
- ``check_margin_reached``: once an epoch passes without a correction, the hypothesis has
  p-norm margin >= (1 - alpha) gamma* (abstract, Theorem 3); for p = 2 gamma* is the exact
  optimum (``romma_pumma.optimum_2norm`` on unit-norm instances).
- ``check_p2_reduction``: for p = 2 the state kept in coordinates (linear kernel) and the
  state kept as dual coefficients (the kernel (x.z)^1) make the same run and the same w.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..numbers import number_context, to_fraction
from ..reference import alma as alma_ref
from ..reference.common import exact_data
from ._base import InvariantViolation as InvariantViolation  # every family module exports it
from .romma_pumma import optimum_2norm

Implementation = Callable[..., Any]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


def corrections_bound(p: object, alpha: object, gamma: float) -> float:
    """2 (p - 1) / gamma^2 (2/alpha - 1)^2 + 8/alpha - 4 (B = 1/alpha, C = sqrt(2))."""
    p, alpha = float(to_fraction(p)), float(to_fraction(alpha))
    return 2 * (p - 1) / gamma ** 2 * (2 / alpha - 1) ** 2 + 8 / alpha - 4


def pnorm_margin(w: list[Any], X: Any, y: Any, p: Any) -> float:
    """min_t y_t w.x^_t / ||w||_q on normalised instances (mpmath, returned as a float)."""
    ctx = number_context(128)
    p = to_fraction(p)
    rows, labels = exact_data(X, y)
    wm = [alma_ref.to_mpf(to_fraction(v), ctx) for v in w]
    wq = alma_ref.pnorm(wm, p / (p - 1), ctx)
    if not wq:
        return float("-inf")
    out = min(label * sum((a * b for a, b in zip(wm, alma_ref.normalized(x, p, ctx))),
                          ctx.mpf(0)) for x, label in zip(rows, labels))
    return float(out / wq)


def check_link_inverse(theta: list[Any], p: Any, bits: int = 256) -> None:
    ctx = number_context(bits)
    p = to_fraction(p)
    th = [alma_ref.to_mpf(to_fraction(v), ctx) for v in theta]
    w = alma_ref.link_inverse(th, p, ctx)
    back = alma_ref.link(w, p, ctx)
    scale = max([abs(t) for t in th] + [ctx.mpf(0)])
    tol = ctx.ldexp(scale, -(bits - 24))
    for i, (a, b) in enumerate(zip(th, back)):
        _require(abs(a - b) <= tol, f"f(f^-1(th))_{i} = {b} differs from th_{i} = {a}")
    norm_p = alma_ref.pnorm(th, p, ctx)
    norm_q = alma_ref.pnorm(w, p / (p - 1), ctx)
    _require(abs(norm_q - norm_p) <= tol * len(th) * 4,
             f"||f^-1(th)||_q = {norm_q} but ||th||_p = {norm_p} (Lemma 3)")
    inner = sum((a * b for a, b in zip(w, th)), ctx.mpf(0))
    _require(abs(inner - norm_p ** 2) <= tol * len(th) * 4 * (1 + scale),
             f"f^-1(th).th = {inner} but ||th||_p^2 = {norm_p ** 2} (Lemma 3)")


def check_state(trace: Any, p: Any = None) -> None:
    """k = corrections + 1 and ||w||_q <= 1 (linear kernel)."""
    p = to_fraction(trace.params.get("p", 2) if p is None else p)
    _require(trace.final["k"] == len(trace.updates) + 1,
             f"k = {trace.final['k']} after {len(trace.updates)} corrections (k - 1 counts "
             "corrections)")
    if "w" in trace.final:
        ctx = number_context(128)
        w = [alma_ref.to_mpf(to_fraction(v), ctx) for v in trace.final["w"]]
        wq = alma_ref.pnorm(w, p / (p - 1), ctx)
        _require(wq <= 1 + 1e-9, f"||w||_q = {float(wq)} > 1: the projection onto the unit "
                 "q-norm ball was not applied in the q-norm")


def _run_to_convergence(impl: Implementation, X: Any, y: Any, params: dict[str, Any],
                        max_epochs: int, limit: float | None = None) -> tuple[Any, bool]:
    """Runs of 1, 2, 4, ... epochs until the last epoch has no correction."""
    epochs = 1
    T = len(y)
    while True:
        trace = impl(X, y, epochs=epochs, **params)
        last = [t for t in trace.updates if t >= (epochs - 1) * T]
        if not last and epochs > 1:
            return trace, True
        if epochs >= max_epochs or (limit is not None and len(trace.updates) > limit):
            return trace, False
        epochs = min(2 * epochs, max_epochs)


def check_corrections_bound(X: Any, y: Any, u: list[Any], *, p: Any = 2, alpha: Any,
                            impl: Implementation = alma_ref.alma, max_epochs: int = 64) -> int:
    """The number of corrections with the defaults B = 1/alpha, C = sqrt(2) never exceeds
    the bound for the margin gamma of ``u``; returns the corrections made."""
    gamma = pnorm_margin(u, X, y, p)
    _require(gamma > 0, "u does not separate the data")
    bound = corrections_bound(p, alpha, gamma) * (1 + 1e-9)
    trace, _ = _run_to_convergence(impl, X, y, dict(p=p, alpha=alpha), max_epochs, bound)
    _require(len(trace.updates) <= bound,
             f"{len(trace.updates)} corrections > {bound:.6g} = 2(p-1)/gamma^2 (2/alpha - 1)^2"
             f" + 8/alpha - 4 at gamma = {gamma:.6g} (Theorem 3)")
    return len(trace.updates)


def check_margin_reached(X: Any, y: Any, *, alpha: Any, impl: Implementation = alma_ref.alma,
                         max_epochs: int = 64) -> float | None:
    """p = 2, instances of unit 2-norm: after an epoch without a correction the margin is at
    least (1 - alpha) gamma*.  Returns the margin reached (None: no convergence in
    ``max_epochs``, or the data is not separable through the origin)."""
    opt = optimum_2norm(X, y, bias=False)
    if opt is None:
        return None
    gamma_star = float(opt[2]) ** -0.5          # 1 / ||w*||
    trace, converged = _run_to_convergence(impl, X, y, dict(alpha=alpha), max_epochs)
    if not converged:
        return None
    margin = pnorm_margin(trace.final["w"], X, y, 2)
    want = (1 - float(to_fraction(alpha))) * gamma_star
    _require(margin >= want * (1 - 1e-9),
             f"margin {margin:.9g} < (1 - alpha) gamma* = {want:.9g} after an epoch without "
             "corrections")
    return margin


def check_p2_reduction(X: Any, y: Any, *, epochs: int = 2, **params: Any) -> None:
    """p = 2: the coordinate state (linear kernel) and the dual coefficients (kernel
    poly:degree=1,coef0=0,gamma=1, the same inner product) decide alike, and
    w = sum_j alpha_j x_j / ||x_j|| equals the coordinate w."""
    a = alma_ref.alma(X, y, epochs=epochs, **params)
    b = alma_ref.alma(X, y, epochs=epochs, kernel="poly:degree=1,coef0=0,gamma=1", **params)
    _require(a.mistakes == b.mistakes and a.updates == b.updates,
             "the linear kernel and its dual form (x.z)^1 decide differently")
    rows, _ = exact_data(X, y)
    ctx = number_context(128)
    norms = [alma_ref.pnorm(x, Fraction(2), ctx) for x in rows]
    for d in range(len(rows[0])):
        wd = sum((alma_ref.to_mpf(to_fraction(c), ctx) * x[d] / nx
                  for c, x, nx in zip(b.final["alpha"], rows, norms) if c and nx), ctx.mpf(0))
        ref = alma_ref.to_mpf(to_fraction(a.final["w"][d]), ctx)
        _require(abs(wd - ref) <= 1e-20 * (1 + abs(ref)),
                 f"w_{d} = {float(ref)} but the dual coefficients give {float(wd)}")
