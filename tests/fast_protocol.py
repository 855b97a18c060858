"""The project's own fast forms in ``verify``'s protocol, for the plugin and check-library
tests: ``run(algorithm, X, y, *, epochs, kernel, params) -> Trace`` with the default fast
form that takes the kernel and parameters; and what the compiled-engine tests share."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event

from perceptron_oracle.compare import compare
from perceptron_oracle.fast import _compiled
from perceptron_oracle.registry import run as run_registered

needs_numba = pytest.mark.skipif(not _compiled.available(),
                                 reason="numba is not installed: no compiled engine to test")
ENGINES = ("numpy", "numba")
#: The share of the profile's examples each engine item draws (the reference dominates).
SHARE = 8
KERNEL_EXAMPLES = 8


def check_against(expected: Any, actual: Any, X: Any, label: str) -> None:
    """``actual`` agrees with the reference's ``expected`` (a divergence at a fragile trial
    is accepted, and counted as a hypothesis event)."""
    result = compare(expected, actual, X)
    if result.excused:
        event(f"{label} diverged at a fragile trial (accepted)")
    assert result.ok, f"{label}: {result.describe()}"


def run(algorithm: str, X: Any, y: Any, *, epochs: int, kernel: str,
        params: dict[str, Any]) -> Any:
    return run_registered(algorithm, X, y, impl="fast", epochs=epochs, kernel=kernel,
                          **params)
