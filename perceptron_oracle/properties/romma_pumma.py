"""The guarantees of ROMMA and PUMMA (Ishibashi, Hatano & Takeda, "Online Learning of
Approximate Maximum p-Norm Margin Classifiers with Bias", COLT 2008; ROMMA: Li & Long, "The
Relaxed Online Maximum Margin Algorithm", 2002), checked on the reference's history.

Each check runs ``reference.pumma.history`` / ``reference.romma.history`` (the trace and the
state after every update), so a planted bug in the reference's building blocks
(tests/wrong_romma_pumma.py patches them) shows here.  Each raises
:class:`InvariantViolation` naming what broke.  Exact (Fraction) runs are checked exactly;
mpmath runs within ``slack`` (2^-64 relative), p > 2 always in mpmath.

- ``check_lemma4``: after every update, w.x_pos + b + xi_pos = 1 and w.x_neg + b - xi_neg = -1.
- ``check_pumma_is_romma_on_half_differences``: section 3.2's remark: PUMMA (p = 2) makes
  the same updates as ROMMA run on z_k = (x_pos - x_neg) / 2, one example per update (the w
  after every update is equal).
- ``check_theorem2``: Theorem 2 itself, exactly (p = 2): the maximum-margin hyperplane
  (u, b) over X and the maximum-margin homogeneous hyperplane over
  Z = {(x_pos - x_neg) / 2} have the same u, and b = -u.(x_pos + x_neg) / 2 on every pair
  with u.(x_pos - x_neg) = 2.
- ``check_lemma5``: ||w_t||_q <= ||u||_q for (u, b) with y (u.x + b) >= 1 on the data.
- ``check_lemma6``: each update raises ||w||_q^2 by >= (2 - v.z)^2 / ((p-1) ||z||_p^2)
  (ROMMA: (1 - v.z)^2 / ||z||^2), the re-derived Lemma 6 (SPEC.md).
- ``check_theorem3``: run epochs until one passes without an update; the updates are within
  ``theorem3_bound`` (2 + (4 (p-1) R^2 ||u||_q^2 - 4) / delta^2, SPEC.md 14.6), the
  per-update gains Lemma 6 guarantees add up to at
  most ||u||_q^2 along the run (the proof's budget), and the p-norm margin is
  >= (1 - delta) gamma.
- ``check_soft_equals_augmented``: PUMMA with C (p = 2) == hard-margin PUMMA on
  x~_j = (x_j, y_j e_j / sqrt(C)) (C a rational square, so everything stays exact).
- ``optimum_2norm``: the exact maximum-margin hyperplane (with or without bias) by
  enumeration of support sets, in Fraction.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import mpmath

from ..numbers import to_fraction
from ..reference import pumma as pumma_ref
from ..reference import romma as romma_ref
from ..reference.common import exact_data
from ._base import InvariantViolation as InvariantViolation  # every family module exports it


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


SLACK = Fraction(1, 2**64)


def _close(a: Any, b: Any, scale: Any = 1) -> bool:
    """a == b exactly for Fractions; within SLACK * (1 + |scale|) otherwise."""
    if isinstance(a, Fraction) and isinstance(b, (Fraction, int)):
        return a == b
    return abs(_fr(a) - _fr(b)) <= SLACK * (1 + abs(_fr(scale)))


def _fr(v: Any) -> Fraction:
    return v if isinstance(v, Fraction) else to_fraction(v)


def _dot(a: list[Any], b: list[Any]) -> Any:
    return sum((x * z for x, z in zip(a, b)), 0 * a[0] if a else 0)


def _norm2(v: list[Any], r: Fraction) -> Any:
    """||v||_r^2: exact for r = 2; mpmath at 256 bits otherwise."""
    if r == 2:
        return sum((_fr(a) ** 2 for a in v), Fraction(0))
    ctx = mpmath.MPContext()
    ctx.prec = 256
    rr = ctx.mpf(r.numerator) / r.denominator
    total = ctx.fsum(ctx.power(abs(ctx.mpf(_fr(a).numerator) / _fr(a).denominator), rr)
                     for a in v)
    return ctx.power(total, 2 / rr) if total else ctx.mpf(0)


# -- the exact optimum (p = 2) -----------------------------------------------------------------

def _solve(A: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    """A x = rhs by Gaussian elimination in Fraction; None if A is singular."""
    m = len(A)
    M = [row[:] + [r] for row, r in zip(A, rhs)]
    for c in range(m):
        piv = next((r for r in range(c, m) if M[r][c] != 0), None)
        if piv is None:
            return None
        M[c], M[piv] = M[piv], M[c]
        for r in range(m):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [a - f * b for a, b in zip(M[r], M[c])]
    return [M[r][m] / M[r][r] for r in range(m)]


def optimum_2norm(X: Any, y: Any, bias: bool = True
                  ) -> tuple[list[Fraction], Fraction, Fraction] | None:
    """(w*, b*, ||w*||^2) minimising ||w||^2 s.t. y_j (w.x_j + b) >= 1 (b = 0 without bias),
    exactly; None if the data is not separable so.

    KKT: w = sum_{i in S} a_i y_i x_i, a_i > 0, y_i (w.x_i + b) = 1 on the support S, and
    sum_S a_i y_i = 0 with a bias.  Some optimal multipliers have an affinely (linearly)
    independent support of at most n + 1 (n) points (Caratheodory), so enumerating supports
    of that size and solving each square system finds the optimum; every feasible KKT point
    is optimal (convexity), and ||w*||^2 = sum_S a_i.
    """
    rows, labels = exact_data(X, y)
    T, n = len(rows), len(rows[0])
    best = None
    for size in range(1, min(T, n + 1 if bias else n) + 1):
        for S in itertools.combinations(range(T), size):
            if bias and len({labels[i] for i in S}) < 2:
                continue
            A = [[labels[i] * labels[k] * _dot(rows[i], rows[k]) for k in S]
                 + ([Fraction(labels[i])] if bias else []) for i in S]
            rhs = [Fraction(1)] * size
            if bias:
                A.append([Fraction(labels[k]) for k in S] + [Fraction(0)])
                rhs.append(Fraction(0))
            sol = _solve(A, rhs)
            if sol is None or any(a < 0 for a in sol[:size]):
                continue
            b = sol[size] if bias else Fraction(0)
            w = [sum((sol[s] * labels[k] * rows[k][d] for s, k in enumerate(S)), Fraction(0))
                 for d in range(n)]
            if all(labels[j] * (_dot(w, rows[j]) + b) >= 1 for j in range(T)):
                norm2 = sum(sol[:size], Fraction(0))
                if best is None or norm2 < best[2]:
                    best = (w, b, norm2)
    return best


# -- the checks --------------------------------------------------------------------------------

def check_lemma4(X: Any, y: Any, *, epochs: int = 2, **params: Any) -> Any:
    """Lemma 4 after every update of PUMMA (hard or soft margin, any p)."""
    trace, states = pumma_ref.history(X, y, epochs=epochs, **params)
    rows, _ = exact_data(X, y)
    for s in states:
        wp = _dot(s["w"], rows[s["pos"]]) + s["b"] + s["xi"][s["pos"]]
        wn = _dot(s["w"], rows[s["neg"]]) + s["b"] - s["xi"][s["neg"]]
        _require(_close(wp, 1, wp) and _close(wn, -1, wn),
                 f"Lemma 4 fails after trial {s['t']}: w.x_pos + b + xi = {float(wp)!r}, "
                 f"w.x_neg + b - xi = {float(wn)!r}")
    return trace


def check_pumma_is_romma_on_half_differences(X: Any, y: Any, *, epochs: int = 2,
                                              delta: Any = 0) -> Any:
    """Section 3.2's remark: PUMMA (p = 2, hard margin) == ROMMA on z_k = (x_pos - x_neg)/2,
    update for update."""
    trace, states = pumma_ref.history(X, y, epochs=epochs, delta=delta)
    if not states:
        return trace
    rows, _ = exact_data(X, y)
    Z = [[(a - c) / 2 for a, c in zip(rows[s["pos"]], rows[s["neg"]])] for s in states]
    rtrace, rstates = romma_ref.history(Z, [1] * len(Z), epochs=1)
    _require(rtrace.updates == list(range(len(Z))),
             f"ROMMA on the z's updates on {rtrace.updates}, not on every one of {len(Z)}")
    for s, r in zip(states, rstates):
        _require(all(_close(a, b, a) for a, b in zip(s["w"], r["w"])),
                 f"after trial {s['t']} PUMMA's w {[float(v) for v in s['w']]} differs from "
                 f"ROMMA's on z {[float(v) for v in r['w']]}")
    return trace


def check_theorem2(X: Any, y: Any, optimum: Any = None) -> tuple[list[Fraction], Fraction] | None:
    """Theorem 2 (p = 2), exactly: with Z = {(x_pos - x_neg) / 2 : x_pos, x_neg in X}, the
    maximum-margin hyperplane (u, b) over X (with bias) and the maximum-margin homogeneous
    hyperplane over Z have the same u (the constraints on u are the same:
    min_pos u.x - max_neg u.x >= 2 <=> u.z >= 1 on Z), and b = -u.(x_pos + x_neg) / 2 on
    every pair with u.(x_pos - x_neg) = 2.  ``optimum`` is the solver under test
    (``optimum_2norm`` by default).  Returns (u, b), None when X has one label; X not
    separable must leave Z not separable."""
    solve = optimum or optimum_2norm
    rows, labels = exact_data(X, y)
    pos = [r for r, l in zip(rows, labels) if l == 1]
    neg = [r for r, l in zip(rows, labels) if l == -1]
    if not pos or not neg:
        return None
    Z = [[(a - c) / 2 for a, c in zip(xp, xn)] for xp in pos for xn in neg]
    over_x = solve(rows, labels, bias=True)
    over_z = solve(Z, [1] * len(Z), bias=False)
    _require((over_x is None) == (over_z is None),
             "Theorem 2: X is separable with bias but Z is not separable through the origin"
             if over_z is None else
             "Theorem 2: Z is separable through the origin but X is not separable with bias")
    if over_x is None or over_z is None:
        return None
    u, b, norm2 = over_x
    _require(u == over_z[0] and norm2 == over_z[2],
             f"Theorem 2: the maximum-margin u over X {[str(v) for v in u]} (||u||^2 = "
             f"{norm2}) differs from the one over Z {[str(v) for v in over_z[0]]} "
             f"(||u||^2 = {over_z[2]})")
    tight = [(xp, xn) for xp in pos for xn in neg
             if _dot(u, [a - c for a, c in zip(xp, xn)]) == 2]
    _require(bool(tight), "Theorem 2: no pair (x_pos, x_neg) with u.(x_pos - x_neg) = 2")
    for xp, xn in tight:
        want = -_dot(u, [a + c for a, c in zip(xp, xn)]) / 2
        _require(b == want, f"Theorem 2: b = {b}, but -u.(x_pos + x_neg)/2 = {want} on the "
                            f"pair {[str(v) for v in xp]}, {[str(v) for v in xn]}")
    return u, b


def _q(p: Fraction) -> Fraction:
    return p / (p - 1)


def check_lemma5(X: Any, y: Any, u: list[Any], b: Any, *, epochs: int = 2,
                 **params: Any) -> Any:
    """||w_t||_q <= ||u||_q for every state, (u, b) with y (u.x + b) >= 1 on the data."""
    rows, labels = exact_data(X, y)
    assert all(l * (_dot([_fr(c) for c in u], r) + _fr(b)) >= 1 for r, l in zip(rows, labels))
    p = pumma_ref.PARAMS.read(params).p
    trace, states = pumma_ref.history(X, y, epochs=epochs, **params)
    bound = _norm2(u, _q(p))
    for s in states:
        got = _norm2(s["w"], _q(p))
        _require(_fr(got) <= _fr(bound) * (1 + SLACK),
                 f"Lemma 5 fails after trial {s['t']}: ||w||_q^2 = {float(got)!r} > "
                 f"||u||_q^2 = {float(bound)!r}")
    return trace


def check_lemma6(X: Any, y: Any, *, epochs: int = 2, **params: Any) -> Any:
    """PUMMA (hard margin): ||w'||_q^2 - ||v||_q^2 >= (2 - v.z)^2 / ((p-1) ||z||_p^2)."""
    rows, _ = exact_data(X, y)
    p = pumma_ref.PARAMS.read(params).p
    trace, states = pumma_ref.history(X, y, epochs=epochs, **params)
    v = [Fraction(0)] * len(rows[0])
    for s in states:
        z = [a - c for a, c in zip(rows[s["pos"]], rows[s["neg"]])]
        gain = _fr(_norm2(s["w"], _q(p))) - _fr(_norm2(v, _q(p)))
        need = (2 - _fr(_dot([_fr(c) for c in v], z))) ** 2 / ((p - 1) * _fr(_norm2(z, p)))
        _require(gain >= need * (1 - SLACK) - SLACK,
                 f"Lemma 6 fails at trial {s['t']}: ||w||_q^2 rose by {float(gain)!r} < "
                 f"{float(need)!r}")
        v = s["w"]
    return trace


