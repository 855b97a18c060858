"""The tests the pytest plugin runs against ``--oracle-impl`` (see pytest_plugin.py).

``test_golden_case``: one item per golden case (``verify.verify``: the mistakes and updates
always, the final state on the keys the implementation reports; NotImplementedError is a
skip with its reason).  ``test_check``: one item per check of
``properties.checks.yield_checks`` for every algorithm selected, run on hypothesis draws with
the check's own max_examples; a check that applies to no draw (NotImplementedError, or a
final-state key the trace lacks) is a skip with the reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from perceptron_oracle.properties.checks import hypothesis_test
from perceptron_oracle.verify import FAIL, NOT_APPLICABLE, run_external, verify


def test_golden_case(oracle_case: Any, oracle_impl: Any) -> None:
    [result] = verify([oracle_case], lambda case: run_external(case, oracle_impl))
    if result.status == NOT_APPLICABLE:
        pytest.skip(f"not applicable: {result.message}")
    if result.status == FAIL:
        pytest.fail(f"{oracle_case.name} ({oracle_case.comment}): {result.message}",
                    pytrace=False)


def test_check(oracle_check: Any, oracle_impl: Any) -> None:
    test, tally = hypothesis_test(oracle_check, oracle_impl)
    test()
    if tally.stop is not None or not tally.applied:
        pytest.skip(f"not applicable: {tally.reason()}")
