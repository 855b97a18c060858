"""perceptron-oracle: exact reference, fast forms, invariants and golden files for
perceptron-family online learners.

``run(algorithm, X, y, *, impl, form, epochs, kernel, **params) -> Trace`` is the one entry
point; ``verify_on(data, impl, *, algorithm, ...)`` judges an implementation on the user's
data, every trial; ``perceptron_oracle.reference``, ``.exact``, ``.fast`` and
``.properties`` hold the parts.  This
module imports nothing heavy, so ``perceptron_oracle.reference`` stays free of numpy.
"""

from __future__ import annotations

from typing import Any

from .version import __version__

__all__ = ["run", "verify_on", "Trace", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "run":
        from .registry import run

        return run
    if name == "verify_on":
        from .verify import verify_on

        return verify_on
    if name == "Trace":
        from .trace import Trace

        return Trace
    raise AttributeError(f"module 'perceptron_oracle' has no attribute {name!r}")
