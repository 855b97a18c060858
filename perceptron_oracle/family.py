"""A family as one unit: the declaration every suite, command and table reads.

A :class:`Family` says everything the project knows about one algorithm family: its exact
reference (``reference/<name>.py``: ``PARAMS``, the exact run named after the family,
``final_error_bounds``), its fast forms (:class:`Form`, the default first), the hypothesis
strategy of its parameters, its theorem invariants, its golden cases, its long runs, its
benchmark cases, the cost model of its exact run, and its estimator.  The seven families of
the papers are declared in ``families/<name>.py``; the registry collects them
(``registry.ALGORITHMS``) and every consumer iterates over it: the differential suite,
``check``, ``run``, the golden files and the trace schema, ``verify``, the fuzzer, the
pytest plugin, ``python -m perceptron_oracle.benchmarks``, the long runs and the
estimators.  :meth:`Family.lacks` lists what a declaration leaves out, so nothing is
skipped in silence.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import InitVar, dataclass, field, replace
from types import ModuleType
from typing import Any, Literal

from hypothesis.strategies import SearchStrategy

from .benchmark_cases import Benchmark
from .budget import CostModel
from .errors import ParamError, UnknownAlgorithmError
from .golden_specs import FileSpec
from .kernels import parse_kernel
from .params import ParamSchema
from .properties.checks import Check, cited
from .shadows import FastShadowRuns
from .trace import Trace

__all__ = ["Form", "Family", "LongRun", "Estimator", "Implementation", "LONG_RUN_POLY",
           "LONG_RUN_RBF"]

Implementation = Callable[..., Trace]


@dataclass(frozen=True)
class Form:
    """One fast form of a family and what it takes.

    ``run`` follows the reference's protocol (the same keywords and defaults, plus ``engine``
    when ``engine`` is true).  ``name``: any identifier but "reference" (the form
    vocabulary is open: trace files name the form as the registry does).  ``kernels``:
    "linear" (the linear kernel only) or "any"; ``p2_only``: the form takes p = 2 only (the
    others take every p the family takes); ``sparse``: X may be a scipy CSR matrix;
    ``engine``: the form takes the keyword ``engine`` ("auto", "numpy" or "numba": the
    compiled per-trial loop or the block-ahead driver, SPEC.md section 7).
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


#: The long runs' non-linear kernels.
LONG_RUN_POLY = "poly:degree=2,coef0=1,gamma=1"
LONG_RUN_RBF = "rbf:gamma=1"


@dataclass(frozen=True)
class LongRun:
    """One long run of a family (``python -m perceptron_oracle.long_runs``): kernel,
    parameters, and the data's size (``examples`` presented for trials / examples epochs,
    ``n`` features, a ``noise`` share of labels flipped; ``trials`` caps the run where the
    exact state grows with every mistake)."""

    kernel: str = "linear"
    params: dict[str, Any] = field(default_factory=dict)
    examples: int = 2000
    n: int = 3
    noise: float = 0.1
    trials: int | None = None   # a cap below --trials (None: --trials)

    @property
    def label(self) -> str:
        parts = [self.kernel.split(":")[0]]
        parts += [f"{k}={v}" for k, v in self.params.items() if k != "numbers"]
        parts += [self.params["numbers"]] if "numbers" in self.params else []
        return " ".join(parts)


@dataclass(frozen=True)
class Estimator:
    """The family's scikit-learn estimator (``estimators.for_family``): its class name and
    the first paragraph of its docstring (the parameters are added from ``PARAMS``)."""

    class_name: str
    doc: str


