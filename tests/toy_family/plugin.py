"""``pytest -p toy_family.plugin``: the toy family and kernel registered for a whole run."""

from __future__ import annotations

from typing import Any

import pytest

from perceptron_oracle import kernels, registry

from .declaration import FAMILY, ToyKernel


@pytest.hookimpl(tryfirst=True)   # before the oracle's plugin starts its sandbox worker
def pytest_configure(config: Any) -> None:
    if "toy_margin" not in registry.ALGORITHMS:
        kernels.register_kernel(ToyKernel)
        registry.register_family(FAMILY)
