"""Hypothesis strategies for online sequences and parameters.

Each sequence strategy draws a :class:`Sequence`: ``X`` as a float64 array (what every
implementation takes), ``exact`` the same points as exact rationals where the strategy builds
them exactly (the sphere points: their float64 rounding is in ``X``), ``y`` in {-1, +1}, and,
for separable data, the separating ``u`` and ``margin``.

- ``separable``:       continuous points, labels of a hyperplane, a chosen margin
- ``label_noise``:     the same with labels flipped at a drawn rate
- ``sphere``:          rational points exactly on the unit sphere (inverse stereographic
                       projection of dyadic points), labelled by a hyperplane
- ``small_integers``:  coordinates in -2..2: exact ties (score exactly 0) are common
- ``duplicates``:      a few points repeated, with the same or the opposite label
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
from hypothesis import strategies as st

from ..kernels import KERNELS, parse_kernel
from ..reference.second_order import A_GROWTHS, SecondOrderParams
from ..reference.second_order_engines import a_k


@dataclass
class Sequence:
    X: np.ndarray
    y: np.ndarray
    exact: list[list[Fraction]] | None = None   # exact points, where X is their rounding
    u: np.ndarray | None = None                 # a separating unit vector (separable data)
    margin: float | None = None                 # min_t y_t u.x_t / ||u|| for that u
    name: str = ""

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return (f"Sequence({self.name}, X={self.X.tolist()!r}, y={self.y.tolist()!r}"
                + (f", margin={self.margin!r}" if self.margin is not None else "") + ")")


class Labelled(Protocol):
    """What the invariants read of a drawn sequence: :class:`Sequence`, or a check's
    ``checks.Data``."""

    X: np.ndarray
    y: np.ndarray
    u: np.ndarray | None
    margin: float | None


MAX_EXAMPLES = 30
MAX_FEATURES = 5

_coordinate = st.floats(-1, 1, allow_nan=False, width=64)
_sizes = st.tuples(st.integers(1, MAX_EXAMPLES), st.integers(1, MAX_FEATURES))


def _unit(draw: Any, n: int) -> np.ndarray:
    """A unit vector; a draw too close to 0 becomes e_1."""
    u = np.array(draw(st.lists(_coordinate, min_size=n, max_size=n), label="u"))
    norm = float(np.linalg.norm(u))
    if norm < 1e-3:
        e1: np.ndarray = np.eye(n)[0]
        return e1
    unit: np.ndarray = u / norm
    return unit


@st.composite
def separable(draw: Any, min_margin: float = 0.01) -> Sequence:
    T, n = draw(_sizes, label="T, n")
    u = _unit(draw, n)
    margin = draw(st.floats(min_margin, 0.5), label="margin")
    rows = draw(st.lists(st.lists(_coordinate, min_size=n, max_size=n), min_size=T,
                         max_size=T), label="points")
    X = np.array(rows, dtype=np.float64).reshape(T, n)
    # Push every point out of the band |u.x| < margin along u, keeping its side.
    side = np.where(X @ u >= 0, 1.0, -1.0)
    shortfall = np.maximum(0.0, margin - side * (X @ u))
    X = X + (side * shortfall)[:, None] * u[None, :] * (1 + 1e-9)
    y = np.where(X @ u > 0, 1, -1).astype(np.int64)
    achieved = float(np.min(y * (X @ u)))
    return Sequence(X, y, u=u, margin=achieved, name="separable")


@st.composite
def label_noise(draw: Any) -> Sequence:
    seq = draw(separable())
    rate = draw(st.sampled_from([0.05, 0.1, 0.3]), label="noise rate")
    flips = draw(st.lists(st.floats(0, 1), min_size=len(seq.y), max_size=len(seq.y)),
                 label="flips")
    y = np.where(np.array(flips) < rate, -seq.y, seq.y)
    return Sequence(seq.X, y, name="label_noise")


@st.composite
def sphere(draw: Any) -> Sequence:
    """x = (2t, |t|^2 - 1) / (|t|^2 + 1) for dyadic t in R^(n-1): exactly ||x|| = 1."""
    T = draw(st.integers(1, MAX_EXAMPLES), label="T")
    n = draw(st.integers(2, MAX_FEATURES), label="n")
    dyadic = st.builds(lambda a, e: Fraction(a, 2 ** e), st.integers(-16, 16),
                       st.integers(0, 3))
    exact = []
    for _ in range(T):
        t = draw(st.lists(dyadic, min_size=n - 1, max_size=n - 1), label="t")
        s = sum(v * v for v in t)
        exact.append([2 * v / (s + 1) for v in t] + [(s - 1) / (s + 1)])
    X = np.array([[float(v) for v in row] for row in exact])
    u = _unit(draw, n)
    y = np.where(X @ u > 0, 1, -1).astype(np.int64)
    return Sequence(X, y, exact=exact, name="sphere")


@st.composite
def small_integers(draw: Any) -> Sequence:
    T, n = draw(_sizes, label="T, n")
    rows = draw(st.lists(st.lists(st.integers(-2, 2), min_size=n, max_size=n),
                         min_size=T, max_size=T), label="points")
    y = draw(st.lists(st.sampled_from([-1, 1]), min_size=T, max_size=T), label="labels")
    return Sequence(np.array(rows, dtype=np.float64).reshape(T, n),
                    np.array(y, dtype=np.int64), name="small_integers")


@st.composite
def duplicates(draw: Any) -> Sequence:
    base = draw(st.one_of(separable(), small_integers()), label="base")
    picks = draw(st.lists(st.integers(0, len(base.y) - 1), min_size=1,
                          max_size=MAX_EXAMPLES), label="repeats")
    flips = draw(st.lists(st.booleans(), min_size=len(picks), max_size=len(picks)),
                 label="flip labels")
    X = np.concatenate([base.X, base.X[picks]])
    y = np.concatenate([base.y, np.where(flips, -base.y[picks], base.y[picks])])
    return Sequence(X, y.astype(np.int64), name="duplicates")


SEQUENCES = {
    "separable": separable,
    "label_noise": label_noise,
    "sphere": sphere,
    "small_integers": small_integers,
    "duplicates": duplicates,
}

# -- parameters --------------------------------------------------------------------------
# Mostly dyadic values (exact in float64, so no trial is fragile on integer data), with a few
# that are not (1/10, 1/3), which exercise the fragile-trial machinery.
_rational = st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(2), Fraction(1, 10),
                             Fraction(3, 4), Fraction(1, 3)])


@st.composite
def perceptron_params(draw: Any, dyadic_only: bool = False,
                      p2_only: bool = False) -> dict[str, Any]:
    """The options of Khardon & Wachman; each one off in about half the draws.

    Every family's parameter strategy takes ``p2_only`` (the draw is for a form that takes
    p = 2 only: ``Family.draw_params``), so that a family draws only what its forms take.
    """
    value = _rational.filter(lambda v: not dyadic_only or _is_dyadic(v))
    params: dict[str, Any] = {}
    if draw(st.booleans(), label="eta?"):
        params["eta"] = draw(value, label="eta")
    if draw(st.booleans(), label="bias?"):
        params["b0"] = -draw(value, label="theta_init")
        params["C"] = draw(value, label="C")
    if draw(st.booleans(), label="tau?"):
        params["tau"] = draw(value, label="tau")
    if draw(st.booleans(), label="lam?"):
        params["lam"] = draw(value, label="lam")
    if draw(st.booleans(), label="alpha_bound?"):
        params["alpha_bound"] = draw(st.integers(1, 3), label="alpha_bound")
    return params


def _is_dyadic(value: Fraction) -> bool:
    return (value.denominator & (value.denominator - 1)) == 0


_HO_P_ANY = st.sampled_from([Fraction(2), Fraction(2), Fraction(2), Fraction(3), Fraction(4),
                             Fraction(7)])   # p = 2 in half the draws: every form takes it
_HO_C = st.sampled_from([Fraction(0), Fraction(2, 5), Fraction(1, 2), Fraction(1, 10),
                         Fraction(3, 4), Fraction(1, 3)])
_HO_C_THEOREM1 = st.sampled_from([Fraction(1), Fraction(2, 5), Fraction(1, 2), Fraction(1, 10),
                                  Fraction(3, 4), Fraction(1, 3)])


@st.composite
def higher_order_params(draw: Any, p2_only: bool = False) -> dict[str, Any]:
    """HO_p(c): p = 2 for the forms declared p = 2 only, p in {2, 3, 4, 7} otherwise;
    rho in {c/k, theorem1, constant} with c in its range (SPEC.md, higher_order); sparse in
    about half the draws.  c = 0 (the Perceptron) and c = 1 with theorem1 are included."""
    params: dict[str, Any] = {}
    p = Fraction(2) if p2_only else draw(_HO_P_ANY, label="p")
    if p != 2 or draw(st.booleans(), label="p given?"):
        params["p"] = p
    rho = draw(st.sampled_from(["c/k", "c/k", "theorem1", "constant"]), label="rho")
    if rho != "c/k" or draw(st.booleans(), label="rho given?"):
        params["rho"] = rho
    c = draw(_HO_C_THEOREM1 if rho == "theorem1" else _HO_C, label="c")
    if rho == "theorem1" or draw(st.integers(0, 3), label="c given?"):
        params["c"] = c
    if draw(st.booleans(), label="sparse?"):
        params["sparse"] = True
    return params


@st.composite
def pnorm_params(draw: Any, p2_only: bool = False) -> dict[str, Any]:
    """The p-norm Perceptron: p in {2, 5/2, 3, 4, 7} (every form takes any p)."""
    p = draw(st.sampled_from([Fraction(2), Fraction(5, 2), Fraction(3), Fraction(4),
                              Fraction(7)]), label="p")
    return {"p": p}


@st.composite
def second_order_params(draw: Any, p2_only: bool = False) -> dict[str, Any]:
    """The Second-Order Perceptron's variants: the basic form with a drawn a (dyadic and
    not), the adaptive a_k = a k, and the pseudoinverse (which takes no a)."""
    variant = draw(st.sampled_from(["basic", "basic", "basic", "adaptive", "pseudoinverse"]),
                   label="variant")
    if variant == "pseudoinverse":
        return {"pseudoinverse": True}
    params: dict[str, Any] = {}
    if draw(st.booleans(), label="a?"):
        params["a"] = draw(st.sampled_from([Fraction(1, 10), Fraction(1, 2), Fraction(2),
                                            Fraction(1, 3), Fraction(10)]), label="a")
    if variant == "adaptive":
        params["a_growth"] = "linear"
    return params


_delta = st.sampled_from([Fraction(0), Fraction(1, 10), Fraction(1, 4), Fraction(1, 2)])


@st.composite
def romma_params(draw: Any, p2_only: bool = False) -> dict[str, Any]:
    """ROMMA's delta (0 <= delta < 1), absent in about a third of the draws."""
    params: dict[str, Any] = {}
    if draw(st.integers(0, 2), label="delta?"):
        params["delta"] = draw(_delta, label="delta")
    return params


