"""perceptron-oracle: exact reference, fast forms, invariants and golden files for
perceptron-family online learners.

``run(algorithm, X, y, *, impl, form, epochs, kernel, **params) -> Trace`` is the one entry
point; ``perceptron_oracle.reference``, ``.fast`` and ``.properties`` hold the parts.  This
module imports nothing heavy, so ``perceptron_oracle.reference`` stays free of numpy.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["run", "Trace", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "run":
        from .registry import run

        return run
    if name == "Trace":
        from .trace import Trace

        return Trace
    raise AttributeError(f"module 'perceptron_oracle' has no attribute {name!r}")
