"""Every algorithm, its implementations and its forms, under their canonical names.

One protocol for all: an implementation is a callable ``f(X, y, *, epochs, kernel, <params>,
record_scores) -> Trace``.  Each fast form is declared once, as a :class:`Form` that says
what it takes (the linear kernel only or any kernel; p = 2 only or any p; CSR input; the
keyword ``engine``), and every consumer reads the forms from here: ``run``, the differential
suite, ``perceptron-oracle check`` and ``verify.forms_for``, the shadow runs of the fragile
rule (``shadows.FastShadowRuns``, handed to the exact runs), ``fuzz``, ``fragility``, the
estimators and the benchmarks.  A new family adds an :class:`Algorithm` to ``ALGORITHMS``;
a new form of a family is one :func:`register_form` call (or one more :class:`Form` in the
family's entry).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import InitVar, dataclass, field
from types import ModuleType
from typing import Any, Literal

import scipy.sparse as sp

from . import budget
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
from .shadows import FastShadowRuns
from .trace import Trace

Implementation = Callable[..., Trace]


@dataclass(frozen=True)
class Form:
    """One fast form of an algorithm and what it takes.

    ``run`` follows the reference's protocol (the same keywords and defaults, plus ``engine``
    when ``engine`` is true).  ``kernels``: "linear" (the linear kernel only) or "any";
    ``p2_only``: the form takes p = 2 only (the others take every p the algorithm takes);
    ``sparse``: X may be a scipy CSR matrix; ``engine``: the form takes the keyword
    ``engine`` ("auto", "numpy" or "numba": the compiled per-trial loop or the block-ahead
    driver, SPEC.md section 7).
    """

    name: str
    run: Implementation
    kernels: Literal["linear", "any"] = "linear"
    p2_only: bool = False
    sparse: bool = True
    engine: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name == "reference":
            raise ValueError(f"a form's name is an identifier other than 'reference', "
                             f"not {self.name!r}")
        if self.kernels not in ("linear", "any"):
            raise ValueError(f"form {self.name}: kernels is 'linear' or 'any', "
                             f"not {self.kernels!r}")
        if not callable(self.run):
            raise ValueError(f"form {self.name}: run is not callable")

    def takes(self, kernel: Any, p: Any = 2, sparse: bool = False) -> bool:
        """Whether this form takes a run with ``kernel``, norm ``p`` and (``sparse``) CSR X."""
        return ((self.kernels == "any" or parse_kernel(kernel).is_linear)
                and (not self.p2_only or p == 2) and (self.sparse or not sparse))


@dataclass(eq=False)
class Algorithm:
    """One family: its reference module (``PARAMS``, the exact run named after the family,
    ``final_error_bounds``) and its fast forms, the default first.  ``forced_tested``: the
    fast run along forced updates that also returns the update test's left side per trial
    (PUMMA's soft margin, ``fast.pumma.forced_run``), for the shadow runs."""

    name: str
    reference: ModuleType            # the family's module in reference/
    fast_forms: InitVar[Iterable[Form]]
    _forms: dict[str, Form] = field(init=False, repr=False)
    forced_tested: Callable[..., tuple[Trace, list[float]]] | None = None

    def __post_init__(self, fast_forms: Iterable[Form]) -> None:
        self._forms = {}
        for form in fast_forms:
            self.add_form(form)

    # -- the declarations, and the views every consumer reads ---------------------------------
    @property
    def declared(self) -> tuple[Form, ...]:
        """The fast forms' declarations, the default first."""
        return tuple(self._forms.values())

    def form(self, name: str) -> Form:
        try:
            return self._forms[name]
        except KeyError:
            raise UnknownAlgorithmError(f"{self.name} has no fast form {name!r} "
                                        f"(forms: {', '.join(self.forms)})") from None

    @property
    def forms(self) -> tuple[str, ...]:
        """The fast forms' names, the default first."""
        return tuple(self._forms)

    @property
    def kernel_forms(self) -> tuple[str, ...]:
        """The forms that take a non-linear kernel."""
        return tuple(f.name for f in self.declared if f.kernels == "any")

    @property
    def p2_forms(self) -> tuple[str, ...]:
        """The forms that take p = 2 only (the others: any p)."""
        return tuple(f.name for f in self.declared if f.p2_only)

    @property
    def engine_forms(self) -> tuple[str, ...]:
        """The forms that take the keyword ``engine``."""
        return tuple(f.name for f in self.declared if f.engine)

    def add_form(self, form: Form) -> None:
        if form.name in self._forms:
            raise ValueError(f"{self.name} already has a fast form {form.name!r}")
        self._forms[form.name] = form

    def remove_form(self, name: str) -> Form:
        form = self.form(name)
        del self._forms[name]
        return form

    @property
    def params(self) -> ParamSchema:
        schema: ParamSchema = self.reference.PARAMS
        return schema

    def final_error_bounds(self, trace: Trace, X: Any) -> dict[str, Any]:
        """How far a float64 run's final state may lie from the exact one of ``trace`` (the
        reference module's ``final_error_bounds``, SPEC.md "Comparing traces")."""
        bounds: dict[str, Any] = self.reference.final_error_bounds(trace, X)
        return bounds

    @property
    def shadow_runs(self) -> FastShadowRuns:
        """This family's fast forms as the exact run's shadow runs take them (SPEC.md
        section 3, "Shadow runs"; ``reference.common.ShadowRuns``)."""
        return FastShadowRuns(self.forms_for, lambda name: self.implementation("fast", name),
                              self.forced_tested)

    def implementation(self, impl: str = "reference", form: str | None = None) -> Implementation:
        """The callable for ``impl`` ("reference" or "fast") and, for fast, ``form``.  An
        exact run that takes ``shadows`` (the a-posteriori fragile rule's shadow runs) is
        given this family's (:attr:`shadow_runs`); its signature is then the protocol's,
        without ``shadows``."""
        if impl == "reference":
            if form not in (None, "reference"):
                raise UnknownAlgorithmError("the reference has one form, 'reference'")
            reference: Implementation = getattr(self.reference, self.name)
            return _with_shadows(reference, self.shadow_runs)
        if impl != "fast":
            raise UnknownAlgorithmError(f"unknown implementation {impl!r} (reference, fast)")
        return self.form(form or self.forms[0]).run

    def forms_for(self, kernel: Any, params: dict[str, Any], *,
                  sparse: bool = False) -> list[str]:
        """The fast forms that take this kernel and these parameters (and, with ``sparse``,
        CSR input), the default first."""
        p = self.params.resolve(params).get("p", 2) if self.p2_forms else 2
        return [f.name for f in self.declared if f.takes(kernel, p, sparse)]

    def default_form(self, kernel: Any, params: dict[str, Any] | None = None, *,
                     sparse: bool = False) -> str:
        forms = self.forms_for(kernel, params or {}, sparse=sparse)
        if not forms:
            raise ParamError(f"{self.name}: no fast form takes kernel {kernel} with "
                             f"{params}")
        return forms[0]


def _with_shadows(reference: Implementation, shadows: FastShadowRuns) -> Implementation:
    """``reference`` given ``shadows`` when it takes them, with the signature it has
    without them; ``reference`` itself otherwise."""
    signature = inspect.signature(reference)
    if "shadows" not in signature.parameters:
        return reference

    @functools.wraps(reference)
    def exact_run(*args: Any, **kwargs: Any) -> Trace:
        return reference(*args, shadows=shadows, **kwargs)

    exact_run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name != "shadows"])
    return exact_run


