"""The project's own fast forms in ``verify``'s protocol, for the plugin and check-library
tests: ``run(algorithm, X, y, *, epochs, kernel, params) -> Trace`` with the default fast
form that takes the kernel and parameters."""

from __future__ import annotations

from typing import Any

from perceptron_oracle.registry import run as run_registered


def run(algorithm: str, X: Any, y: Any, *, epochs: int, kernel: str,
        params: dict[str, Any]) -> Any:
    return run_registered(algorithm, X, y, impl="fast", epochs=epochs, kernel=kernel,
                          **params)
