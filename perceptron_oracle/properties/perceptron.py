"""Invariants of the Perceptron family, checkable on any implementation's trace.

Each check takes ``impl``, a callable with the protocol of ``perceptron_oracle.run``'s
implementations (``impl(X, y, *, epochs, kernel, **params) -> Trace``), a
:class:`~perceptron_oracle.properties.strategies.Sequence` (or any ``Labelled``: a check's
``Data``) and options, and raises :class:`InvariantViolation` naming what broke.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ..reference.perceptron import predict
from ..trace import Trace, plain_value
from ._base import InvariantViolation as InvariantViolation  # every family module exports it
from .strategies import Labelled

Implementation = Callable[..., Trace]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


def textbook_perceptron(X: Any, y: Any, epochs: int) -> tuple[list[int], list[Fraction]]:
    """Rosenblatt's Perceptron as every textbook writes it, exact: w = 0; on y w.x <= 0,
    w += y x.  Returns the mistakes and the final w."""
    rows = [[Fraction(v) for v in row] for row in np.asarray(X).tolist()]
    w = [Fraction(0)] * len(rows[0])
    mistakes = []
    for t in range(epochs * len(rows)):
        x, label = rows[t % len(rows)], int(y[t % len(rows)])
        if label * sum(a * b for a, b in zip(w, x)) <= 0:
            mistakes.append(t)
            w = [a + label * b for a, b in zip(w, x)]
    return mistakes, w


def check_classic(impl: Implementation, seq: Labelled, epochs: int = 2) -> Trace:
    """tau = lam = 0, no alpha-bound, no bias: the classic Perceptron, trial for trial, and
    updates == mistakes (a mistake-driven algorithm)."""
    trace = impl(seq.X, seq.y, epochs=epochs)
    mistakes, w = textbook_perceptron(seq.X, seq.y, epochs)
    _require(trace.mistakes == mistakes,
             f"mistakes {trace.mistakes} differ from the textbook Perceptron's {mistakes}")
    _require(trace.updates == trace.mistakes, "updates differ from mistakes with tau = 0")
    if "w" in trace.final:
        got = [Fraction(v) for v in trace.final["w"]]
        scale = max([abs(v) for v in w] + [Fraction(1)])
        _require(all(abs(a - b) <= scale * Fraction(1, 2**40) for a, b in zip(got, w)),
                 f"final w {trace.final['w']} differs from the textbook's")
    return trace


def check_novikoff(impl: Implementation, seq: Labelled, epochs: int = 3,
                   **params: Any) -> Trace:
    """On data separated through the origin with margin gamma by a unit u, the homogeneous
    Perceptron (b0 = C = 0, tau = 0, any eta) makes at most (R / gamma)^2 mistakes in all,
    R = max ||x|| (Novikoff 1962; Khardon & Wachman sec. 2.1; slides, Theorem 1)."""
    if seq.u is None or seq.margin is None:
        raise InvariantViolation("needs separable data")
    trace = impl(seq.X, seq.y, epochs=epochs, **params)
    # The margin was measured in float64: take it 1e-12 smaller, R 1e-12 larger.
    gamma = seq.margin - 1e-12
    R = float(np.max(np.linalg.norm(seq.X, axis=1))) + 1e-12
    bound = math.floor((R / gamma) ** 2)
    _require(len(trace.mistakes) <= bound,
             f"{len(trace.mistakes)} mistakes exceed Novikoff's bound (R/gamma)^2 = {bound}")
    return trace


def check_bookkeeping(trace: Trace, seq: Labelled, params: dict[str, Any]) -> None:
    """What the options imply about mistakes, updates and the dual coefficients."""
    T = len(seq.y)
    alpha = plain_value(trace.final["alpha"])
    _require(sum(alpha) == len(trace.updates), "sum(alpha) != number of updates")
    counts = np.bincount(np.asarray(trace.updates, dtype=np.int64) % T, minlength=T)
    _require(counts.tolist() == list(alpha), "alpha does not count each example's updates")
    bound = params.get("alpha_bound")
    if bound is not None:
        _require(max(alpha) <= bound, f"an example updated more than alpha_bound = {bound}")
    else:
        _require(set(trace.mistakes) <= set(trace.updates),
                 "a mistake without an update, with no alpha-bound")
    if not params.get("tau") and bound is None:
        _require(trace.updates == trace.mistakes, "updates != mistakes with tau = 0")
    votes = plain_value(trace.final["votes"])
    _require(len(votes) == len(trace.updates) + 1, "one vote per hypothesis h_0 .. h_K")
    # Khardon & Wachman's Figure 2: h_k votes on the trials in force with y score > tau, never
    # on an update nor on a mistake (a mistake that does not update was blocked by the bound)
    edges = np.concatenate([[-1], np.asarray(trace.updates, dtype=np.int64),
                            [T * trace.epochs]])
    free = np.diff(edges) - 1 - np.diff(np.searchsorted(
        np.setdiff1d(np.asarray(trace.mistakes, dtype=np.int64), trace.updates), edges))
    _require(all(0 <= c <= f for c, f in zip(votes, free.tolist())),
             "a vote counts an update or a mistake (or is negative)")
    if not params.get("tau") or bound is None:  # blocked: only mistakes (tau = 0) / none
        _require(list(votes) == free.tolist(), "the votes must count exactly the trials that "
                 "are neither updates nor mistakes")
    _require(trace.final["averaged"]["total_votes"] == sum(votes), "total_votes != sum(votes)")


def check_longest_survivor(trace: Trace) -> None:
    """The longest survivor has the largest vote (the earliest on a tie), and so is the last
    hypothesis once the last has outlived every earlier one."""
    votes = plain_value(trace.final["votes"])
    index = trace.final["longest_survivor"]["index"]
    _require(votes[index] == max(votes) and index == votes.index(max(votes)),
             f"longest survivor {index} is not the earliest hypothesis with the largest vote")
    if votes[-1] > max(votes[:-1], default=-1):
        _require(index == len(votes) - 1,
                 "the last hypothesis outlived every earlier one but is not the longest")


def check_voted_agrees_with_last(trace: Trace, seq: Labelled, X_test: np.ndarray) -> int:
    """Where the last hypothesis' vote exceeds the sum of all the others', the voted
    prediction equals the last one's (on every x the last hypothesis decides, score != 0).
    Returns how many test points the check covered (0 if the votes do not qualify)."""
    votes = plain_value(trace.final["votes"])
    if votes[-1] <= sum(votes[:-1]):
        return 0
    last = predict(trace, seq.X, seq.y, X_test, "last")
    voted = predict(trace, seq.X, seq.y, X_test, "voted")
    for i, (a, b) in enumerate(zip(last, voted)):
        _require(a == 0 or a == b, f"test point {i}: voted predicts {b}, last predicts {a}")
    return len(last)
