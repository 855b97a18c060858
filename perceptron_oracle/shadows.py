"""The shadow runs of the a-posteriori fragile rule (SPEC.md section 3, "Shadow runs"): a
family's float64 forms re-run along an exact run's updates, to measure their error on each
score.  The exact runs (``reference.common.shadow_errors``, ``shadow_test_errors``) import
no fast form: they take a ``reference.common.ShadowRuns``, and :class:`FastShadowRuns` is
the one the registry builds for each family from its declared fast forms.  This module sits
above ``fast`` and below the registry (README, "Layers").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ParamError
from .fast.driver import forced_updates
from .trace import Trace

__all__ = ["FastShadowRuns"]


@dataclass(frozen=True)
class FastShadowRuns:
    """``reference.common.ShadowRuns`` over one family's fast forms.

    ``forms``: (kernel, params) -> the forms that take them (``Family.forms_for``, read
    at each run, so a form registered later takes part); ``form``: a form's name -> its
    callable; ``tested``: the run that also returns the update test's left side per trial
    (``fast.pumma.forced_run``), None for the families without such a test."""

    forms: Callable[[Any, dict[str, Any]], list[str]]
    form: Callable[[str], Callable[..., Trace]]
    tested: Callable[..., tuple[Trace, list[float]]] | None = None

    def forms_for(self, kernel: Any, params: dict[str, Any]) -> list[str]:
        return self.forms(kernel, params)

    def forced(self, form: str, X: Any, y: Any, epochs: int, kernel: Any,
               params: dict[str, Any], updates: list[int]) -> Trace:
        """Fast form ``form`` on (X, y), its scores recorded, updating at ``updates`` only
        (``fast.driver.forced_updates``)."""
        run_form = self.form(form)
        with forced_updates(updates):
            return run_form(X, y, epochs=epochs, kernel=kernel, record_scores=True, **params)

    def forced_tested(self, form: str, X: Any, y: Any, epochs: int, kernel: Any,
                      params: dict[str, Any], updates: list[int]
                      ) -> tuple[Trace, list[float]]:
        """``tested(form, X, y, epochs, kernel, params, updates)``: the forced run and the
        update test's left side per trial as the form compares it."""
        if self.tested is None:
            raise ParamError(f"fast form {form!r} records no update test's left side")
        return self.tested(form, X, y, epochs, kernel, params, updates)
