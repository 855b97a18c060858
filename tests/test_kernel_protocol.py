"""The kernel protocol: a kernel defined outside the package (here, in this test) is one small
class; registered, it is read by ``parse_kernel`` and runs through the reference and every
fast dual form that takes any kernel, the fast traces agreeing with the reference's."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import pytest

from perceptron_oracle import kernels, registry
from perceptron_oracle.compare import compare
from perceptron_oracle.errors import KernelSpecError, ParamError
from perceptron_oracle.kernels import (
    KERNELS,
    LINEAR,
    GaussianKernel,
    Kernel,
    LinearKernel,
    PolynomialKernel,
    parse_kernel,
    registered_kernel,
)
from perceptron_oracle.numbers import to_fraction


@dataclass(frozen=True)
class ScaledLinear(Kernel):
    """k(x, z) = factor x.z (factor > 0): rational, with no compiled evaluation."""

    factor: Fraction = Fraction(1)

    name: ClassVar[str] = "scaled"
    spec_pattern: ClassVar[str] = f"scaled:factor={kernels.NONNEGATIVE_PATTERN}"
    propagates_nonfinite: ClassVar[bool] = True

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> Kernel:
        factor = to_fraction(fields.get("factor", "1"))
        if factor <= 0:
            raise KernelSpecError("scaled factor must be > 0")
        return cls(factor=factor)

    def exact(self, x: list[Fraction], z: list[Fraction], ctx: Any = None) -> Any:
        return self.factor * sum((a * b for a, b in zip(x, z)), Fraction(0))

    def exact_of_dot(self, dot: Fraction) -> Fraction | None:
        return self.factor * dot

    def integer_form(self, dX: int) -> tuple[int, Callable[[int], int] | None]:
        num = self.factor.numerator
        return self.factor.denominator * dX * dX, lambda dot: num * dot

    def magnitude(self, x: list[float], z: list[float]) -> float:
        return float(self.factor) * sum(abs(a * b) for a, b in zip(x, z))

    @property
    def depth(self) -> int:
        return 2  # the dot product's roundings, then the product with the factor

    def from_dots(self, dots: Any, sq_a: Any, sq_b: Any) -> Any:
        return float(self.factor) * dots

    def value(self, dot: float, sq_x: float, sq_z: float) -> float:
        return float(self.factor) * dot


SPEC = "scaled:factor=3/2"


def _data(T: int = 14, n: int = 3, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(T, n)) * 8) / 8
    y = np.where(X @ np.array([1.0, -0.5, 0.25][:n]) + 0.3 * rng.normal(size=T) > 0, 1, -1)
    return X, y


def test_the_built_in_kernels_are_one_class_each() -> None:
    assert isinstance(LINEAR, LinearKernel) and parse_kernel("linear") is LINEAR
    assert parse_kernel("poly:degree=3,coef0=1/2,gamma=0.5") == PolynomialKernel(
        3, Fraction(1, 2), Fraction(1, 2))
    assert parse_kernel("rbf:gamma=0.5") == GaussianKernel(Fraction(1, 2))
    assert len({parse_kernel("rbf:gamma=1/2"), parse_kernel(" rbf:gamma=0.5 ")}) == 1
    assert {name: KERNELS[name] for name in ("linear", "poly", "rbf")} == {
        "linear": LinearKernel, "poly": PolynomialKernel, "rbf": GaussianKernel}
    pattern = re.compile(kernels.spec_pattern())
    for spec in ("linear", "poly:degree=2,coef0=1,gamma=1", "poly:degree=3,coef0=-1/2,gamma=2",
                 "rbf:gamma=1/2"):
        assert parse_kernel(spec).spec == spec and pattern.fullmatch(spec)


def test_a_registered_kernel_is_read_and_removed_afterwards() -> None:
    with registered_kernel(ScaledLinear):
        kern = parse_kernel(SPEC)
        assert kern == ScaledLinear(Fraction(3, 2)) == parse_kernel("scaled:factor=1.5")
        assert kern.spec == SPEC and kern.compiled is None and not kern.is_linear
        assert re.fullmatch(kernels.spec_pattern(), SPEC)
        with pytest.raises(KernelSpecError, match="scaled factor must be > 0"):
            parse_kernel("scaled:factor=-1")
        with pytest.raises(KernelSpecError, match="kernel scaled has no parameter gamma"):
            parse_kernel("scaled:gamma=1")
        A = np.array([[1.0, 2.0], [0.5, -1.0]])
        assert np.array_equal(kern.matrix(A, A), 1.5 * (A @ A.T))
        assert np.array_equal(kern.diagonal(A), 1.5 * np.einsum("ij,ij->i", A, A))
    assert "scaled" not in KERNELS
    with pytest.raises(KernelSpecError) as info:
        parse_kernel(SPEC)
    message = str(info.value)
    assert "\n" not in message and message.startswith("unknown kernel 'scaled'")


def _kernel_forms() -> list[tuple[str, str]]:
    return [(name, form) for name, algo in registry.ALGORITHMS.items()
            for form in algo.kernel_forms]


@pytest.mark.parametrize("algorithm,form", _kernel_forms())
def test_every_kernel_form_runs_the_registered_kernel(algorithm: str, form: str) -> None:
    X, y = _data()
    with registered_kernel(ScaledLinear):
        expected = registry.run(algorithm, X, y, epochs=2, kernel=SPEC)
        assert expected.kernel == SPEC
        engines: list[str | None] = (["numpy", "auto"]
                                     if registry.get(algorithm).form(form).engine else [None])
        for engine in engines:
            actual = registry.run(algorithm, X, y, impl="fast", form=form, epochs=2,
                                  kernel=SPEC, engine=engine)
            result = compare(expected, actual, X)
            assert result.ok, f"{algorithm} {form} engine {engine}: {result.describe()}"
            assert actual.mistakes  # the run is not trivial


@pytest.mark.parametrize("algorithm,form", [(a, f) for a, f in _kernel_forms()
                                            if registry.get(a).form(f).engine])
def test_engine_numba_is_one_param_error_for_a_kernel_with_no_compiled_form(
        algorithm: str, form: str) -> None:
    X, y = _data()
    with registered_kernel(ScaledLinear):
        with pytest.raises(ParamError) as info:
            registry.run(algorithm, X, y, impl="fast", form=form, kernel=SPEC, engine="numba")
    message = str(info.value)
    assert "\n" not in message and "has no compiled evaluation" in message and SPEC in message