@dataclass(eq=False)
class Family:
    """One algorithm family, declared once (module docstring).

    ``reference``: the family's module in ``reference/``; ``fast_forms``: its fast forms,
    the default first.  ``params_strategy(p2_only=False)``: a hypothesis strategy of
    parameter dicts (``properties.strategies``; ``p2_only`` for a form that takes p = 2
    only);
    ``params_from_data``: a strategy of parameters set from a drawn sequence, drawn last by
    the fuzzer (SOP's a near the data's eigenvalues).  ``checks``: the theorem invariants an
    outside implementation is held to (``properties.checks``).  ``golden``: the golden file
    holding the family's cases (a file may hold several families).  ``long_runs``,
    ``benchmarks``: the long runs' and the benchmark command's cases.  ``cost``: the exact
    run's cost model (``budget``).  ``estimator``: the scikit-learn class.
    ``normalized_by_default``: ``run`` normalises instances unless told not to (the paper's
    setting); ``scores_normalized``: the hypothesis scores x / ||x||_p (ALMA), which the
    estimator's prediction follows; ``matrix_state``: the primal state holds an n x n matrix
    (the estimators take the dual form on wide data).  ``fragility_params``: parameter sets
    besides the defaults that ``fragility`` measures.  ``forced_tested``: the fast run along
    forced updates that also returns the update test's left side per trial (PUMMA's soft
    margin, ``fast.pumma.forced_run``), for the shadow runs.
    """

    name: str
    reference: ModuleType
    fast_forms: InitVar[Iterable[Form]]
    params_strategy: Callable[..., SearchStrategy[dict[str, Any]]]
    checks: Callable[[], list[Check]]
    golden: Callable[[], FileSpec] | None
    long_runs: tuple[LongRun, ...]
    benchmarks: tuple[Benchmark, ...]
    cost: CostModel | None
    estimator: Estimator | None
    params_from_data: Callable[[Any], SearchStrategy[dict[str, Any]]] | None = None
    normalized_by_default: bool = False
    scores_normalized: bool = False
    matrix_state: bool = False
    fragility_params: tuple[dict[str, Any], ...] = ()
    forced_tested: Callable[..., tuple[Trace, list[float]]] | None = None
    exact: ModuleType | None = None
    _forms: dict[str, Form] = field(init=False, repr=False)

    def __post_init__(self, fast_forms: Iterable[Form]) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a family's name is an identifier, not {self.name!r}")
        self._forms = {}
        for form in fast_forms:
            self.add_form(form)

    def lacks(self) -> list[str]:
        """What this declaration leaves out (none for the papers' families): each is a
        consumer that skips the family, named here so that none does so in silence."""
        missing = [what for what, value in (
            ("golden cases", self.golden), ("long runs", self.long_runs),
            ("benchmark cases", self.benchmarks), ("a cost model", self.cost),
            ("an estimator", self.estimator)) if not value]
        if not self.invariant_checks:
            missing.append("theorem invariants")
        if not self._forms:
            missing.append("fast forms")
        return missing

    @functools.cached_property
    def invariant_checks(self) -> list[Check]:
        """The theorem invariants an outside implementation is held to
        (``properties.checks``), each citing its theorem and paper in its failures and
        calling the implementation with this family's parameter defaults filled in."""
        return [replace(cited(check), schema=self.params) for check in self.checks()]

    # -- the fast forms, and the views every consumer reads -----------------------------------
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
    def params(self) -> ParamSchema[Any]:
        schema: ParamSchema[Any] = self.reference.PARAMS
        return schema

    def draw_params(self, form: str | None = None) -> SearchStrategy[dict[str, Any]]:
        """The parameters strategy for a run of ``form`` (None: any form)."""
        return self.params_strategy(p2_only=form is not None and form in self.p2_forms)

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
        """The callable for ``impl`` ("reference", "exact": the exact engine, which gives
        the reference's trace, or "fast") and, for fast, ``form``.  An
        exact run that takes ``shadows`` (the a-posteriori fragile rule's shadow runs) is
        given this family's (:attr:`shadow_runs`); its signature is then the protocol's,
        without ``shadows``."""
        if impl in ("reference", "exact"):
            if form not in (None, "reference"):
                raise UnknownAlgorithmError(f"the {impl} run has one form, 'reference'")
            module = self.reference if impl == "reference" else self.exact
            if module is None:
                raise UnknownAlgorithmError(f"{self.name} has no exact engine")
            exact_run: Implementation = getattr(module, self.name)
            return _with_shadows(exact_run, self.shadow_runs)
        if impl != "fast":
            raise UnknownAlgorithmError(f"unknown implementation {impl!r} "
                                        "(reference, exact, fast)")
        return self.form(form or self.forms[0]).run

    def exact_run(self) -> Implementation:
        """The exact run the oracle judges by: the exact engine where the family declares
        one (the reference's trace, faster), else the readable reference."""
        return self.implementation("exact" if self.exact is not None else "reference")

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