@st.composite
def pumma_params(draw: Any, p2_only: bool = False) -> dict[str, Any]:
    """PUMMA's p (2; 5/2, 3 or 4 unless ``p2_only``, about one draw in five), delta and
    the soft margin C (about a third of the draws; C a square, so sqrt(C) is rational)."""
    params: dict[str, Any] = draw(romma_params(), label="delta")
    if not p2_only and draw(st.integers(0, 4), label="p > 2?") == 0:
        params["p"] = draw(st.sampled_from([Fraction(5, 2), Fraction(3), Fraction(4)]),
                           label="p")
    if draw(st.integers(0, 2), label="C?") == 0:
        params["C"] = draw(st.sampled_from([Fraction(1), Fraction(4), Fraction(1, 4),
                                            Fraction(1, 10)]), label="C")
    return params


@st.composite
def alma_params(draw: Any, p2_only: bool = False) -> dict[str, Any]:
    """ALMA_p(alpha; B, C): p = 2 with ``p2_only`` (the dual form), else 2 or 5/2, 3, 4
    (about one draw in three); alpha in (0, 1] (1 is the p-norm Perceptron with a shrinking
    rate); B and C the paper's defaults in about half the draws each."""
    params: dict[str, Any] = {}
    if not p2_only and draw(st.integers(0, 2), label="p > 2?") == 0:
        params["p"] = draw(st.sampled_from([Fraction(5, 2), Fraction(3), Fraction(4)]),
                           label="p")
    if draw(st.integers(0, 3), label="alpha?"):
        params["alpha"] = draw(st.sampled_from([Fraction(1, 10), Fraction(1, 2),
                                                Fraction(9, 10), Fraction(1)]), label="alpha")
    if draw(st.booleans(), label="B?"):
        params["B"] = draw(st.sampled_from([Fraction(1), Fraction(2), Fraction(1, 3)]),
                           label="B")
    if draw(st.booleans(), label="C?"):
        params["C"] = draw(st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(3)]),
                           label="C")
    return params


