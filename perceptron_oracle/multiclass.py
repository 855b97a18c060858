"""One-vs-rest multiclass for any registered algorithm (Khardon & Wachman 2007, section 2.7;
SPEC.md "One-vs-rest"): the Perceptron's K learners in one shared pass
(``fast.multiclass.PerceptronOvR``), every other family as K independent fast runs through
the registry.  Above the registry, as it names algorithms; ``fast.multiclass`` holds the
shared pass and ``relabel``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .data import validate
from .fast import _compiled
from .fast.multiclass import PerceptronOvR, relabel
from .kernels import KERNEL_CACHE_BYTES, parse_kernel
from .registry import get, run
from .trace import Trace

__all__ = ["one_vs_rest"]


def one_vs_rest(algorithm: str, X: Any, labels: Any, *, form: str | None = None,
                kernel: Any = "linear", epochs: int = 1, classes: Any = None,
                engine: str | None = None, **params: Any) -> tuple[np.ndarray, list[Trace]]:
    """One-vs-rest training of ``algorithm`` on (X, labels): (classes, one trace per class).

    The trace of class l is trial for trial the binary fast run of ``algorithm`` on
    (X, +1 where the label is l, -1 elsewhere).  ``perceptron`` trains its K learners in one
    shared pass (:class:`PerceptronOvR`; ``engine`` as there, default "auto"), except the
    numpy engine's dual form when its kernel rows (one row of T values per support example)
    could exceed ``KERNEL_CACHE_BYTES``; every other algorithm, and that case, runs K
    independent fast runs (``registry.run``, given ``engine`` when it is not None).  Predict
    with the label of the largest score.
    """
    classes, Y = relabel(labels, classes)
    algo = get(algorithm)
    form = form or algo.default_form(kernel, params, sparse=sp.issparse(X))
    shared = algorithm == "perceptron"
    if shared and form == "dual" and 8 * X.shape[0] * X.shape[0] > KERNEL_CACHE_BYTES:
        shared = _compiled.choose(engine or "auto", compiled_serves=not sp.issparse(X),
                                  kernel=parse_kernel(kernel)) == "numba"
    if not shared:
        return classes, [run(algorithm, X, Y[:, k], impl="fast", form=form, kernel=kernel,
                             epochs=epochs, engine=engine, **params)
                         for k in range(Y.shape[1])]
    X, _ = validate(X, Y[:, 0])
    model = PerceptronOvR(X.shape[1], Y.shape[1], form=form, kernel=kernel,
                          engine=engine or "auto", **params)
    model.train(X, Y, epochs)
    return classes, model.traces()
