"""The differential fuzzing the pytest plugin adds with ``--oracle-fuzz`` (see fuzz.py): one
test per registered algorithm (``--oracle-algorithm`` narrows them) against
``--oracle-impl``.  A disagreement fails the test with the shrunk case and the command that
replays it; an algorithm the implementation never takes (NotImplementedError on every draw)
is skipped with the implementation's reason.  The plugin's ``--oracle-fuzz-examples`` (draws
per algorithm; fuzz.DEFAULT_EXAMPLES when not given) and ``--oracle-fuzz-seed`` (0) set the
search.  Every draw's call goes through the plugin's sandbox (``oracle_impl``); the
reference runs in the pytest process.
"""

from __future__ import annotations

from typing import Any

import pytest

from perceptron_oracle.fuzz import DEFAULT_EXAMPLES, FAIL, NOT_APPLICABLE, fuzz
from perceptron_oracle.registry import ALGORITHMS


def pytest_generate_tests(metafunc: Any) -> None:
    if "oracle_fuzz_algorithm" in metafunc.fixturenames:
        only = metafunc.config.getoption("oracle_algorithm", default=None)
        names = [name for name in ALGORITHMS if not only or name in only]
        metafunc.parametrize("oracle_fuzz_algorithm", names)


def test_fuzz(oracle_fuzz_algorithm: str, oracle_impl: Any, request: Any,
              tmp_path_factory: Any) -> None:
    config = request.config
    out = tmp_path_factory.mktemp(f"fuzz-{oracle_fuzz_algorithm}")
    examples = config.getoption("oracle_fuzz_examples")
    report = fuzz(oracle_impl, [oracle_fuzz_algorithm],
                  examples=DEFAULT_EXAMPLES if examples is None else examples,
                  seed=config.getoption("oracle_fuzz_seed"), out_dir=out)
    result = report.results[0]
    if result.status == NOT_APPLICABLE:
        pytest.skip(f"{oracle_fuzz_algorithm} not applicable: {result.reason}")
    assert result.status != FAIL, "\n" + report.describe(config.getoption("oracle_impl"))