# The Second-Order Perceptron's regulariser decides a trial only where the score
# x^T (a_k I + S S^T)^{-1} v changes sign with a_k: after fewer than two mistakes (and with
# one feature, linear kernel) it never does, and on the drawn data about one draw in ten has
# such a trial at all, so an a drawn from a fixed list seldom lands near where a decision
# changes.  In most of those draws a is moved so that a_k at the first such trial lies a
# factor 7/8 or 9/8 from that value (a dyadic number of 5 significant bits, exact in float64:
# not a tie, nothing excused as fragile), with a_growth drawn: constant or linear.
_SIDES = (Fraction(7, 8), Fraction(9, 8))
_A_GRID = 2.0 ** np.arange(-6, 7)    # the values of a_k where a decision's sign is looked at


@st.composite
def second_order_from_data(draw: Any, d: Any) -> dict[str, Any]:
    """SOP's parameters set from a drawn run ``d`` (the fuzzer's draw: ``X``, ``y``,
    ``kernel``, ``epochs`` and the drawn ``params``): those parameters; or, where some
    decision depends on a (never with the pseudoinverse, which takes no a), in about seven
    draws in eight, a_growth drawn and a set so that a_k at the first such trial lies just
    below or above where its decision changes."""
    params: dict[str, Any] = d.params
    found = None if params.get("pseudoinverse") else _first_boundary(d)
    if found is None or not draw(st.integers(0, 7), label="a at a boundary?"):
        return params
    growth = draw(st.sampled_from(A_GROWTHS), label="a_growth")
    side = draw(st.sampled_from(_SIDES), label="side")
    value, k = found
    a = value * side / a_k(SecondOrderParams(a=Fraction(1), a_growth=growth,
                                             pseudoinverse=False), k)
    return {**params, "a": _dyadic(Fraction(a)), "a_growth": growth}