def check_romma_lemma6(X: Any, y: Any, *, epochs: int = 2, **params: Any) -> Any:
    """ROMMA: the example of each update gets margin exactly 1 (its constraint is tight) and
    ||w'||^2 - ||v||^2 >= (1 - v.z)^2 / ||z||^2 (linear kernel)."""
    rows, labels = exact_data(X, y)
    trace, states = romma_ref.history(X, y, epochs=epochs, **params)
    v = [Fraction(0)] * len(rows[0])
    for s in states:
        j = s["t"] % len(rows)
        z = [labels[j] * a for a in rows[j]]
        _require(_close(_dot(s["w"], z), 1, 1),
                 f"ROMMA: after trial {s['t']} the example's margin is "
                 f"{float(_dot(s['w'], z))!r}, not 1")
        gain = _fr(_norm2(s["w"], Fraction(2))) - _fr(_norm2(v, Fraction(2)))
        need = (1 - _fr(_dot(v, z))) ** 2 / _fr(_norm2(z, Fraction(2)))
        _require(gain >= need * (1 - SLACK) - SLACK,
                 f"ROMMA: ||w||^2 rose by {float(gain)!r} < {float(need)!r} at trial {s['t']}")
        v = s["w"]
    return trace


def theorem3_bound(algorithm: str, p: Fraction | float, delta: Fraction | float, R2: object,
                   u_norm2: object) -> Fraction:
    """Theorem 3 (i) as tight as its proof gives (SPEC.md 14.6), delta > 0, R2 = max ||x||_p^2,
    u_norm2 = ||u||_q^2 for any (u, b) with y (u.x + b) >= 1:

    PUMMA: start-up stores one example (an update that computes no w); the update that
    completes the pair starts from v = 0 and gains ||w||_q^2 >= 4 / ((p-1)||z||_p^2)
    >= 1 / ((p-1) R^2) (Lemma 6, ||z||_p <= 2R); every later update has v.z < 2 - delta
    (Lemma 4: the kept pair member is tight) and gains more than delta^2 / (4 (p-1) R^2); the
    gains add up to ||w||_q^2 <= ||u||_q^2 (Lemma 5).  So the updates number at most
    2 + (4 (p-1) R^2 ||u||_q^2 - 4) / delta^2.
    ROMMA (p = 2, homogeneous u): the first update gains 1/||x||^2 >= 1/R^2, every later one
    more than delta^2 / R^2: at most 1 + (R^2 ||u||^2 - 1) / delta^2."""
    p, delta = Fraction(p), Fraction(delta)
    if delta <= 0:
        raise ValueError("Theorem 3 needs delta > 0")
    R2, u_norm2 = _fr(R2), _fr(u_norm2)
    if algorithm == "pumma":
        return 2 + (4 * (p - 1) * R2 * u_norm2 - 4) / delta**2
    return 1 + (R2 * u_norm2 - 1) / delta**2


