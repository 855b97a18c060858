"""Every algorithm, its implementations and its forms, under their canonical names.

One protocol for all: an implementation is a callable ``f(X, y, *, epochs, kernel, <params>,
record_scores) -> Trace``.  Tests, the command line and ``run`` find implementations here, so a
new family only adds an :class:`Algorithm` to ``ALGORITHMS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .errors import ParamError, UnknownAlgorithmError
from .fast import alma as alma_fast
from .fast import higher_order as higher_order_fast
from .fast import perceptron as perceptron_fast
from .fast import pnorm_perceptron as pnorm_perceptron_fast
from .fast import pumma as pumma_fast
from .fast import romma as romma_fast
from .fast import second_order as second_order_fast
from .kernels import parse_kernel
from .params import ParamSchema
from .reference import alma as alma_ref
from .reference import higher_order as higher_order_ref
from .reference import perceptron as perceptron_ref
from .reference import pnorm_perceptron as pnorm_perceptron_ref
from .reference import pumma as pumma_ref
from .reference import romma as romma_ref
from .reference import second_order as second_order_ref
from .trace import Trace

Implementation = Callable[..., Trace]


@dataclass(frozen=True)
class Algorithm:
    name: str
    reference: ModuleType            # the family's module in reference/
    fast: ModuleType                 # the family's module in fast/
    forms: tuple[str, ...]           # the fast forms, the default first
    kernel_forms: tuple[str, ...]    # the forms that take a non-linear kernel
    p2_forms: tuple[str, ...] = ()   # the forms that take p = 2 only (the others: any p)

    @property
    def params(self) -> ParamSchema:
        schema: ParamSchema = self.reference.PARAMS
        return schema

    def final_error_bounds(self, trace: Trace, X: Any) -> dict[str, Any]:
        """How far a float64 run's final state may lie from the exact one of ``trace`` (the
        reference module's ``final_error_bounds``, SPEC.md "Comparing traces")."""
        bounds: dict[str, Any] = self.reference.final_error_bounds(trace, X)
        return bounds

    def implementation(self, impl: str = "reference", form: str | None = None) -> Implementation:
        """The callable for ``impl`` ("reference" or "fast") and, for fast, ``form``."""
        if impl == "reference":
            if form not in (None, "reference"):
                raise UnknownAlgorithmError("the reference has one form, 'reference'")
            reference: Implementation = getattr(self.reference, self.name)
            return reference
        if impl != "fast":
            raise UnknownAlgorithmError(f"unknown implementation {impl!r} (reference, fast)")
        form = form or self.forms[0]
        if form not in self.forms:
            raise UnknownAlgorithmError(f"{self.name} has no fast form {form!r} "
                                        f"(forms: {', '.join(self.forms)})")
        fast: Implementation = getattr(self.fast, form)
        return fast

    def forms_for(self, kernel: Any, params: dict[str, Any]) -> list[str]:
        """The fast forms that take this kernel and these parameters, the default first."""
        forms = self.forms if parse_kernel(kernel).is_linear else self.kernel_forms
        if self.p2_forms and self.params.resolve(params).get("p", 2) != 2:
            forms = tuple(f for f in forms if f not in self.p2_forms)
        return list(forms)

    def default_form(self, kernel: Any, params: dict[str, Any] | None = None) -> str:
        forms = self.forms_for(kernel, params or {})
        if not forms:
            raise ParamError(f"{self.name}: no fast form takes kernel {kernel} with "
                             f"{params}")
        return forms[0]


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a for a in (
        Algorithm("perceptron", perceptron_ref, perceptron_fast, forms=("primal", "dual"),
                  kernel_forms=("dual",)),
        Algorithm("higher_order", higher_order_ref, higher_order_fast,
                  forms=("primal", "dual", "implicit"), kernel_forms=("dual",),
                  p2_forms=("primal", "dual")),
        Algorithm("pnorm_perceptron", pnorm_perceptron_ref, pnorm_perceptron_fast,
                  forms=("primal",), kernel_forms=()),
        Algorithm("second_order", second_order_ref, second_order_fast,
                  forms=("primal", "dual"), kernel_forms=("dual",)),
        Algorithm("romma", romma_ref, romma_fast, forms=("primal", "dual"),
                  kernel_forms=("dual",)),
        Algorithm("pumma", pumma_ref, pumma_fast, forms=("primal", "dual"),
                  kernel_forms=("dual",), p2_forms=("dual",)),
        Algorithm("alma", alma_ref, alma_fast, forms=("primal", "dual"),
                  kernel_forms=("dual",), p2_forms=("dual",)),
    )
}


def get(name: str) -> Algorithm:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UnknownAlgorithmError(f"unknown algorithm {name!r} "
                                    f"(known: {', '.join(ALGORITHMS)})") from None


def implementations() -> list[tuple[str, str, str]]:
    """Every registered (algorithm, implementation, form), the reference first."""
    out = []
    for a in ALGORITHMS.values():
        out.append((a.name, "reference", "reference"))
        out.extend((a.name, "fast", form) for form in a.forms)
    return out


def run(algorithm: str, X: Any, y: Any, *, impl: str = "reference", form: str | None = None,
        epochs: int = 1, kernel: Any = "linear", record_scores: bool = False,
        **params: Any) -> Trace:
    """Run ``algorithm`` on (X, y) and return its trace.

    ``impl`` is "reference" (exact) or "fast"; ``form`` picks a fast form (default: the
    first that takes ``kernel``).  ``params`` are the algorithm's parameters (SPEC.md).
    """
    algo = get(algorithm)
    if impl == "fast" and form is None:
        form = algo.default_form(kernel, params)
    if impl == "fast" and form not in algo.kernel_forms and not parse_kernel(kernel).is_linear:
        raise ParamError(f"{algorithm} form {form} takes the linear kernel only")
    algo.params.resolve(params)  # unknown or bad parameters fail here, before any data work
    return algo.implementation(impl, form)(X, y, epochs=epochs, kernel=kernel,
                                           record_scores=record_scores, **params)
