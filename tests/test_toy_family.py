"""A family and a kernel declared outside the package reach every consumer of the registry.

``tests/toy_family/`` holds what a user writes to add a family: a reference module, a fast
module and one ``Family`` declaration (with a kernel class the package does not have), and
nothing else.  Registered (``registry.registered_family``, ``kernels.registered_kernel``, or
``pytest -p toy_family.plugin`` for a pytest run of its own), the toy is taken by the
differential suite, ``check``, golden generation (into a temporary directory) and the trace
schema, ``verify``, the fuzzer, the pytest plugin, the benchmark command, the long runs and
the estimators, and its declaration lacks nothing (``Family.lacks``).  Each part fails if
that consumer reads families or kernels from a list of its own.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from perceptron_oracle import benchmarks, golden, kernels, long_runs, registry
from perceptron_oracle.cli import main
from perceptron_oracle.compare import compare
from perceptron_oracle.estimators import for_family
from perceptron_oracle.registry import ALGORITHMS
from toy_family.declaration import FAMILY, TOY_KERNEL, ToyKernel

TESTS = pathlib.Path(__file__).parent


@pytest.fixture
def toy():
    with kernels.registered_kernel(ToyKernel), registry.registered_family(FAMILY):
        yield FAMILY
    assert "toy_margin" not in ALGORITHMS and "toysquare" not in kernels.KERNELS


@pytest.fixture(scope="module")
def toy_golden(tmp_path_factory):
    """The toy's golden file, generated into a temporary directory."""
    directory = tmp_path_factory.mktemp("toy_golden")
    with kernels.registered_kernel(ToyKernel), registry.registered_family(FAMILY):
        golden.generate(directory, families=["toy_margin"])
    return directory


def _subprocess_pytest(cwd, *args):
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    env.pop("HYPOTHESIS_PROFILE", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:warnings", "-p", "toy_family.plugin", *args], cwd=cwd,
                          env=env, capture_output=True, text=True)


def test_no_family_lacks_a_declaration(toy):
    """Every consumer takes every family: what a declaration leaves out is listed here (for
    the papers' families and the toy: nothing)."""
    assert {name: family.lacks() for name, family in ALGORITHMS.items()} == {
        name: [] for name in ALGORITHMS}


def test_the_toy_runs_in_both_implementations_under_the_toy_kernel(toy):
    X = np.array([[1.0, 0.5], [-0.5, 1.0], [0.25, -1.0], [1.0, 1.0]])
    y = np.array([1, -1, 1, -1])
    expected = registry.run("toy_margin", X, y, epochs=3, kernel=TOY_KERNEL)
    assert expected.updates and expected.kernel == "toysquare"
    assert registry.get("toy_margin").forms_for(TOY_KERNEL, {}) == ["dual"]
    actual = registry.run("toy_margin", X, y, epochs=3, kernel=TOY_KERNEL, impl="fast")
    assert compare(expected, actual, X).ok


def test_the_differential_suite_takes_the_toy_family_and_kernel(tmp_path):
    """The toy family under every kernel, and every family's kernel forms under the toy
    kernel: one item each, none skipped."""
    done = _subprocess_pytest(TESTS.parent, str(TESTS / "test_differential.py"), "-k",
                              "toy_margin or toysquare", "-p", "no:xdist", "-rA")
    assert done.returncode == 0, done.stdout[-3000:]
    items = [line.split("::")[-1] for line in done.stdout.splitlines()
             if line.startswith("PASSED")]
    assert not [line for line in done.stdout.splitlines() if line.startswith(("SKIPPED",
                                                                              "FAILED"))]
    for family in (*(name for name, f in ALGORITHMS.items() if f.kernel_forms),
                   "toy_margin"):
        assert any(f"[{family}:toysquare:" in item for item in items), (family, items)
    assert any("[toy_margin:linear:" in item for item in items)
    assert any("[toy_margin:rbf:" in item for item in items)


def test_golden_generation_and_the_schema_take_the_toy(toy, toy_golden):
    import jsonschema  # in the [test] extra

    cases = golden.load(toy_golden)
    assert {c.algorithm for c in cases} == {"toy_margin"} and len(cases) == 4
    assert {c.kernel for c in cases} == {"linear", "toysquare"}
    schema = json.loads((toy_golden / golden.TRACE_SCHEMA).read_text())
    assert "toy_margin" in schema["properties"]["algorithm"]["enum"]
    trace = registry.run("toy_margin", cases[-1].X, cases[-1].y, kernel=TOY_KERNEL,
                         impl="fast", record_scores=True)
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(json.loads(trace.to_json())))


def test_check_and_verify_take_the_toy(toy, toy_golden, capsys):
    assert main(["check", "--golden", str(toy_golden)]) == 0
    out = capsys.readouterr().out
    assert "toy_margin" in out and "primal" in out and "dual" in out and " 0 failed" in out
    assert main(["verify", "--golden", str(toy_golden), "--impl", "toy_family.protocol:run",
                 "--kernel", "toysquare"]) == 0
    out = capsys.readouterr().out
    assert "toy_margin" in out and "FAIL" not in out


def test_the_fuzzer_takes_the_toy(toy, tmp_path, capsys):
    assert main(["verify", "--fuzz", "--impl", "toy_family.protocol:run", "--algorithm",
                 "toy_margin", "--fuzz-examples", "20", "--fuzz-out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "toy_margin" in out and "PASS" in out


def test_the_plugin_takes_the_toy(toy_golden):
    done = _subprocess_pytest(toy_golden, "--oracle-impl", "toy_family.protocol:run",
                              "--oracle-golden", str(toy_golden), "--oracle-algorithm",
                              "toy_margin", "-rA")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "test_golden_case[toy_margin:toy_margin.json:1]" in done.stdout
    assert "test_check[toy_margin:mistakes_are_updates]" in done.stdout


def test_the_benchmark_command_takes_the_toy(toy, capsys):
    assert benchmarks.main(["--only", "toy", "--size", "0.05", "--repeat", "1"]) == 0
    assert "toy dual toysquare" in capsys.readouterr().out


def test_the_long_runs_take_the_toy(toy):
    out = io.StringIO()
    assert long_runs.main(["--only", "toy_margin", "--trials", "200"], out=out) == 0
    lines = out.getvalue().splitlines()
    assert any("toy_margin" in line and "toysquare" in line and "agreed" in line
               for line in lines), lines
    assert lines[-1].endswith("every run passed")


def test_the_estimators_take_the_toy(toy):
    X = np.array([[1.0, 0.5], [-0.5, 1.0], [0.25, -1.0], [1.0, 1.0], [-1.0, -0.25]])
    y = np.array([1, -1, 1, -1, -1])
    for kernel in ("linear", TOY_KERNEL):
        model = for_family("toy_margin")(kernel=kernel, epochs=3, theta=0.5).fit(X, y)
        assert type(model).__name__ == "ToyMarginPerceptron"
        assert set(model.predict(X)) <= {-1, 1}
