"""The tests the pytest plugin runs against ``--oracle-impl`` (see pytest_plugin.py).

``test_golden_case``: one item per golden case (``verify.verify``: the mistakes and updates
always, the final state on the keys the implementation reports; NotImplementedError is a
skip with its reason).  ``test_check``: one item per check of
every family's ``invariant_checks`` for every algorithm selected, run on hypothesis draws with
the check's own max_examples; a check that applies to no draw (NotImplementedError, or a
final-state key the trace lacks) is a skip with the reason.

The implementation is the plugin's sandbox (``oracle_impl``): a call that exits, is killed
or runs out of time fails that item with one line; in ``test_check`` such a failure ends the
item's draws at once (every later call fails the same way, without running the code, so
hypothesis' shrinking costs no further time limits).  What the code wrote is attached to
the item as "implementation stdout" and "implementation stderr" sections.
"""

from __future__ import annotations

from typing import Any

import pytest

from perceptron_oracle.properties.checks import hypothesis_test
from perceptron_oracle.sandbox import ImplementationFailed
from perceptron_oracle.verify import FAIL, NOT_APPLICABLE, run_external, verify


class _StopAfterFatal:
    """``impl``, until a call fails fatally (exit, signal, time or memory limit); from then
    on every call fails with that message, from the same line, without calling ``impl``."""

    def __init__(self, impl: Any) -> None:
        self.impl, self.fatal, self.output = impl, "", ["", ""]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.fatal:
            try:
                return self.impl(*args, **kwargs)
            except ImplementationFailed as exc:
                if not exc.fatal:
                    raise
                self.fatal = exc.message
            finally:
                for i, text in enumerate(getattr(self.impl, "output", ("", ""))):
                    if text and not self.output[i]:
                        self.output[i] = text
        raise ImplementationFailed(self.fatal, fatal=True)


def _attach_output(request: Any, output: Any) -> None:
    for name, text in zip(("stdout", "stderr"), output):
        if text:
            request.node.add_report_section("call", f"implementation {name}", text)


def test_golden_case(oracle_case: Any, oracle_impl: Any, request: Any) -> None:
    [result] = verify([oracle_case], lambda case: run_external(case, oracle_impl),
                      output=lambda: oracle_impl.output)
    _attach_output(request, result.output)
    if result.status == NOT_APPLICABLE:
        pytest.skip(f"not applicable: {result.message}")
    if result.status == FAIL:
        pytest.fail(f"{oracle_case.name} ({oracle_case.comment}): {result.message}",
                    pytrace=False)


def test_check(oracle_check: Any, oracle_impl: Any, request: Any) -> None:
    impl = _StopAfterFatal(oracle_impl)
    test, tally = hypothesis_test(oracle_check, impl)
    try:
        test()
    except ImplementationFailed as exc:
        notes = "".join(f"\n{note}" for note in getattr(exc, "__notes__", [])[:5])
        pytest.fail(f"{oracle_check.id}: the implementation failed: {exc.message}{notes}",
                    pytrace=False)
    finally:
        _attach_output(request, impl.output)
    if tally.stop is not None or not tally.applied:
        pytest.skip(f"not applicable: {tally.reason()}")
