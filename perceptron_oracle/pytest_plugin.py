"""pytest plugin (entry point ``pytest11``): run the golden cases and the invariants against a
third-party Python implementation, one pytest item per case.

    pytest --oracle-impl mypackage.module:function [--oracle-golden DIR]
           [--oracle-algorithm perceptron ...]
           [--oracle-fuzz [--oracle-fuzz-examples N] [--oracle-fuzz-seed S]]

``function`` follows ``verify --impl``'s protocol (perceptron_oracle/verify.py):
``function(algorithm, X, y, *, epochs, kernel, params) -> Trace | dict``.  Items:
``test_golden_case[<algorithm>:<file>.json:<id>]`` for every golden case and
``test_check[<algorithm>:<check>]`` for every check of ``properties.checks.yield_checks``
(hypothesis draws); NotImplementedError from ``function``, or a final-state key its trace
lacks, makes an item a skip with the reason.  ``--oracle-fuzz`` adds
``test_fuzz[<algorithm>]``, the differential fuzzing of ``fuzz.py`` (``fuzz_tests.py``).
Without ``--oracle-impl`` the plugin does nothing and imports nothing beyond pytest.
Expected failures are the caller's to declare, with a reason, through pytest's own
``-k``/xfail machinery; none are built in.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

CONFORMANCE_TESTS = pathlib.Path(__file__).with_name("conformance_tests.py")
FUZZ_TESTS = pathlib.Path(__file__).with_name("fuzz_tests.py")


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


def pytest_configure(config: Any) -> None:
    spec = config.getoption("oracle_impl")
    if config.getoption("oracle_fuzz") and not spec:
        raise pytest.UsageError("--oracle-fuzz needs --oracle-impl MODULE:CALLABLE")
    examples = config.getoption("oracle_fuzz_examples")
    if examples is not None and examples < 1:
        raise pytest.UsageError(f"--oracle-fuzz-examples must be at least 1, got {examples}")
    if spec:
        from .errors import OracleInputError
        from .verify import load_callable

        try:
            load_callable(spec)
        except OracleInputError as exc:
            raise pytest.UsageError(f"--oracle-impl: {exc}") from None
        config.args.append(str(CONFORMANCE_TESTS))
        if config.getoption("oracle_fuzz"):
            config.args.append(str(FUZZ_TESTS))


def pytest_report_header(config: Any) -> list[str]:
    spec = config.getoption("oracle_impl")
    return [f"perceptron-oracle conformance target: {spec}"] if spec else []


@pytest.fixture(scope="session")
def oracle_impl(request: Any) -> Any:
    from .verify import load_callable

    spec = request.config.getoption("oracle_impl")
    if not spec:
        pytest.fail("--oracle-impl MODULE:CALLABLE is required for the conformance tests")
    return load_callable(spec)


def pytest_generate_tests(metafunc: Any) -> None:
    if "oracle_check" in metafunc.fixturenames:
        from .properties.checks import ALGORITHMS, yield_checks

        only = metafunc.config.getoption("oracle_algorithm")
        checks = [c for a in ALGORITHMS if not only or a in only for c in yield_checks(a)]
        metafunc.parametrize("oracle_check", checks, ids=[c.id for c in checks])
    if "oracle_case" in metafunc.fixturenames:
        from . import golden

        directory = metafunc.config.getoption("oracle_golden")
        only = metafunc.config.getoption("oracle_algorithm")
        cases = [c for c in golden.load(pathlib.Path(directory) if directory else None)
                 if not only or c.algorithm in only]
        metafunc.parametrize("oracle_case", cases,
                             ids=[f"{c.algorithm}:{c.name}" for c in cases])
