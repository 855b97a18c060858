"""Deliberately wrong ALMA_p, each with one planted bug found in public implementations,
callable by ``verify --impl`` (``wrong_alma:<name>``).

Each mutation patches one building block of ``reference.alma`` for the duration of a call,
so the rest of the algorithm is the reference's own.  ``planted(name)`` is the patch as a
context manager; ``MUTATIONS[name]`` describes it; ``<name>(algorithm, X, y, *, epochs,
kernel, params) -> Trace`` is the protocol of ``tests/wrong_perceptrons.py`` (``correct``
is the unpatched reference).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from perceptron_oracle.reference import alma as alma_ref

MUTATIONS = {
    "": "none: the reference itself",
    "p_ignored": "p ignored by the projection: w'/max{1, ||w'||_2} whatever p",
    "pnorm_no_abs": "the p-norm without absolute values: (sum_i x_i^p)^(1/p), so odd and "
                    "fractional powers of negative coordinates keep their sign",
    "k_not_sqrt": "the learning rate eta_k = C/(sqrt(p-1) k) (k for sqrt(k))",
    "bias_dropped": "the score leaves out the last coordinate (the appended bias "
                    "coordinate -R of the (x, -R) reduction)",
}


def _project_2norm(theta: Any, p: Any, ctx: Any) -> Any:
    """w' = f^-1(th') divided by max{1, ||w'||_2}: th' by the same factor (f is
    homogeneous)."""
    N = _ORIGINAL_PNORM(alma_ref.link_inverse(theta, p, ctx), 2, ctx)
    if N <= 1:
        return list(theta), ctx.mpf(1)
    return [t / N for t in theta], N


def _pnorm_no_abs(values: Any, p: Any, ctx: Any) -> Any:
    if p == 2:
        return _ORIGINAL_PNORM(values, p, ctx)
    pm = alma_ref.to_mpf(p, ctx)
    total = ctx.mpf(0)
    for v in values:
        if v:
            m = alma_ref.to_mpf(v, ctx)
            total += ctx.sign(m) * ctx.power(abs(m), pm)   # x_i^p keeping x_i's sign
    return ctx.power(abs(total), 1 / pm) if total else ctx.mpf(0)


def _learning_rate_k(k: int, p: Any, C: Any, ctx: Any) -> Any:
    return C / (ctx.sqrt(alma_ref.to_mpf(p - 1, ctx)) * k)


def _score_without_last(w: Any, xhat: Any) -> Any:
    return _ORIGINAL_SCORE(w[:-1], xhat[:-1]) if len(w) > 1 else 0 * w[0]


_ORIGINAL_PROJECT = alma_ref.project
_ORIGINAL_PNORM = alma_ref.pnorm
_ORIGINAL_SCORE = alma_ref.linear_score

_PATCHES: dict[str, list[tuple[Any, str, Any]]] = {
    "": [],
    "p_ignored": [(alma_ref, "project", _project_2norm)],
    "pnorm_no_abs": [(alma_ref, "pnorm", _pnorm_no_abs)],
    "k_not_sqrt": [(alma_ref, "learning_rate", _learning_rate_k)],
    "bias_dropped": [(alma_ref, "linear_score", _score_without_last)],
}


@contextlib.contextmanager
def planted(mutation: str) -> Iterator[None]:
    """The reference with ``mutation``'s bug, inside the block."""
    saved = []
    for owner, name, value in _PATCHES[mutation]:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def wrong(mutation: str, algorithm: str, X: Any, y: Any, *, epochs: int, kernel: Any,
          params: dict[str, Any]) -> Any:
    with planted(mutation):
        return alma_ref.alma(X, y, epochs=epochs, kernel=kernel, **params)


for _name in MUTATIONS:
    globals()[_name or "correct"] = functools.partial(wrong, _name)
