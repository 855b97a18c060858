"""Invariants of the Second-Order Perceptron (SPEC.md, "second_order"), exact.

Each check raises :class:`InvariantViolation` naming what broke.  The literal checks rebuild
every trial's matrices from the definition (no incremental update), so they catch a wrong
update rule in any exact implementation that records its scores:

- ``check_literal``: score_t = x_t^T (a_k I + S_t S_t^T)^{-1} v_{k-1} (or the pseudoinverse),
  Theorem 3.3's dual expression y~^T (a_k I + G_t)^{-1} S_t^T x_t equals it, and the trial
  is a mistake iff y_t score_t <= 0;
- ``check_theorem_31``: the mistake bound for a given unit u and a grid of gamma;
- ``check_proof_chain``: v_k^T A_k^{-1} v_k <= v_{k-1}^T A_{k-1}^{-1} v_{k-1} + x^T A_k^{-1} x,
  x^T A_k^{-1} x = 1 - det A_{k-1} / det A_k, and sum_k x^T A_k^{-1} x <= sum ln(1 + l_i/a);
- ``perceptron_limit_a``: an a beyond which SOP makes exactly the Perceptron's mistakes;
- ``check_lemma_d1``: Lemma D.1 for a PSD A = B + x x^T, with an exact pseudoinverse.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from itertools import combinations
from typing import Any, cast

import numpy as np

from ..kernels import parse_kernel
from ..reference.second_order import resolve_params
from ..reference.second_order_engines import a_k, exact_inverse
from ..trace import Trace
from ._base import InvariantViolation as InvariantViolation  # every family module exports it

Implementation = Callable[..., Trace]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


def _rows(X: Any) -> list[list[Fraction]]:
    return [[Fraction(v) for v in row] for row in np.asarray(X).tolist()]


def _matmul(A: list[list[Any]], B: list[list[Any]]) -> list[list[Any]]:
    cols = list(zip(*B))
    return [[sum(a * b for a, b in zip(row, col)) for col in cols] for row in A]


def _det(M: list[list[Fraction]]) -> Fraction:
    """Exact determinant by elimination."""
    A = [list(r) for r in M]
    n, det = len(A), Fraction(1)
    for c in range(n):
        piv = next((r for r in range(c, n) if A[r][c] != 0), None)
        if piv is None:
            return Fraction(0)
        if piv != c:
            A[c], A[piv] = A[piv], A[c]
            det = -det
        det *= A[c][c]
        for r in range(c + 1, n):
            f = A[r][c] / A[c][c]
            if f:
                A[r] = [u - f * w for u, w in zip(A[r], A[c])]
    return det


def rank_factor(M: list[list[Fraction]]) -> tuple[list[int], list[list[Fraction]]]:
    """Exact rank-revealing elimination: the pivot columns P of M and the reduced rows R
    (r x n) with M = M[:, P] R."""
    A = [list(r) for r in M]
    rows, cols = len(A), len(A[0]) if A else 0
    pivots, r = [], 0
    for c in range(cols):
        piv = next((i for i in range(r, rows) if A[i][c] != 0), None)
        if piv is None:
            continue
        A[r], A[piv] = A[piv], A[r]
        inv = 1 / A[r][c]
        A[r] = [v * inv for v in A[r]]
        for i in range(rows):
            if i != r and A[i][c]:
                f = A[i][c]
                A[i] = [u - f * w for u, w in zip(A[i], A[r])]
        pivots.append(c)
        r += 1
    return pivots, A[:r]


def pseudo_inverse(M: list[list[Fraction]]) -> list[list[Fraction]]:
    """The Moore-Penrose pseudoinverse, exactly, from the rank factorisation M = F C
    (F = M's pivot columns, C the reduced rows): M^+ = C^T (C C^T)^{-1} (F^T F)^{-1} F^T."""
    n = len(M)
    pivots, C = rank_factor(M)
    if not pivots:
        return [[Fraction(0)] * n for _ in range(n)]
    F = [[row[p] for p in pivots] for row in M]
    Ft = [list(c) for c in zip(*F)]
    Ct = [list(c) for c in zip(*C)]
    one = Fraction(1)
    return _matmul(_matmul(Ct, exact_inverse(_matmul(C, Ct), one)),
                   _matmul(exact_inverse(_matmul(Ft, F), one), Ft))


def literal_scores(X: Any, y: Any, mistakes: list[int], epochs: int, params: dict[str, Any],
                   kernel: str = "linear") -> list[tuple[Fraction, Fraction | None]]:
    """(dual score, primal score) of every trial, from the definition, given the mistakes.

    Primal (linear kernel only): x^T (a_k I + S S^T)^{-1} v, or x^T (S S^T)^+ v.  Dual (any
    rational kernel; Theorem 3.3): y~^T (a_k I + G_t)^{-1} S_t^T x with G_t the Gram matrix of
    S_t, or y~^T G_t^+ S_t^T x for the pseudoinverse (SPEC.md)."""
    par = resolve_params(params)
    kern = parse_kernel(kernel)
    rows, labels = _rows(X), [int(v) for v in np.asarray(y).tolist()]
    T, n = len(rows), len(rows[0])
    made = set(mistakes)
    seen: list[int] = []
    out = []
    for t in range(epochs * T):
        j = t % T
        S = seen + [j]
        k = len(seen) + 1
        ytil = [labels[i] for i in seen] + [0]
        G = [[kern.exact(rows[r], rows[c]) for c in S] for r in S]
        kx = [kern.exact(rows[i], rows[j]) for i in S]
        a = a_k(par, k)
        if par.pseudoinverse:
            Gi = pseudo_inverse(G)
        else:
            Gi = exact_inverse([[g + (a if r == c else 0) for c, g in enumerate(row)]
                                for r, row in enumerate(G)], Fraction(1))
        dual = sum(yi * sum(h * b for h, b in zip(row, kx)) for yi, row in zip(ytil, Gi))
        primal = None
        if kern.is_linear:
            M = [[sum((rows[i][r] * rows[i][c] for i in S), Fraction(0)) for c in range(n)]
                 for r in range(n)]
            if par.pseudoinverse:
                Mi = pseudo_inverse(M)
            else:
                Mi = exact_inverse([[m + (a if r == c else 0) for c, m in enumerate(row)]
                                    for r, row in enumerate(M)], Fraction(1))
            v = [sum((labels[i] * rows[i][c] for i in seen), Fraction(0)) for c in range(n)]
            x = rows[j]
            primal = sum((x[r] * sum(Mi[r][c] * v[c] for c in range(n)) for r in range(n)),
                         Fraction(0))
        out.append((dual, primal))
        if t in made:
            seen.append(j)
    return out


def check_literal(trace: Trace, X: Any, y: Any, kernel: str = "linear") -> None:
    """Every recorded score is the definition's, Theorem 3.3 holds, and mistakes are exactly
    the trials with y score <= 0 (needs an exact trace with scores)."""
    if trace.scores is None:
        raise InvariantViolation("the trace has no scores")
    lit = literal_scores(X, y, trace.mistakes, trace.epochs, trace.params, kernel)
    labels = np.asarray(y).tolist()
    for t, ((dual, primal), got) in enumerate(zip(lit, trace.scores)):
        got = Fraction(got)
        if primal is not None:
            _require(primal == dual, f"trial {t}: Theorem 3.3 fails: primal {primal} != "
                     f"dual {dual}")
        _require(got == dual, f"trial {t}: score {got} is not the definition's {dual}")
        mistake = labels[t % len(labels)] * dual <= 0
        _require(mistake == (t in set(trace.mistakes)),
                 f"trial {t}: y score = {labels[t % len(labels)] * dual}, but mistake is "
                 f"{t in set(trace.mistakes)}")


def _states(X: Any, y: Any, mistakes: list[int]) -> tuple[list[list[Fraction]], list[int]]:
    rows = _rows(X)
    labels = [int(v) for v in np.asarray(y).tolist()]
    T = len(rows)
    return [rows[t % T] for t in mistakes], [labels[t % T] for t in mistakes]


def _eigs(xs: list[list[Fraction]], n: int) -> np.ndarray:
    M = np.zeros((n, n))
    for x in xs:
        xf = np.array([float(v) for v in x])
        M += np.outer(xf, xf)
    return cast(np.ndarray, np.clip(np.linalg.eigvalsh(M), 0, None))


def check_proof_chain(trace: Trace, X: Any, y: Any, a: Any) -> None:
    """The slides' proof of Theorem 3.1, at every mistake, exactly (basic form)."""
    a = Fraction(a)
    xs, ls = _states(X, y, trace.mistakes)
    n = len(_rows(X)[0])
    A = [[a if r == c else Fraction(0) for c in range(n)] for r in range(n)]
    v = [Fraction(0)] * n
    prev_quad, prev_det, total = Fraction(0), _det(A), Fraction(0)
    for k, (x, label) in enumerate(zip(xs, ls), 1):
        A = [[A[r][c] + x[r] * x[c] for c in range(n)] for r in range(n)]
        Ai = exact_inverse(A, Fraction(1))
        v = [vi + label * xi for vi, xi in zip(v, x)]
        quad = sum(v[r] * Ai[r][c] * v[c] for r in range(n) for c in range(n))
        xq = sum(x[r] * Ai[r][c] * x[c] for r in range(n) for c in range(n))
        det = _det(A)
        _require(quad <= prev_quad + xq, f"mistake {k}: v_k^T A_k^-1 v_k = {float(quad)} > "
                 f"{float(prev_quad + xq)}")
        _require(xq == 1 - prev_det / det, f"mistake {k}: x^T A_k^-1 x != 1 - det ratio")
        prev_quad, prev_det, total = quad, det, total + xq
    lam = _eigs(xs, n)
    bound = float(np.sum(np.log1p(lam / float(a))))
    _require(float(total) <= bound * (1 + 1e-9) + 1e-12,
             f"sum_k x^T A_k^-1 x = {float(total)} > sum ln(1 + l_i/a) = {bound}")


def theorem_31_bound(X: Any, y: Any, mistakes: list[int], epochs: int, a: Any,
                     u: np.ndarray, gammas: list[float]) -> float:
    """min over the gammas of D_gamma(u)/gamma + sqrt((a + u^T X_m X_m^T u)
    sum ln(1 + l_i/a)) / gamma, with D over every trial of the sequence."""
    Xf = np.asarray(X, dtype=float)
    yf = np.asarray(y, dtype=float)
    u = np.asarray(u, dtype=float) / np.linalg.norm(u)
    margins = np.tile(yf * (Xf @ u), epochs)
    T = len(yf)
    Xm = Xf[np.asarray(mistakes, dtype=int) % T] if mistakes else np.zeros((0, Xf.shape[1]))
    lam = np.clip(np.linalg.eigvalsh(Xm.T @ Xm), 0, None)
    log_term = float(np.sum(np.log1p(lam / float(a))))
    spread = float(a) + float(np.sum((Xm @ u) ** 2))
    best = math.inf
    for g in gammas:
        D = float(np.sum(np.maximum(0.0, g - margins)))
        best = min(best, D / g + math.sqrt(spread * log_term) / g)
    return best


def check_theorem_31(trace: Trace, X: Any, y: Any, a: Any, u: np.ndarray,
                     gammas: list[float]) -> float:
    bound = theorem_31_bound(X, y, trace.mistakes, trace.epochs, a, u, gammas)
    _require(len(trace.mistakes) <= bound * (1 + 1e-9) + 1e-9,
             f"{len(trace.mistakes)} mistakes exceed Theorem 3.1's bound {bound:.6g}")
    return bound


def perceptron_limit_a(X: Any, y: Any, epochs: int) -> tuple[Fraction, list[int]] | None:
    """(a, the Perceptron's mistakes) with a large enough that SOP(a) makes exactly those.

    Along the Perceptron's run (state v, mistakes X), a s = x.v - x^T X (aI + G)^{-1} X^T v
    with |correction| <= ||x|| tr(X X^T) ||v|| / a; a above twice its largest ratio to |x.v|
    keeps every sign.  None if the Perceptron meets x.v = 0 with v != 0 (a tie no a breaks)."""
    rows = _rows(X)
    labels = [int(v) for v in np.asarray(y).tolist()]
    T, n = len(rows), len(rows[0])
    v = [Fraction(0)] * n
    trC, worst, mistakes = Fraction(0), Fraction(0), []
    for t in range(epochs * T):
        x, label = rows[t % T], labels[t % T]
        dot = sum((a * b for a, b in zip(x, v)), Fraction(0))
        xx = sum((c * c for c in x), Fraction(0))
        vv = sum((c * c for c in v), Fraction(0))
        if any(v) and any(x):
            if dot == 0:
                return None
            # ||x|| ||v|| <= (xx + vv) / 2 keeps everything rational
            worst = max(worst, (xx + vv) / 2 * trC / abs(dot))
        if label * dot <= 0:
            mistakes.append(t)
            v = [a + label * b for a, b in zip(v, x)]
            trC += xx
    return 2 * worst + 1, mistakes


def _principal_det(M: list[list[Fraction]]) -> Fraction:
    """det_{!=0}(M) of a symmetric PSD M: the sum of its principal minors of order rank M."""
    r = len(rank_factor(M)[0])
    if r == 0:
        return Fraction(1)
    return sum((_det([[M[i][j] for j in idx] for i in idx])
                for idx in combinations(range(len(M)), r)), Fraction(0))


def check_lemma_d1(B: list[list[Fraction]], x: list[Fraction],
                   pinv: Callable[[list[list[Fraction]]], list[list[Fraction]]]
                   = pseudo_inverse) -> None:
    """Lemma D.1: A = B + x x^T; x^T A^+ x = 1 if x is outside span(B), else
    1 - det_{!=0}(B) / det_{!=0}(A) < 1.  ``pinv`` is the pseudoinverse under test."""
    n = len(x)
    A = [[B[r][c] + x[r] * x[c] for c in range(n)] for r in range(n)]
    Ap = pinv(A)
    val = sum(x[r] * Ap[r][c] * x[c] for r in range(n) for c in range(n))
    inside = len(rank_factor([row + [xi] for row, xi in zip(B, x)])[0]) == \
        len(rank_factor(B)[0])
    if not inside:
        _require(val == 1, f"x outside span(B) but x^T A^+ x = {val}")
    else:
        expected = 1 - _principal_det(B) / _principal_det(A)
        _require(val == expected and (val < 1),
                 f"x inside span(B): x^T A^+ x = {val}, expected {expected}")
