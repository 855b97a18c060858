"""The toy family's fast forms in ``verify``'s protocol, as an outside implementation is
called: ``run(algorithm, X, y, *, epochs, kernel, params) -> Trace``."""

from __future__ import annotations

from typing import Any

from . import fast


def run(algorithm: str, X: Any, y: Any, *, epochs: int, kernel: str,
        params: dict[str, Any]) -> Any:
    if algorithm != "toy_margin":
        raise NotImplementedError(f"the toy implements toy_margin only, not {algorithm}")
    return fast.dual(X, y, epochs=epochs, kernel=kernel, **params)
