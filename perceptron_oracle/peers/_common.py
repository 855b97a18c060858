"""What the library adapters share: the parameters a library Perceptron can take, and the
trace they return.

The plain Perceptron of Khardon & Wachman (2007), Figure 1, with the bias b = -theta, is

    score_t = w.x_t + b;   a mistake and an update iff y_t score_t <= 0
    update:  w += eta y_t x_t,  b += eta y_t C,   starting from w = 0, b = b0

(Rosenblatt's rule when C = 1).  A library's SGD Perceptron has a learning rate (eta), an
intercept updated with the same step (C = 1) or no intercept at all (C = 0), and perhaps a
settable initial intercept (b0).  Everything else of the general Perceptron (tau, lam,
alpha_bound, other C, non-linear kernels) has no counterpart, and the adapters say so with
NotImplementedError.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..trace import FORMAT, encode_value

INSTALL_HINT = 'pip install "perceptron-oracle[peers]"'

KNOWN_PARAMS = ("eta", "b0", "C", "tau", "lam", "alpha_bound")


class PeerLibraryMissing(ImportError):
    """The library an adapter drives is not installed (one line: what to install)."""


def missing(library: str) -> PeerLibraryMissing:
    return PeerLibraryMissing(f"{library} is not installed; install it with {INSTALL_HINT}")


def supported_params(algorithm: str, kernel: str, params: dict[str, Any], library: str,
                     settable_b0: bool) -> tuple[float, float, bool]:
    """(eta, b0, fit_intercept) for a case the library can run; NotImplementedError with
    the reason otherwise."""
    if algorithm != "perceptron":
        raise NotImplementedError(f"{library} has no {algorithm}")
    if kernel != "linear":
        raise NotImplementedError("non-linear kernel: the Perceptron is linear only")
    unknown = sorted(set(params) - set(KNOWN_PARAMS))
    if unknown:
        raise NotImplementedError(f"{library} has no parameter {', '.join(unknown)}")
    eta = Fraction(params.get("eta", 1))
    b0 = Fraction(params.get("b0", 0))
    C = Fraction(params.get("C", 0))
    if Fraction(params.get("tau", 0)) != 0:
        raise NotImplementedError("tau > 0: no margin threshold (the loss's threshold is 0)")
    if Fraction(params.get("lam", 0)) != 0:
        raise NotImplementedError("lam > 0: no lambda-trick")
    if params.get("alpha_bound") is not None:
        raise NotImplementedError("alpha_bound: no per-example update bound")
    if C not in (0, 1):
        raise NotImplementedError("C other than 0 or 1: the intercept is updated with the "
                                  "weights' step or not at all")
    if b0 != 0 and not settable_b0:
        raise NotImplementedError("b0 != 0: no initial intercept")
    return float(eta), float(b0), C == 1


@dataclass(frozen=True)
class Steps:
    """A library model as :func:`drive` calls it, for example j: ``score(j)``, ``predict(j)``
    (-1 or +1), ``learn(j)`` (one learning step), and ``state()``: its (w, b) as they stand
    (copies, compared before and after a step)."""

    score: Callable[[int], float]
    predict: Callable[[int], int]
    learn: Callable[[int], Any]
    state: Callable[[], tuple[Any, float]]


def drive(y: Any, epochs: int, model: Steps) -> tuple[list[int], list[int], list[float]]:
    """The trials of ``epochs`` passes over the examples, one library call at a time: on
    trial t (example j = t mod T) the model's score, a mistake where its prediction
    differs from y_j, then its learning step, an update where that step changed its state
    (from outside, an update is seen only as a change of w or b).  Returns (mistakes,
    updates, scores)."""
    T = len(y)
    mistakes: list[int] = []
    updates: list[int] = []
    scores: list[float] = []
    for t in range(epochs * T):
        j = t % T
        scores.append(float(model.score(j)))
        if model.predict(j) != int(y[j]):
            mistakes.append(t)
        before = model.state()
        model.learn(j)
        if not all(np.array_equal(a, b) for a, b in zip(before, model.state())):
            updates.append(t)
    return mistakes, updates, scores


@dataclass(frozen=True)
class Adapter:
    """A library's Perceptron as an outside implementation: the library's name and
    version, what it predicts at a zero score (``tie_rule``, quoted by the diagnosis), and
    ``start(X, y, eta, b0, fit_intercept)``, its model from w = 0, b = b0."""

    library: str
    version: str
    tie_rule: str
    start: Callable[[np.ndarray, np.ndarray, float, float, bool], Steps]

    def run(self, algorithm: str, X: Any, y: Any, *, epochs: int, kernel: str,
            params: dict[str, Any]) -> dict[str, Any]:
        """``verify``'s protocol for an outside implementation: the trace of the
        library's Perceptron on ``epochs`` passes of (X, y) (:func:`drive`; no warning of
        the library reaches the report), or NotImplementedError for a case the library
        cannot express (:func:`supported_params`)."""
        eta, b0, fit_intercept = supported_params(algorithm, kernel, params, self.library,
                                                  settable_b0=True)
        X = np.ascontiguousarray(X, dtype=np.float64)
        model = self.start(X, y, eta, b0, fit_intercept)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mistakes, updates, scores = drive(y, epochs, model)
        w, b = model.state()
        return make_trace(X.shape[0], epochs, params, mistakes, updates, w, b, scores)


def make_trace(n_examples: int, epochs: int, params: dict[str, Any], mistakes: list[int],
               updates: list[int], w: Any, b: float, scores: list[float]) -> dict[str, Any]:
    """The run as a ``perceptron-oracle/trace@1`` dict (primal form: w and b)."""
    return {
        "format": FORMAT,
        "algorithm": "perceptron",
        "form": "primal",
        "kernel": "linear",
        "params": encode_value(dict(params)),
        "n_examples": n_examples,
        "epochs": epochs,
        "mistakes": mistakes,
        "updates": updates,
        "final": {"w": [float(v) for v in np.ravel(w)], "b": float(b)},
        "scores": [float(s) for s in scores],
    }
