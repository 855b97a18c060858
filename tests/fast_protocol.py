"""The project's own fast forms in ``verify``'s protocol, for the plugin and check-library
tests: ``run(algorithm, X, y, *, epochs, kernel, params) -> Trace`` with the default fast
form that takes the kernel and parameters; and what the compiled-engine tests share."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event

from perceptron_oracle.compare import compare
from perceptron_oracle.errors import DataError
from perceptron_oracle.fast import _compiled
from perceptron_oracle.fast.driver import FloatRangeError
from perceptron_oracle.long_runs import stop_excused
from perceptron_oracle.registry import run as run_registered

needs_numba = pytest.mark.skipif(not _compiled.available(),
                                 reason="numba is not installed: no compiled engine to test")
ENGINES = ("numpy", "numba")
#: The share of the profile's examples each engine item draws (the reference dominates).
SHARE = 8
KERNEL_EXAMPLES = 8


def check_against(expected: Any, actual: Any, X: Any, label: str) -> None:
    """``actual`` agrees with the reference's ``expected`` (a divergence at a fragile trial
    is accepted, and counted as a hypothesis event)."""
    result = compare(expected, actual, X)
    if result.excused:
        event(f"{label} diverged at a fragile trial (accepted)")
    assert result.ok, f"{label}: {result.describe()}"


def check_run(expected: Any, run_fast: Any, X: Any, label: str) -> None:
    """``run_fast()`` agrees with ``expected`` as ``check_against`` asks, or stops with
    FloatRangeError at or after a trial the reference flags (``long_runs.stop_excused``: it
    may have parted from the exact path there), counted as a hypothesis event."""
    try:
        actual = run_fast()
    except FloatRangeError as stop:
        assert stop_excused(expected, stop), f"{label}: {stop}"
        event(f"{label} stopped (float64 range) after a fragile trial (accepted)")
        return
    check_against(expected, actual, X, label)


def assert_engines_stop_alike(run_with_engine: Any) -> None:
    """``run_with_engine(engine)`` stops in every engine with one FloatRangeError line naming
    the same trial (a state beyond float64's range)."""
    messages = []
    for engine in ENGINES:
        with pytest.raises(FloatRangeError) as info:
            run_with_engine(engine)
        assert "\n" not in str(info.value)
        messages.append(str(info.value).split(":")[0])
    assert messages[0] == messages[1] and messages[0].startswith("trial ")


def assert_bad_value_named(run_with_engine: Any, X: Any, bad: float) -> None:
    """X (dense, and as CSR) holding ``bad`` (NaN or an infinity): every engine raises the
    one-line DataError that names it, ``run_with_engine(X, engine)``."""
    import scipy.sparse as sp
    word = "NaN" if bad != bad else "an infinity"
    for data in (X, sp.csr_matrix(X)):
        for engine in ENGINES:
            with pytest.raises(DataError, match=f"X contains {word}") as info:
                run_with_engine(data, engine)
            assert "\n" not in str(info.value)


def run(algorithm: str, X: Any, y: Any, *, epochs: int, kernel: str,
        params: dict[str, Any]) -> Any:
    return run_registered(algorithm, X, y, impl="fast", epochs=epochs, kernel=kernel,
                          **params)