def _first_boundary(d: Any) -> tuple[float, int] | None:
    """(a*, k): the first trial t whose decision depends on the a_k in force there (k - 1
    mistakes before it, each decided by no a), and a value a* where its score changes sign;
    None when none does for a_k in 2^-6 .. 2^6.  In float64 (a guide for the draw: the
    exact reference decides), by the dual score y^T (a I + G)^{-1} b over the mistakes."""
    X, y = np.asarray(d.X, dtype=np.float64), np.asarray(d.y, dtype=np.float64)
    G = parse_kernel(d.kernel).matrix(X, X)
    T = len(y)
    support: list[int] = []

    def score(alpha: float, j: int) -> float:
        if not support:
            return 0.0
        b, labels = G[support, j], y[support]
        s = float(labels @ np.linalg.solve(alpha * np.eye(len(support))
                                           + G[np.ix_(support, support)], b))
        tol = 1e-9 * np.linalg.norm(labels) * np.linalg.norm(b) / alpha
        return 0.0 if abs(s) <= tol else s

    for t in range(d.epochs * T):
        j = t % T
        signs = [np.sign(score(alpha, j)) for alpha in _A_GRID]
        change = next((i for i in range(len(signs) - 1) if signs[i] != signs[i + 1]), None)
        if change is not None:
            lo, hi = _A_GRID[change], _A_GRID[change + 1]
            for _ in range(8):      # bisection: a* within 2^-8 of its value
                mid = (lo + hi) / 2
                if np.sign(score(mid, j)) == signs[change]:
                    lo = mid
                else:
                    hi = mid
            return (lo + hi) / 2, len(support) + 1
        if y[j] * signs[0] <= 0:
            support.append(j)
    return None


def _dyadic(q: Fraction, bits: int = 5) -> Fraction:
    """q > 0 rounded to ``bits`` significant binary digits."""
    shift = bits - (q.numerator.bit_length() - q.denominator.bit_length())
    scale = Fraction(2) ** shift
    return max(Fraction(round(q * scale)), Fraction(1)) / scale


def kernel_specs(name: str) -> st.SearchStrategy[str]:
    """The specs of the registered kernel ``name`` that tests and the fuzzer draw (its
    class's ``examples``: two polynomial and two Gaussian kernels for poly and rbf)."""
    examples = KERNELS[name].examples
    if len(examples) == 1:
        return st.just(examples[0])
    return st.sampled_from(examples)


def nonlinear_kernels() -> list[str]:
    """The registered kernels other than the linear one that have examples to draw, in
    the order of registration (poly, rbf, then any registered later)."""
    return [name for name, cls in KERNELS.items() if cls.examples and not cls.is_linear]