def _forms(module: ModuleType, *declared: tuple[str, dict[str, Any]]) -> list[Form]:
    """The fast forms ``module.<name>``, each with what it takes."""
    return [Form(name, getattr(module, name), **takes) for name, takes in declared]


_LINEAR: dict[str, Any] = {}
_ANY: dict[str, Any] = {"kernels": "any"}
_P2: dict[str, Any] = {"p2_only": True}
_ENGINE: dict[str, Any] = {"engine": True}

ALGORITHMS: dict[str, Algorithm] = {
    a.name: a for a in (
        Algorithm("perceptron", perceptron_ref, _forms(
            perceptron_fast, ("primal", _ENGINE), ("dual", _ANY | _ENGINE))),
        Algorithm("higher_order", higher_order_ref, _forms(
            higher_order_fast, ("primal", _P2 | _ENGINE), ("dual", _ANY | _P2),
            ("implicit", _ENGINE))),
        Algorithm("pnorm_perceptron", pnorm_perceptron_ref, _forms(
            pnorm_perceptron_fast, ("primal", _ENGINE))),
        Algorithm("second_order", second_order_ref, _forms(
            second_order_fast, ("primal", _ENGINE), ("dual", _ANY))),
        Algorithm("romma", romma_ref, _forms(
            romma_fast, ("primal", _ENGINE), ("dual", _ANY | _ENGINE))),
        Algorithm("pumma", pumma_ref, _forms(
            pumma_fast, ("primal", _ENGINE), ("dual", _ANY | _P2 | _ENGINE)),
            forced_tested=pumma_fast.forced_run),
        Algorithm("alma", alma_ref, _forms(
            alma_fast, ("primal", _LINEAR), ("dual", _ANY | _P2))),
    )
}


