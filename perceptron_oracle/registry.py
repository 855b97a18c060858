"""Every family, its implementations and its forms, under their canonical names.

One protocol for all: an implementation is a callable ``f(X, y, *, epochs, kernel, <params>,
record_scores) -> Trace``.  Each family is declared once, as a ``family.Family`` in
``families/<name>.py`` (its reference, its fast forms and what each takes, its strategies,
invariants, golden cases, long runs, benchmark cases, cost model and estimator), and every
consumer reads the families from here: ``run``, the differential suite, ``perceptron-oracle
check`` and ``verify.forms_for``, the shadow runs of the fragile rule, ``fuzz``,
``fragility``, the golden files and the trace schema, the estimators, the long runs and the
benchmarks.  A new form of a family is one :func:`register_form` call (or one more ``Form``
in the family's declaration); a family declared outside the package is one
:func:`register_family` call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import scipy.sparse as sp

from . import budget
from .errors import ParamError, UnknownAlgorithmError
from .families import ALL
from .family import Family, Form, Implementation
from .kernels import parse_kernel
from .trace import Trace

__all__ = ["ALGORITHMS", "Family", "Form", "Implementation", "get", "register_family",
           "unregister_family", "registered_family", "register_form", "unregister_form",
           "registered_form", "implementations", "run"]

#: Every family by name, in the order of ``families.ALL`` (then those registered later).
ALGORITHMS: dict[str, Family] = {family.name: family for family in ALL}


def get(name: str) -> Family:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UnknownAlgorithmError(f"unknown algorithm {name!r} "
                                    f"(known: {', '.join(ALGORITHMS)})") from None


def register_family(family: Family) -> None:
    """Add ``family`` after the others: from then on every consumer that reads the registry
    (``run``, ``check``, ``verify``, the fuzzer, golden generation, the plugin, the long
    runs, the benchmarks and the estimators) takes it."""
    if family.name in ALGORITHMS:
        raise ValueError(f"a family named {family.name!r} is registered already")
    ALGORITHMS[family.name] = family


def unregister_family(name: str) -> Family:
    """Remove the family ``name``; returns its declaration."""
    family = get(name)
    del ALGORITHMS[name]
    return family


@contextlib.contextmanager
def registered_family(family: Family) -> Iterator[Family]:
    """``family`` registered inside the block, removed after it (for tests)."""
    register_family(family)
    try:
        yield family
    finally:
        unregister_family(family.name)


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

    ``impl`` is "reference" (the readable exact run), "exact" (the family's exact engine: the
    reference's trace, faster) or "fast"; ``form`` picks a fast form (default: the
    first that takes ``kernel``, the parameters and X).  ``engine`` ("auto", "numpy",
    "numba") is passed to a fast form that declares it (None: the form's default).
    ``max_seconds``: refuse (``budget.BudgetError``, before any work) an exact run whose
    estimated time (``budget.estimate``, an upper bound: the reference's, which bounds the
    engine's too) exceeds it; None (the default) checks nothing.  ``params`` are the
    algorithm's parameters (SPEC.md).
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
    if impl in ("reference", "exact") and max_seconds is not None and algo.cost is not None:
        budget.check(algorithm, algo.cost, X, epochs=epochs, kernel=kernel,
                     max_seconds=max_seconds, **resolved)
    return algo.implementation(impl, form)(X, y, epochs=epochs, kernel=kernel,
                                           record_scores=record_scores, **params, **extra)
