"""The toy family's one declaration, and the toy kernel: everything the registry's consumers
read of them.  ``TOY_KERNEL`` is a rational kernel the package does not have,
k(x, z) = (x.z)^2 + x.z (``ToyKernel``), used by the toy family's golden cases, long runs
and benchmark case, so that a consumer that reads kernels from a closed list fails here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from hypothesis import strategies as st

from perceptron_oracle import budget
from perceptron_oracle.benchmark_cases import Benchmark
from perceptron_oracle.family import Estimator, Family, Form, LongRun
from perceptron_oracle.golden_specs import CaseSpec, FileSpec, GroupSpec
from perceptron_oracle.kernels import Kernel
from perceptron_oracle.properties._base import InvariantViolation
from perceptron_oracle.properties.checks import Check, Data, call
from perceptron_oracle.rounding import power_or_inf

from . import fast, reference


@dataclass(frozen=True)
class ToyKernel(Kernel):
    """k(x, z) = (x.z)^2 + x.z: a sum of two kernels, rational."""

    name: ClassVar[str] = "toysquare"
    spec_pattern: ClassVar[str] = "toysquare"
    examples: ClassVar[tuple[str, ...]] = ("toysquare",)

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> ToyKernel:
        return cls()

    def exact(self, x: list[Fraction], z: list[Fraction], ctx: Any = None) -> Fraction:
        dot = sum((a * b for a, b in zip(x, z)), Fraction(0))
        return dot * dot + dot

    def integer_form(self, dX: int) -> tuple[int, Callable[[int], int] | None]:
        """x = a / dX: k = ((a.b)^2 + dX^2 a.b) / dX^4."""
        return dX ** 4, lambda dot: dot * dot + dX * dX * dot

    def magnitude(self, x: list[float], z: list[float]) -> float:
        dot = sum(abs(a * b) for a, b in zip(x, z))
        return power_or_inf(dot, 2) + dot

    @property
    def depth(self) -> int:
        return 2

    def from_dots(self, dots: Any, sq_a: Any, sq_b: Any) -> Any:
        return dots * dots + dots


TOY_KERNEL = "toysquare"


def _toy_data(T: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """T rows on the grid 2^-4 in [-1, 1]^n, labels of a fixed hyperplane, one in ten
    flipped."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-16, 17, size=(T, n)) / 16
    y = np.where(X @ (np.arange(n) - n / 2 + 0.5) > 0, 1, -1)
    return X, np.where(rng.random(T) < 0.1, -y, y)


def _benchmark_data(size: float) -> tuple[np.ndarray, np.ndarray]:
    return _toy_data(max(50, int(2000 * size)), 5, 3)


def golden_file() -> FileSpec:
    cases = [CaseSpec(f"grid data, seed {seed}", *_toy_data(12, 3, seed), epochs=2)
             for seed in (1, 2)]
    return FileSpec("toy_margin", ["The toy family of tests/toy_family."], [
        GroupSpec("theta = 1/4, linear", "toy_margin", {}, cases),
        GroupSpec("theta = 1/2, the toy kernel", "toy_margin", {"theta": Fraction(1, 2)},
                  cases, kernel=TOY_KERNEL)])


@st.composite
def _params(draw: Any, p2_only: bool = False) -> dict[str, Any]:
    return {"theta": draw(st.sampled_from([Fraction(0), Fraction(1, 4), Fraction(2)]))}


@st.composite
def _draw(draw: Any) -> Data:
    X, y = _toy_data(draw(st.integers(2, 10)), 2, draw(st.integers(0, 1000)))
    return Data(X, y, draw(_params()), draw(st.integers(1, 3)), name="toy grid")


def _mistakes_are_updates(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    if not set(trace.mistakes) <= set(trace.updates):
        raise InvariantViolation("a mistake that is not an update (theta >= 0)")


def _checks() -> list[Check]:
    return [Check("mistakes_are_updates", "toy_margin", _mistakes_are_updates, _draw(), (),
                  "every mistake is an update when theta >= 0", "the toy family's README",
                  10)]


FAMILY = Family(
    name="toy_margin",
    reference=reference,
    fast_forms=(Form("primal", fast.primal, sparse=False),
                Form("dual", fast.dual, kernels="any", sparse=False)),
    params_strategy=_params,
    checks=_checks,
    golden=golden_file,
    long_runs=(LongRun(examples=40, noise=0.1), LongRun(TOY_KERNEL, examples=20)),
    benchmarks=(Benchmark("toy dual toysquare", "~20%", _benchmark_data, "dual",
                          kernel=TOY_KERNEL),),
    cost=budget.CostModel(2e-5, budget.perceptron_work),
    estimator=Estimator("ToyMarginPerceptron", "The toy margin Perceptron."),
)
