"""Invariants of the Higher-Order Perceptron HO_p(c) (Brotto, Gentile & Vitale, "On
Higher-Order Perceptron Algorithms", NIPS 2007; SPEC.md "higher_order").

Three kinds of checks:

- on an implementation (any callable with the protocol ``impl(X, y, *, epochs, kernel,
  **params) -> Trace``, fast forms included): :func:`check_reduces_to_first_order`;
- on a :class:`Run`, an exact run observed mistake by mistake (the reference, or a planted
  wrong implementation built on the same loop, ``tests/wrong_higher_order.py``): the rho
  schedule, the sparse rule, r_k's range, eq. (3), the matrix A_k (symmetric, positive
  semidefinite, spectral norm at most 1, the factor form of its update) and Theorem 1's
  mistake bound (2) on the transformed sequence of eq. (1).

- on a trace alone (an outside implementation, which has no internals to observe): the
  quantities are recomputed exactly from the data and the trace's own mistakes
  (:func:`trace_rhos`): :func:`check_trace_r_range`, :func:`check_trace_eq3` (with the final
  w = A_K v_K) and :func:`check_trace_theorem1`, within a stated slack for float64 data.

Every check raises :class:`InvariantViolation` naming what broke.  The Run carries what each
check needs; quantities a check can recompute from the trace (v_{k-1}.x_t, B_{k-1} from the
rho's) are recomputed, not trusted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..kernels import parse_kernel
from ..numbers import to_fraction
from ..reference.common import exact_data
from ..reference.higher_order import HigherOrderParams, resolve_params, rho_rule, run_loop
from ..reference.perceptron import perceptron
from ..reference.pnorm_perceptron import pnorm_perceptron
from ..trace import Trace
from ._base import InvariantViolation

Implementation = Callable[..., Trace]

__all__ = ["InvariantViolation", "Run", "observe", "check_reduces_to_first_order",
           "check_rho_schedule", "check_sparse_rule", "check_r_range", "check_eq3",
           "check_matrix", "check_theorem1", "theorem1_bound", "unit_norm",
           "trace_rhos", "check_trace_r_range", "check_trace_eq3", "check_trace_theorem1"]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


@dataclass
class Mistake:
    t: int                      # the trial
    j: int                      # the example
    k: int                      # the 1-based mistake index
    label: int
    rho: Any                    # rho_k as the implementation used it
    A: list[list[Fraction]] | None = None   # A_k after the update (p = 2, linear kernel)
    v: list[Fraction] | None = None         # v_k after the update (linear kernel)


@dataclass
class Run:
    trace: Trace
    rows: list[list[Fraction]]
    labels: list[int]
    params: HigherOrderParams
    mistakes: list[Mistake] = field(default_factory=list)


def observe(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
            hooks: dict[str, Any] | None = None, **params: Any) -> Run:
    """Run the reference loop and keep every mistake's state.  ``hooks`` replace parts of
    the loop (``engine``, ``rule``, ``is_mistake``, ``sparse_skips`` of
    ``reference.higher_order.run_loop``): the planted wrong implementations.  X may hold
    Fractions (the sphere strategy's exact points)."""
    rows, labels = exact_data(X, y)
    resolved = resolve_params(params)
    records: list[Mistake] = []

    def keep(event: dict[str, Any]) -> None:
        state = event["state"]
        A = state.A if hasattr(state, "A_int") else None
        v = state.v if hasattr(state, "v") and not callable(state.v) else None
        records.append(Mistake(event["t"], event["j"], event["k"], event["label"],
                               event["rho"], A, v))

    trace = run_loop(rows, labels, epochs, parse_kernel(kernel), resolved, observe=keep,
                     **(hooks or {}))
    return Run(trace, rows, labels, resolved, records)


# -- helpers ----------------------------------------------------------------------------
def unit_norm(rows: list[list[Fraction]]) -> bool:
    """Every instance exactly of unit 2-norm (the paper's assumption for r_k, eq. 3, Thm 1)."""
    return all(sum(v * v for v in row) == 1 for row in rows)


def _dot(a: list[Any], b: list[Any]) -> Any:
    return sum((x * z for x, z in zip(a, b)), Fraction(0))


def _sums(run: Run) -> list[list[Fraction]]:
    """v_0, v_1, ..., v_K recomputed from the trace's mistakes: v_k = v_{k-1} + y x."""
    n = len(run.rows[0])
    out = [[Fraction(0)] * n]
    for t in run.trace.mistakes:
        j = t % len(run.rows)
        out.append([a + run.labels[j] * b for a, b in zip(out[-1], run.rows[j])])
    return out


def _c_prime(par: HigherOrderParams) -> Fraction | None:
    """Theorem 1's c for this rho rule: 1 - c for c/k (|v_{k-1}.x| <= k - 1 on unit data),
    c for theorem1; None where Theorem 1 does not apply (constant)."""
    c: Fraction = par.c
    if par.rho == "c/k":
        return 1 - c
    if par.rho == "theorem1":
        return c
    return None


# -- checks on an implementation ---------------------------------------------------------
def check_reduces_to_first_order(impl: Implementation, X: Any, y: Any, *, epochs: int = 2,
                                 p: Any = 2, rho: str = "c/k") -> Trace:
    """c = 0 (rho identically 0) is the Perceptron with its defaults (p = 2) and the p-norm
    Perceptron (p > 2): the same mistakes, and the same final w."""
    p = Fraction(p)
    trace = impl(X, y, epochs=epochs, kernel="linear", p=p, c=0, rho=rho)
    if p == 2:
        first = perceptron(X, y, epochs=epochs)
        name = "the Perceptron"
    else:
        first = pnorm_perceptron(X, y, epochs=epochs, p=p)
        name = f"the {p}-norm Perceptron"
    _require(trace.mistakes == first.mistakes,
             f"HO_{p}(0) mistakes {trace.mistakes} differ from {name}'s {first.mistakes}")
    _require(trace.updates == trace.mistakes, "updates != mistakes (HO is mistake-driven)")
    if "rho" in trace.final:  # an outside implementation may not report rho or w
        _require(all(r == 0 for r in trace.final["rho"]), "rho != 0 with c = 0")
    if "w" not in trace.final:
        return trace
    got = [to_fraction(v) for v in trace.final["w"]]
    want = [to_fraction(v) for v in first.final["w"]]
    scale = max([abs(v) for v in want] + [Fraction(1)])
    exact = trace.form == "reference"
    _require(all(abs(a - b) <= (0 if exact and p == 2 else scale * Fraction(1, 2**40))
                 for a, b in zip(got, want)),
             f"final w {[float(v) for v in got]} differs from {name}'s "
             f"{[float(v) for v in want]}")
    return trace


# -- checks on an observed run -----------------------------------------------------------
def check_rho_schedule(run: Run) -> None:
    """rho_k is the stated rule on the k-th mistake (k 1-based), s = v_{k-1}.x_t recomputed
    from the trace; 0 on a sparse run's mistake with y s < 0; final.rho lists them."""
    sums = _sums(run)
    _require([m.t for m in run.mistakes] == run.trace.mistakes,
             "the observed mistakes are not the trace's")
    for m in run.mistakes:
        s = _dot(sums[m.k - 1], run.rows[m.j])
        want = rho_rule(run.params, m.k, s)
        if run.params.sparse and m.label * s < 0:
            want = 0
        _require(m.rho == want, f"mistake {m.k} (trial {m.t}): rho = {m.rho}, the rule "
                                f"{run.params.rho} gives {want}")
        _require(0 <= m.rho < 1, f"mistake {m.k}: rho = {m.rho} outside [0, 1) (Figure 1)")
    _require(list(run.trace.final["rho"]) == [m.rho for m in run.mistakes],
             "final.rho does not list the rho of each mistake")


def check_sparse_rule(run: Run) -> int:
    """The sparse variant never updates B on a mistake with y v_{k-1}.x_t < 0: rho_k = 0 and
    (p = 2, linear kernel) A_k = A_{k-1}.  Returns how many such mistakes it saw."""
    if not run.params.sparse:
        return 0
    sums, seen = _sums(run), 0
    previous = None
    for m in run.mistakes:
        s = _dot(sums[m.k - 1], run.rows[m.j])
        if m.label * s < 0:
            seen += 1
            _require(m.rho == 0, f"mistake {m.k} (trial {m.t}): y s = {m.label * s} < 0 but "
                                 f"rho = {m.rho} (sparse)")
            if m.A is not None:
                n = len(m.A)
                before = previous or [[Fraction(int(i == l)) for l in range(n)]
                                      for i in range(n)]
                _require(m.A == before, f"mistake {m.k}: sparse, y s < 0, but A changed")
        previous = m.A
    return seen


def check_r_range(run: Run) -> int:
    """Unit-norm x: r_k = 1 - rho_k y_t v_{k-1}.x_t - rho_k lies in [1 - c, 1 + c] for c/k and
    in [c, 2 - c] for theorem1 (Theorem 1's c <= r_k <= 2 - c).  Returns the number checked."""
    rule = run.params.rho
    if rule == "constant" or not unit_norm(run.rows):
        return 0
    c = run.params.c
    lo, hi = (1 - c, 1 + c) if rule == "c/k" else (c, 2 - c)
    sums = _sums(run)
    for m in run.mistakes:
        s = _dot(sums[m.k - 1], run.rows[m.j])
        r = 1 - m.rho * m.label * s - m.rho
        _require(lo <= r <= hi, f"mistake {m.k} (trial {m.t}): r_k = {r} ~ {float(r):.6g} "
                                f"outside [{lo}, {hi}]")
    return len(run.mistakes)


def check_eq3(run: Run) -> int:
    """Unit-norm x, p = 2, c/k or theorem1: ||B_k v_k||^2 = v_k^T A_k v_k <= (2 - c')^2 k
    after every mistake (eq. 3).  Uses the run's A_k and the recomputed v_k."""
    cp = _c_prime(run.params)
    if cp is None or not unit_norm(run.rows) or run.params.p != 2:
        return 0
    sums = _sums(run)
    checked = 0
    for m in run.mistakes:
        if m.A is None:
            continue
        v = sums[m.k]
        norm2 = _dot(v, [_dot(row, v) for row in m.A])
        _require(norm2 <= (2 - cp) ** 2 * m.k,
                 f"mistake {m.k}: ||B_k v_k||^2 = {float(norm2):.6g} > (2 - c')^2 k = "
                 f"{float((2 - cp) ** 2 * m.k):.6g} (eq. 3)")
        checked += 1
    return checked


def is_psd(M: list[list[Fraction]]) -> bool:
    """Exact test of a symmetric matrix: elimination with the diagonal pivots (a zero pivot
    with a nonzero rest of its row means an indefinite matrix)."""
    M = [list(row) for row in M]
    n = len(M)
    for i in range(n):
        d = M[i][i]
        if d < 0:
            return False
        if d == 0:
            if any(M[i][l] != 0 for l in range(i + 1, n)):
                return False
            continue
        for r in range(i + 1, n):
            f = M[r][i] / d
            if f:
                for l in range(i + 1, n):
                    M[r][l] -= f * M[i][l]
    return True


def check_matrix(run: Run) -> int:
    """p = 2, linear kernel: after every mistake A_k is symmetric, positive semidefinite and
    equals (I - rho x x^T) A_{k-1} (I - rho x x^T) (the factor form of the primal update);
    on unit-norm data with rho_k <= 1 also I - A_k is PSD (x^T A_k x <= ||x||^2: each factor
    has spectral norm 1)."""
    if run.params.p != 2:
        return 0
    unit = unit_norm(run.rows)
    previous = None
    checked = 0
    for m in run.mistakes:
        if m.A is None:
            continue
        A, n = m.A, len(m.A)
        eye = [[Fraction(int(i == l)) for l in range(n)] for i in range(n)]
        before = previous or eye
        x = run.rows[m.j]
        F = [[eye[i][l] - m.rho * x[i] * x[l] for l in range(n)] for i in range(n)]
        FA = [[_dot(F[i], [before[r][l] for r in range(n)]) for l in range(n)]
              for i in range(n)]
        want = [[_dot(FA[i], [F[r][l] for r in range(n)]) for l in range(n)]
                for i in range(n)]
        _require(all(A[i][l] == A[l][i] for i in range(n) for l in range(i)),
                 f"mistake {m.k}: A_k is not symmetric")
        _require(A == want, f"mistake {m.k}: A_k != (I - rho x x^T) A_(k-1) (I - rho x x^T)")
        _require(is_psd(A), f"mistake {m.k}: A_k is not positive semidefinite")
        if unit:
            _require(is_psd([[eye[i][l] - A[i][l] for l in range(n)] for i in range(n)]),
                     f"mistake {m.k}: x^T A_k x > ||x||^2 for some x (spectral norm > 1)")
        previous = A
        checked += 1
    return checked


def theorem1_bound(alpha: float, D: float, gamma: float) -> float:
    """The right-hand side of (2): alpha D/gamma + alpha^2/(2 gamma^2)
    + (alpha/gamma) sqrt(alpha D/gamma + alpha^2/(4 gamma^2))."""
    return (alpha * D / gamma + alpha ** 2 / (2 * gamma ** 2)
            + alpha / gamma * math.sqrt(alpha * D / gamma + alpha ** 2 / (4 * gamma ** 2)))


def check_theorem1(run: Run, u: Any, gammas: Any = (Fraction(1, 100), Fraction(1, 20),
                                                       Fraction(1, 10), Fraction(1, 4),
                                                       Fraction(1, 2), Fraction(1))) -> int:
    """Unit-norm x, p = 2, c/k or theorem1: for the unit u and every gamma of the grid, the
    number m of mistakes satisfies (2) with alpha = (2 - c')/c' and D_gamma(u; S~) summed
    over the transformed sequence S~ = (B_{k-1} x_t(k), y_t(k)) of eq. (1), B rebuilt from the
    run's rho's.  u is scaled to norm <= 1 exactly (the proof needs ||u|| <= 1).  Returns
    the number of gammas checked."""
    cp = _c_prime(run.params)
    if cp is None or cp == 0 or run.params.p != 2 or not unit_norm(run.rows):
        return 0
    u = [Fraction(float(v)) for v in u]
    norm2 = sum(v * v for v in u)
    if norm2 == 0:
        return 0
    if norm2 > 1:  # shrink by a rational just above the norm: ||u|| <= 1 exactly
        scale = Fraction(math.sqrt(float(norm2))) * (1 + Fraction(1, 10**12))
        u = [v / scale for v in u]
    n = len(u)
    # u^T B_{k-1} x_t(k) via w^T = u^T B_{k-1}: w_k^T = w_{k-1}^T (I - rho x x^T)
    w = list(u)
    margins = []
    for m in run.mistakes:
        x = run.rows[m.j]
        margins.append(m.label * _dot(w, x))
        if m.rho:
            wx = _dot(w, x)
            w = [a - m.rho * wx * b for a, b in zip(w, x)]
    alpha = float((2 - cp) / cp)
    count = len(run.trace.mistakes)
    for gamma in gammas:
        D = sum((max(Fraction(0), gamma - mg) for mg in margins), Fraction(0))
        bound = theorem1_bound(alpha, float(D), float(gamma)) * (1 + 1e-9)
        _require(count <= bound, f"{count} mistakes exceed Theorem 1's bound {bound:.6g} "
                                 f"(gamma = {gamma}, D = {float(D):.6g}, alpha = {alpha:.4g})")
    del n
    return len(gammas)


# -- checks on a trace alone (outside implementations) ------------------------------------
#: Relative slack of the trace checks: the data are float64 (instances of unit norm only up
#: to rounding) and an outside implementation's reported numbers are float64.
TRACE_SLACK = Fraction(1, 2**30)


def _near_unit(rows: list[list[Fraction]]) -> bool:
    """Every instance of unit 2-norm up to float64 rounding (|  ||x||^2 - 1 | <= 2^-40)."""
    return all(abs(sum((v * v for v in row), Fraction(0)) - 1) <= Fraction(1, 2**40)
               for row in rows)


@dataclass
class TraceMistake:
    t: int
    j: int
    k: int
    label: int
    s: Fraction      # v_{k-1}.x_t, recomputed from the trace's mistakes
    rho: Fraction    # the reported rho_k (checked against the rule) or the rule's


def trace_rhos(trace: Trace, rows: list[list[Fraction]], labels: list[int],
               par: HigherOrderParams) -> list[TraceMistake]:
    """Every mistake of the trace with s = v_{k-1}.x_t recomputed exactly and rho_k: Figure
    1's rule (c/k, theorem1's (1 - c)/(1 + |s|), or constant c; 0 on a sparse run's mistake
    with y s < 0).  Where the trace reports ``final.rho`` each reported rho_k must be the
    rule's (within TRACE_SLACK) and is the one used."""
    reported = trace.final.get("rho")
    if reported is not None:
        _require(len(reported) == len(trace.mistakes),
                 f"final.rho has {len(reported)} entries for {len(trace.mistakes)} mistakes")
    T, n = len(rows), len(rows[0])
    v = [Fraction(0)] * n
    out = []
    for k, t in enumerate(trace.mistakes, 1):
        j = t % T
        x, label = rows[j], labels[j]
        s = _dot(v, x)
        want = Fraction(rho_rule(par, k, s))
        if par.sparse and label * s < 0:
            want = Fraction(0)
        rho = want
        if reported is not None:
            rho = to_fraction(reported[k - 1])
            _require(abs(rho - want) <= TRACE_SLACK * (1 + abs(want)),
                     f"mistake {k} (trial {t}): rho = {float(rho):.6g}, the rule "
                     f"{par.rho} gives {want} ~ {float(want):.6g} (Figure 1)")
        out.append(TraceMistake(t, j, k, label, s, rho))
        v = [a + label * b for a, b in zip(v, x)]
    return out


def check_trace_r_range(trace: Trace, rows: list[list[Fraction]], labels: list[int],
                        par: HigherOrderParams) -> int:
    """Unit-norm x (up to rounding), c/k or theorem1: every r_k = 1 - rho_k y_t s - rho_k
    lies in [1 - c, 1 + c] (c/k) or [c, 2 - c] (theorem1), Theorem 1's c <= r_k <= 2 - c,
    with s and rho_k from :func:`trace_rhos`.  Returns the number of mistakes checked."""
    mistakes = trace_rhos(trace, rows, labels, par)
    rule = par.rho
    if rule == "constant" or not _near_unit(rows):
        return 0
    c = par.c
    lo, hi = (1 - c, 1 + c) if rule == "c/k" else (c, 2 - c)
    for m in mistakes:
        r = 1 - m.rho * m.label * m.s - m.rho
        _require(lo - TRACE_SLACK <= r <= hi + TRACE_SLACK,
                 f"mistake {m.k} (trial {m.t}): r_k = {float(r):.6g} outside [{lo}, {hi}] "
                 f"(Theorem 1's proof)")
    return len(mistakes)


def check_trace_eq3(trace: Trace, rows: list[list[Fraction]], labels: list[int],
                    par: HigherOrderParams) -> int:
    """p = 2, linear kernel, unit-norm x (up to rounding), c/k or theorem1: with
    A_k = (I - rho_k x x^T) A_(k-1) (I - rho_k x x^T) rebuilt exactly from the trace's
    mistakes and :func:`trace_rhos`, ||B_k v_k||^2 = v_k^T A_k v_k <= (2 - c')^2 k after every
    mistake (eq. 3); and where the trace reports ``final.w`` it is A_K v_K (SPEC.md 12.2)
    within TRACE_SLACK.  Returns the number of mistakes checked."""
    mistakes = trace_rhos(trace, rows, labels, par)
    cp = _c_prime(par)
    if par.p != 2:
        return 0
    n = len(rows[0])
    A = [[Fraction(int(i == l)) for l in range(n)] for i in range(n)]
    v = [Fraction(0)] * n
    bounded = cp is not None and _near_unit(rows)
    for m in mistakes:
        x = rows[m.j]
        v = [a + m.label * b for a, b in zip(v, x)]
        if m.rho:
            Ax = [_dot(row, x) for row in A]                  # A x (A symmetric)
            xAx = _dot(x, Ax)
            # (I - r x x^T) A (I - r x x^T) = A - r (Ax x^T + x xA^T) + r^2 (x^T A x) x x^T
            A = [[A[i][l] - m.rho * (Ax[i] * x[l] + x[i] * Ax[l])
                  + m.rho * m.rho * xAx * x[i] * x[l] for l in range(n)] for i in range(n)]
        if bounded:
            assert cp is not None               # bounded
            norm2 = _dot(v, [_dot(row, v) for row in A])
            limit = (2 - cp) ** 2 * m.k
            _require(norm2 <= limit * (1 + TRACE_SLACK),
                     f"mistake {m.k} (trial {m.t}): ||B_k v_k||^2 = {float(norm2):.6g} > "
                     f"(2 - c')^2 k = {float(limit):.6g} (eq. 3)")
    if "w" in trace.final:
        got = [to_fraction(c) for c in trace.final["w"]]
        want = [_dot(row, v) for row in A]
        scale = max([abs(c) for c in want] + [Fraction(1)])
        _require(len(got) == n and all(abs(a - b) <= scale * TRACE_SLACK
                                       for a, b in zip(got, want)),
                 f"final w {[float(c) for c in got]} is not A_K v_K "
                 f"{[float(c) for c in want]} (A_K rebuilt from the mistakes and rho's)")
    return len(mistakes)


def check_trace_theorem1(trace: Trace, rows: list[list[Fraction]], labels: list[int],
                         par: HigherOrderParams, u: Any,
                         gammas: Any = (Fraction(1, 100), Fraction(1, 20), Fraction(1, 10),
                                        Fraction(1, 4), Fraction(1, 2), Fraction(1))) -> int:
    """Theorem 1's mistake bound (2) as :func:`check_theorem1`, from the trace alone: p = 2,
    unit-norm x (up to rounding), c/k or theorem1; B_{k-1} rebuilt from the trace's mistakes
    and :func:`trace_rhos`.  Returns the number of gammas checked."""
    mistakes = trace_rhos(trace, rows, labels, par)
    cp = _c_prime(par)
    if cp is None or cp == 0 or par.p != 2 or not _near_unit(rows):
        return 0
    u = [Fraction(float(c)) for c in u]
    norm2 = sum(c * c for c in u)
    if norm2 == 0:
        return 0
    if norm2 > 1:
        scale = Fraction(math.sqrt(float(norm2))) * (1 + Fraction(1, 10**12))
        u = [c / scale for c in u]
    w, margins = list(u), []
    for m in mistakes:
        x = rows[m.j]
        margins.append(m.label * _dot(w, x))
        if m.rho:
            wx = _dot(w, x)
            w = [a - m.rho * wx * b for a, b in zip(w, x)]
    alpha = float((2 - cp) / cp)
    count = len(mistakes)
    for gamma in gammas:
        D = sum((max(Fraction(0), gamma - mg) for mg in margins), Fraction(0))
        bound = theorem1_bound(alpha, float(D), float(gamma)) * (1 + 1e-6)
        _require(count <= bound, f"{count} mistakes exceed Theorem 1's bound (2) {bound:.6g} "
                                 f"(gamma = {gamma}, D = {float(D):.6g}, alpha = {alpha:.4g})")
    return len(gammas)
