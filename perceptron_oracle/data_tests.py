"""The runs on the user's own data that the pytest plugin adds with ``--oracle-data FILE``:
one test per (data file, algorithm) against ``--oracle-impl``, every trial judged against the
exact run (``verify.verify_on``; ``--oracle-epochs N`` and ``--oracle-param NAME=VALUE`` set
the run, ``--oracle-algorithm`` narrows the algorithms).  Each run has its own worker
process with ``sandbox.DATA_RUN_TIMEOUT`` seconds (``--oracle-case-timeout`` sets it); an
algorithm the implementation declines (NotImplementedError) is skipped with its reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from perceptron_oracle.params import parse_assignment
from perceptron_oracle.registry import ALGORITHMS
from perceptron_oracle.sandbox import DATA_RUN_TIMEOUT, DEFAULT_MEMORY_MB, Sandbox
from perceptron_oracle.verify import NOT_APPLICABLE, verify_on


def pytest_generate_tests(metafunc: Any) -> None:
    if "oracle_data_run" in metafunc.fixturenames:
        config = metafunc.config
        only = config.getoption("oracle_algorithm", default=None)
        runs = [(path, name) for path in config.getoption("oracle_data")
                for name in ALGORITHMS if not only or name in only]
        metafunc.parametrize("oracle_data_run", runs,
                             ids=[f"{name}:{path}" for path, name in runs])


def test_data_run(oracle_data_run: tuple[str, str], request: Any) -> None:
    path, algorithm = oracle_data_run
    config = request.config
    timeout = config.getoption("oracle_case_timeout")
    memory = config.getoption("oracle_memory_limit")
    params = dict(parse_assignment(text) for text in config.getoption("oracle_param") or [])
    with Sandbox(config.getoption("oracle_impl"),
                 timeout=DATA_RUN_TIMEOUT if timeout is None else timeout,
                 memory_mb=DEFAULT_MEMORY_MB if memory is None else memory) as box:
        verdict = verify_on(path, box, algorithm=algorithm,
                            epochs=config.getoption("oracle_epochs"), params=params)
    if verdict.status == NOT_APPLICABLE:
        pytest.skip(f"{algorithm} not applicable: {verdict.message}")
    assert verdict.ok, verdict.describe()
