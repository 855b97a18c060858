"""The p-norm Perceptron (Grove, Littlestone, Schuurmans; Gentile) in float64: form ``primal``.

Follows ``reference.pnorm_perceptron`` trial for trial (SPEC.md): on a mistake v += y x, and the
prediction is sign(g(v) . x) with g(v) = grad ||v||_p^2 / 2 (section 2 item 3 of the Higher-Order
Perceptron paper with B = I).  The state changes only at mistakes, so blocks of trials are
scored with one product X[block] @ g(v).  Linear kernel only; X dense or CSR.

``engine="auto"`` (the default) runs the compiled per-trial loop of ``fast._compiled`` when
numba is installed: one dot product per trial, v += y x and w = g(v) recomputed in place on a
mistake (O(n), passes that vectorise: ``fast._numba.link_inverse``); ``engine="numpy"`` the
block-ahead driver.  Under ``forced_updates`` the numpy path runs whatever was asked.  The
compiled run does not sum dense X for NaN or infinity beforehand: a row holding one scores
NaN or infinity whatever w is, so the loop's scores are that check, reported as validate()
reports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import check_finite_rows, validate
from ..errors import ParamError
from ..kernels import parse_kernel
from ..pnorm_float import link_inverse
from ..reference.common import check_epochs
from ..reference.pnorm_perceptron import PARAMS
from ..trace import Trace
from . import _compiled
from ._slots import PNORM_BAD_SCORE, PNORM_MISTAKES, PNORM_STATE_SIZE
from .driver import finite_final, run_blocks


class _Primal:
    def __init__(self, X: Any, y: np.ndarray, p: float):
        self.X, self.y, self.p = X, y, p
        self.v = np.zeros(X.shape[1])
        self.w = np.zeros(X.shape[1])

    def scores(self, start: int, stop: int) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            s = np.asarray(self.X[start:stop] @ self.w, dtype=np.float64).ravel()
        if not np.isfinite(s).all() and not sp.issparse(self.X):
            check_finite_rows(self.X[start:stop])
        return s

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        return margins <= 0

    def update(self, j: int) -> None:
        label = float(self.y[j])
        if sp.issparse(self.X):
            lo, hi = self.X.indptr[j], self.X.indptr[j + 1]
            self.v[self.X.indices[lo:hi]] += label * self.X.data[lo:hi]
        else:
            self.v += label * self.X[j]
        self.w = link_inverse(self.v, self.p)


def primal(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
           record_scores: bool = False, engine: str = "auto") -> Trace:
    """Primal form: v and w = g(v) in float64; ``engine`` as in the module docstring."""
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(p=p))
    if not kern.is_linear:
        raise ParamError(f"the primal form takes the linear kernel only, not {kern.spec}")
    chosen = _compiled.choose(engine)
    # the compiled loop scores every row of dense X first: that is its NaN/infinity check
    X, y = validate(X, y, check_finite=chosen != "numba" or sp.issparse(X))
    epochs = check_epochs(epochs)
    model = _Primal(X, y, float(par.p))
    if chosen == "numba":
        mistakes, updates, scores = _run_compiled(model, epochs, record_scores)
    else:
        result = run_blocks(model, y, epochs, record_scores)
        mistakes, updates, scores = result.mistakes, result.updates, result.scores
    return Trace(algorithm="pnorm_perceptron", form="primal", kernel=kern.spec,
                 params=PARAMS.as_dict(par), n_examples=y.shape[0], epochs=epochs,
                 mistakes=mistakes, updates=updates, final=finite_final(
                     {"w": model.w.copy(), "v": model.v.copy()}, updates, y.shape[0]),
                 scores=scores)


def _run_compiled(model: _Primal, epochs: int, record_scores: bool
                  ) -> tuple[list[int], list[int], list[float] | None]:
    T = model.y.shape[0]
    trials = epochs * T
    mistakes = np.empty(trials, dtype=np.int64)
    scores = np.zeros(trials if record_scores else 1)
    state = np.zeros(PNORM_STATE_SIZE)
    dense, indptr, indices, data, sparse = _compiled.csr_parts(model.X)
    bad = _compiled.pnorm_loops().pnorm_primal(dense, indptr, indices, data, sparse,
                                               model.y.astype(np.float64), epochs, model.p,
                                               model.v, model.w, state, mistakes, scores,
                                               record_scores)
    # a NaN or infinity in X named first
    _compiled.raise_if_bad(bad, T, state[PNORM_BAD_SCORE], model.X)
    made = mistakes[:int(state[PNORM_MISTAKES])].tolist()
    return made, list(made), scores.tolist() if record_scores else None
