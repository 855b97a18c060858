"""pytest plugin (entry point ``pytest11``): run the golden cases and the invariants against a
third-party Python implementation, one pytest item per case.

    pytest --oracle-impl mypackage.module:function [--oracle-golden DIR]
           [--oracle-algorithm perceptron ...] [--oracle-case-timeout SECONDS]
           [--oracle-memory-limit MIB]
           [--oracle-fuzz [--oracle-fuzz-examples N] [--oracle-fuzz-seed S]]
           [--oracle-data FILE [--oracle-epochs N] [--oracle-param NAME=VALUE ...]]

``function`` follows ``verify --impl``'s protocol (perceptron_oracle/verify.py):
``function(algorithm, X, y, *, epochs, kernel, params) -> Trace | dict``.  Items:
``test_golden_case[<algorithm>:<file>.json:<id>]`` for every golden case and
``test_check[<algorithm>:<check>]`` for every check of every family's ``invariant_checks``
(hypothesis draws); NotImplementedError from ``function``, or a final-state key its trace
lacks, makes an item a skip with the reason.  ``--oracle-fuzz`` adds
``test_fuzz[<algorithm>]``, the differential fuzzing of ``fuzz.py`` (``fuzz_tests.py``);
``--oracle-data FILE`` adds ``test_data_run[<algorithm>:<FILE>]``, the implementation on
that data set, every trial judged against the exact run (``data_tests.py``).
``function`` runs in a worker process of perceptron_oracle.sandbox (one per pytest process,
started at configuration, where an import problem is a usage error): each call has
``--oracle-case-timeout`` seconds (30) and the worker ``--oracle-memory-limit`` MiB of data
segment (4096); an exit, a signal, a timeout fails that item only, and what the code wrote
to stdout and stderr is shown as the item's "implementation stdout/stderr" sections.
Without ``--oracle-impl`` the plugin does nothing and imports nothing beyond pytest.
Expected failures are the caller's to declare, with a reason, through pytest's own
``-k``/xfail machinery; none are built in.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

CONFORMANCE_TESTS = pathlib.Path(__file__).with_name("conformance_tests.py")
_BOX: Any = pytest.StashKey()   # the Sandbox of --oracle-impl
FUZZ_TESTS = pathlib.Path(__file__).with_name("fuzz_tests.py")
DATA_TESTS = pathlib.Path(__file__).with_name("data_tests.py")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("perceptron-oracle")
    group.addoption("--oracle-impl", default=None, metavar="MODULE:CALLABLE",
                    help="run perceptron-oracle's golden cases and invariants against this "
                         "implementation")
    group.addoption("--oracle-golden", default=None, metavar="DIR",
                    help="the golden files (default: the package's conformance_data/)")
    group.addoption("--oracle-algorithm", action="append", default=None, metavar="NAME",
                    help="only this algorithm's cases and invariants (repeatable)")
    group.addoption("--oracle-fuzz", action="store_true",
                    help="also fuzz the implementation against the exact reference, one test "
                         "per algorithm")
    group.addoption("--oracle-fuzz-examples", type=int, default=None, metavar="N",
                    help="--oracle-fuzz: draws per algorithm (default 200)")
    group.addoption("--oracle-fuzz-seed", type=int, default=0, metavar="S",
                    help="--oracle-fuzz: hypothesis' seed (default 0)")
    group.addoption("--oracle-data", action="append", default=[], metavar="FILE",
                    help="also run the implementation on this data set (CSV, svmlight, "
                         "npz, builtin:NAME), every trial judged (repeatable)")
    group.addoption("--oracle-epochs", type=int, default=1, metavar="N",
                    help="--oracle-data: passes over the data (default 1)")
    group.addoption("--oracle-param", action="append", default=None, metavar="NAME=VALUE",
                    help="--oracle-data: a parameter of the algorithm (repeatable)")
    group.addoption("--oracle-case-timeout", type=float, default=None, metavar="SECONDS",
                    help="seconds one call of the implementation may take (default 30)")
    group.addoption("--oracle-memory-limit", type=int, default=None, metavar="MIB",
                    help="the data segment of the implementation's worker process, in MiB "
                         "(default 4096)")


def pytest_configure(config: Any) -> None:
    spec = config.getoption("oracle_impl")
    if config.getoption("oracle_fuzz") and not spec:
        raise pytest.UsageError("--oracle-fuzz needs --oracle-impl MODULE:CALLABLE")
    if config.getoption("oracle_data") and not spec:
        raise pytest.UsageError("--oracle-data needs --oracle-impl MODULE:CALLABLE")
    if config.getoption("oracle_epochs") < 1:
        raise pytest.UsageError(f"--oracle-epochs must be at least 1, got "
                                f"{config.getoption('oracle_epochs')}")
    examples = config.getoption("oracle_fuzz_examples")
    if examples is not None and examples < 1:
        raise pytest.UsageError(f"--oracle-fuzz-examples must be at least 1, got {examples}")
    timeout = config.getoption("oracle_case_timeout")
    if timeout is not None and not timeout > 0:
        raise pytest.UsageError(f"--oracle-case-timeout must be positive, got {timeout}")
    memory = config.getoption("oracle_memory_limit")
    if memory is not None and memory < 64:
        raise pytest.UsageError(f"--oracle-memory-limit must be at least 64 (MiB), got "
                                f"{memory}")
    if spec:
        from .errors import OracleInputError
        from .sandbox import DEFAULT_CASE_TIMEOUT, DEFAULT_MEMORY_MB, Sandbox

        box = Sandbox(spec, timeout=DEFAULT_CASE_TIMEOUT if timeout is None else timeout,
                      memory_mb=DEFAULT_MEMORY_MB if memory is None else memory)
        try:
            box.start()
        except OracleInputError as exc:
            box.close()
            raise pytest.UsageError(f"--oracle-impl: {exc}") from None
        config.stash[_BOX] = box
        config.args.append(str(CONFORMANCE_TESTS))
        if config.getoption("oracle_fuzz"):
            config.args.append(str(FUZZ_TESTS))
        if config.getoption("oracle_data"):
            config.args.append(str(DATA_TESTS))


def pytest_unconfigure(config: Any) -> None:
    box = config.stash.get(_BOX, None)
    if box is not None:
        box.close()


def pytest_report_header(config: Any) -> list[str]:
    spec = config.getoption("oracle_impl")
    return [f"perceptron-oracle conformance target: {spec}"] if spec else []


@pytest.fixture(scope="session")
def oracle_impl(request: Any) -> Any:
    """The implementation's sandbox (perceptron_oracle.sandbox.Sandbox)."""
    box = request.config.stash.get(_BOX, None)
    if box is None:
        pytest.fail("--oracle-impl MODULE:CALLABLE is required for the conformance tests")
    return box


def pytest_generate_tests(metafunc: Any) -> None:
    if "oracle_check" in metafunc.fixturenames:
        from .registry import ALGORITHMS

        only = metafunc.config.getoption("oracle_algorithm")
        checks = [c for family in ALGORITHMS.values() if not only or family.name in only
                  for c in family.invariant_checks]
        metafunc.parametrize("oracle_check", checks, ids=[c.id for c in checks])
    if "oracle_case" in metafunc.fixturenames:
        from . import golden

        directory = metafunc.config.getoption("oracle_golden")
        only = metafunc.config.getoption("oracle_algorithm")
        cases = [c for c in golden.load(pathlib.Path(directory) if directory else None)
                 if not only or c.algorithm in only]
        metafunc.parametrize("oracle_case", cases,
                             ids=[f"{c.algorithm}:{c.name}" for c in cases])