def check_theorem3(X: Any, y: Any, *, u_norm2: Any, p: Any = 2, delta: Any,
                   max_epochs: int = 60, algorithm: str = "pumma") -> Any:
    """Run until an epoch passes without an update (within max_epochs, else None: no
    verdict); then the updates are within Theorem 3's bound and the final p-norm margin is
    >= (1 - delta) / ||u||_q, with ||u||_q^2 = ``u_norm2`` for the best (u, b) known (the
    exact optimum for p = 2).  ROMMA (``algorithm="romma"``, p = 2, u homogeneous): the same
    with ROMMA's bound (``theorem3_bound``)."""
    rows, labels = exact_data(X, y)
    p, delta = Fraction(p), Fraction(delta)
    T = len(rows)
    R2 = max(_fr(_norm2(r, p)) for r in rows)
    bound = theorem3_bound(algorithm, p, delta, R2, _fr(u_norm2))
    if algorithm == "pumma":
        trace, states = pumma_ref.history(X, y, epochs=max_epochs, p=p, delta=delta)
        r, pairs = 2, [[a - c for a, c in zip(rows[s["pos"]], rows[s["neg"]])] for s in states]
    else:
        trace, states = romma_ref.history(X, y, epochs=max_epochs, delta=delta)
        r, pairs = 1, [[labels[s["t"] % T] * a for a in rows[s["t"] % T]] for s in states]
    # the budget of Lemmas 5 and 6 along the run: sum_k (r - v_k.z_k)^2 / ((p-1)||z_k||_p^2)
    # <= ||w_K||_q^2 <= ||u||_q^2
    budget, v = Fraction(0), [Fraction(0)] * len(rows[0])
    for s, z in zip(states, pairs):
        budget += (r - _fr(_dot([_fr(c) for c in v], z))) ** 2 / ((p - 1) * _fr(_norm2(z, p)))
        v = s["w"]
        _require(budget <= _fr(u_norm2) * (1 + SLACK),
                 f"after trial {s['t']} the updates' guaranteed gains (Lemma 6) add up to "
                 f"{float(budget)!r} > ||u||_q^2 = {float(_fr(u_norm2))!r} (Lemma 5)")
    per_epoch = [0] * max_epochs
    for t in trace.updates:
        per_epoch[t // T] += 1
    if 0 not in per_epoch:
        _require(max_epochs < bound + 2, f"{len(trace.updates)} updates in {max_epochs} "
                 f"epochs, none clean, beyond Theorem 3's bound {float(bound)}")
        return None
    _require(len(trace.updates) <= bound,
             f"{len(trace.updates)} updates exceed Theorem 3's bound {float(bound):.4g}")
    w = [_fr(v) for v in trace.final["w"]]
    b = _fr(trace.final.get("b", 0))
    worst = min(l * (_dot(w, r) + b) for r, l in zip(rows, labels))
    _require(worst >= (1 - delta) * (1 - SLACK),
             f"a clean epoch but min y (w.x + b) = {float(worst)!r} < 1 - delta")
    # margin = worst / ||w||_q >= (1 - delta) / ||u||_q  <=>  worst^2 ||u||^2 >= (1-d)^2 ||w||^2
    wq = _fr(_norm2(w, _q(p)))
    _require(worst**2 * _fr(u_norm2) >= (1 - delta) ** 2 * wq * (1 - SLACK),
             f"final margin {float(worst) / float(wq) ** 0.5!r} < (1 - delta) x optimum "
             f"{float(1 - delta) / float(_fr(u_norm2)) ** 0.5!r}")
    return trace


def check_soft_equals_augmented(X: Any, y: Any, *, C: Fraction, epochs: int = 2,
                                delta: Any = 0) -> Any:
    """PUMMA with soft margin C (p = 2) == hard-margin PUMMA on x~_j = (x_j, y_j e_j/sqrt C):
    the same updates, w = w~[:n], b = b~, xi_j = w~[n + j] / sqrt(C)."""
    C = Fraction(C)
    root = Fraction(_isqrt(C.numerator), _isqrt(C.denominator))
    assert root * root == C, "C must be a rational square"
    rows, labels = exact_data(X, y)
    T, n = len(rows), len(rows[0])
    aug = [r + [Fraction(labels[j]) / root if i == j else Fraction(0) for i in range(T)]
           for j, r in enumerate(rows)]
    soft = pumma_ref.pumma(X, y, epochs=epochs, C=C, delta=delta)
    hard = pumma_ref.pumma(aug, labels, epochs=epochs, delta=delta)
    _require(soft.updates == hard.updates,
             f"soft-margin updates {soft.updates} differ from the augmented run's {hard.updates}")
    wh = hard.final["w"]
    ok = (all(_close(a, b_, a) for a, b_ in zip(soft.final["w"], wh[:n]))
          and _close(soft.final["b"], hard.final["b"], soft.final["b"])
          and all(_close(x, _fr(wh[n + j]) / root, x) for j, x in enumerate(soft.final["xi"])))
    _require(ok, "the soft-margin final state differs from the augmented hard-margin run's")
    return soft


def _isqrt(k: int) -> int:
    return math.isqrt(k)
