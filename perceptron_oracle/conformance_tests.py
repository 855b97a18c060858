"""The tests the pytest plugin runs against ``--oracle-impl`` (see pytest_plugin.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from perceptron_oracle.properties import perceptron as perceptron_invariants
from perceptron_oracle.properties.strategies import PARAMS, label_noise, separable
from perceptron_oracle.trace import Trace
from perceptron_oracle.verify import judge, run_external


def test_golden_case(oracle_case: Any, oracle_impl: Any) -> None:
    result = judge(oracle_case, run_external(oracle_case, oracle_impl))
    assert result.ok, f"{oracle_case.comment}: {result.message}"


def _protocol(impl: Any, algorithm: str) -> Any:
    """The outside callable in the internal protocol ``f(X, y, *, epochs, **params)``."""
    def run(X: Any, y: Any, *, epochs: int = 1, kernel: str = "linear", **params: Any) -> Trace:
        out = impl(algorithm, np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64),
                   epochs=epochs, kernel=kernel, params=params)
        return out if isinstance(out, Trace) else Trace.from_dict(out)
    return run


def _wanted(request: Any, algorithm: str) -> None:
    only = request.config.getoption("oracle_algorithm")
    if only and algorithm not in only:
        pytest.skip(f"--oracle-algorithm excludes {algorithm}")


@settings(max_examples=50, deadline=None)
@given(seq=separable())
def test_perceptron_classic(request: Any, oracle_impl: Any, seq: Any) -> None:
    _wanted(request, "perceptron")
    perceptron_invariants.check_classic(_protocol(oracle_impl, "perceptron"), seq)


@settings(max_examples=50, deadline=None)
@given(seq=separable(min_margin=0.05))
def test_perceptron_novikoff(request: Any, oracle_impl: Any, seq: Any) -> None:
    _wanted(request, "perceptron")
    perceptron_invariants.check_novikoff(_protocol(oracle_impl, "perceptron"), seq)


@settings(max_examples=50, deadline=None)
@given(seq=label_noise(), params=PARAMS["perceptron"]())
def test_perceptron_bookkeeping(request: Any, oracle_impl: Any, seq: Any,
                                params: dict) -> None:
    _wanted(request, "perceptron")
    trace = _protocol(oracle_impl, "perceptron")(seq.X, seq.y, epochs=2, **params)
    perceptron_invariants.check_bookkeeping(trace, seq, params)
    perceptron_invariants.check_longest_survivor(trace)