def get(name: str) -> Algorithm:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UnknownAlgorithmError(f"unknown algorithm {name!r} "
                                    f"(known: {', '.join(ALGORITHMS)})") from None


def register_form(algorithm: str, form: Form) -> None:
    """Add ``form`` to ``algorithm``'s fast forms (after the others, so the default stays).
    From then on ``run``, the differential suite, ``check``, ``verify.forms_for``, the
    fragile rule's shadow runs and the benchmarks collected afterwards take it wherever its
    declaration says it applies."""
    get(algorithm).add_form(form)


def unregister_form(algorithm: str, name: str) -> Form:
    """Remove the fast form ``name`` of ``algorithm``; returns its declaration."""
    return get(algorithm).remove_form(name)


@contextlib.contextmanager
def registered_form(algorithm: str, form: Form) -> Iterator[Form]:
    """``form`` registered inside the block, removed after it (for tests)."""
    register_form(algorithm, form)
    try:
        yield form
    finally:
        unregister_form(algorithm, form.name)


def implementations() -> list[tuple[str, str, str]]:
    """Every registered (algorithm, implementation, form), the reference first."""
    out = []
    for a in ALGORITHMS.values():
        out.append((a.name, "reference", "reference"))
        out.extend((a.name, "fast", form) for form in a.forms)
    return out


def run(algorithm: str, X: Any, y: Any, *, impl: str = "reference", form: str | None = None,
        epochs: int = 1, kernel: Any = "linear", record_scores: bool = False,
        engine: str | None = None, max_seconds: float | None = None, **params: Any) -> Trace:
    """Run ``algorithm`` on (X, y) and return its trace.

    ``impl`` is "reference" (exact) or "fast"; ``form`` picks a fast form (default: the
    first that takes ``kernel``, the parameters and X).  ``engine`` ("auto", "numpy",
    "numba") is passed to a fast form that declares it (None: the form's default).
    ``max_seconds``: refuse (``budget.BudgetError``, before any work) a reference run whose
    estimated time (``budget.estimate``, an upper bound) exceeds it; None (the default)
    checks nothing.  ``params`` are the algorithm's parameters (SPEC.md).
    """
    algo = get(algorithm)
    extra: dict[str, Any] = {}
    if impl == "fast":
        if form is None:
            form = algo.default_form(kernel, params, sparse=sp.issparse(X))
        declared = algo.form(form)
        if declared.kernels == "linear" and not parse_kernel(kernel).is_linear:
            raise ParamError(f"{algorithm} form {form} takes the linear kernel only")
        if sp.issparse(X) and not declared.sparse:
            raise ParamError(f"{algorithm} form {form} takes dense X only, not a sparse "
                             "matrix")
        if engine is not None:
            if not declared.engine:
                raise ParamError(f"{algorithm} form {form} has no engine choice (forms "
                                 f"with one: {', '.join(algo.engine_forms) or 'none'})")
            extra["engine"] = engine
    elif engine is not None:
        raise ParamError("engine applies to the fast forms only")
    resolved = algo.params.resolve(params)  # unknown or bad parameters fail here
    if impl == "reference" and max_seconds is not None:
        budget.check(algorithm, X, epochs=epochs, kernel=kernel, max_seconds=max_seconds,
                     **resolved)
    return algo.implementation(impl, form)(X, y, epochs=epochs, kernel=kernel,
                                           record_scores=record_scores, **params, **extra)
