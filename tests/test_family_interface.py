"""A fast form declared in one place is picked up everywhere (perceptron_oracle/registry.py).

Two toy forms of the Perceptron are registered with ``registry.register_form`` and nothing
else, both declared for any kernel: ``toy_dual``, the shipped dual form behind a counting
wrapper; and ``kernel_blind``, a deliberately wrong dual form that ignores its kernel (it runs
the linear kernel and labels its trace with the kernel it was given, so only its decisions
give it away).  Then:

- the differential suite's item body (``tests/test_differential.compare_forms_on_a_draw``)
  compares ``toy_dual`` on linear and kernel draws, and fails on ``kernel_blind`` with a
  kernel;
- ``perceptron-oracle check`` (``cli.main``) has a row per golden group for each, and fails
  naming ``kernel_blind`` on kernel groups only;
- ``verify.forms_for`` (the forms ``check`` runs on a case) lists them by their declaration;
- the benchmarks collected with a plugin that registers the forms (``pytest -p``) have an
  item for each (tests/benchmarks/test_forms_bench.py); ``toy_dual``'s item runs and passes
  (benchmarks disabled: a correctness check on linear data);
- ``registry.run`` enforces the declarations: kernel, CSR input, the keyword ``engine``.
"""

from __future__ import annotations

import functools
import os
import pathlib
import subprocess
import sys
import textwrap
from collections import Counter
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from perceptron_oracle import cli, golden, registry, verify
from perceptron_oracle.errors import ParamError, UnknownAlgorithmError
from perceptron_oracle.fast import perceptron as fast_perceptron
from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.registry import Form, registered_form
from test_differential import compare_forms_on_a_draw

ROOT = pathlib.Path(__file__).resolve().parents[1]
CALLS: Counter[str] = Counter()


@functools.wraps(fast_perceptron.dual)
def toy_dual(X: Any, y: Any, **kwargs: Any) -> Any:
    """The shipped dual form, counted."""
    CALLS["toy_dual"] += 1
    trace = fast_perceptron.dual(X, y, **kwargs)
    trace.form = "toy_dual"
    return trace


@functools.wraps(fast_perceptron.dual)
def kernel_blind(X: Any, y: Any, *, kernel: Any = "linear", **kwargs: Any) -> Any:
    """Wrong on purpose: the linear kernel whatever ``kernel`` says."""
    CALLS["kernel_blind"] += 1
    trace = fast_perceptron.dual(X, y, kernel="linear", **kwargs)
    trace.kernel = parse_kernel(kernel).spec
    return trace


TOY = Form("toy_dual", toy_dual, kernels="any", engine=True)
BLIND = Form("kernel_blind", kernel_blind, kernels="any", engine=True)

#: A plugin module registering both forms, for a pytest run in a subprocess.
PLUGIN = '''
from perceptron_oracle.fast import perceptron as fast_perceptron
from perceptron_oracle.registry import Form, register_form


def kernel_blind(X, y, *, kernel="linear", **kwargs):
    return fast_perceptron.dual(X, y, kernel="linear", **kwargs)


register_form("perceptron", Form("toy_dual", fast_perceptron.dual, kernels="any"))
register_form("perceptron", Form("kernel_blind", kernel_blind, kernels="any"))
'''


def _one_item(kernel_family: str, draw_for: str | None, compared: list[list[str]]) -> Any:
    """The differential suite's body on 10 derandomized draws of small-integer sequences
    (no shrinking: a failure is reported as found)."""
    @settings(max_examples=10, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate])
    @given(data=st.data())
    def item(data: st.DataObject) -> None:
        compared.append(compare_forms_on_a_draw("perceptron", kernel_family, "small_integers",
                                                draw_for, data))
    return item


@pytest.mark.parametrize("kernel_family,draw_for", [("linear", None), ("poly", "dual")])
def test_the_differential_suite_compares_a_registered_form(kernel_family, draw_for):
    compared: list[list[str]] = []
    CALLS.clear()
    with registered_form("perceptron", TOY):
        _one_item(kernel_family, draw_for, compared)()
    assert compared and all("toy_dual" in forms for forms in compared)
    assert CALLS["toy_dual"] >= len(compared)
    expected = ["primal", "dual", "toy_dual"] if kernel_family == "linear" else ["dual",
                                                                                  "toy_dual"]
    assert compared[0] == expected
    assert "toy_dual" not in registry.get("perceptron").forms      # removed after the block


def test_the_differential_suite_fails_on_a_wrong_registered_form():
    compared: list[list[str]] = []
    with registered_form("perceptron", BLIND):
        _one_item("linear", None, compared)()           # right with the linear kernel
        assert compared and all("kernel_blind" in forms for forms in compared)
        with pytest.raises(AssertionError, match=r"form kernel_blind: trial \d+"):
            _one_item("poly", "dual", [])()


def test_check_runs_a_registered_form_and_fails_a_wrong_one(capsys):
    cases = [c for c in golden.load() if c.algorithm == "perceptron"]
    groups = {(c.file, c.group) for c in cases}
    linear = {(c.file, c.group) for c in cases if c.kernel == "linear"}
    assert len(linear) < len(groups)                    # the golden set has kernel groups
    CALLS.clear()
    with registered_form("perceptron", TOY):
        assert cli.main(["check", "--algorithm", "perceptron"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("perceptron ")]
    toy_rows = [r for r in rows if r[1] == "toy_dual"]
    assert len(toy_rows) == len(groups)                 # every group: it takes any kernel
    assert all(r[3] == r[4] for r in toy_rows)          # cases == passed
    assert CALLS["toy_dual"] == len(cases)
    assert out.splitlines()[-1] == f"{len(cases) + sum(len(verify.forms_for(c)) for c in cases)}" \
                                   " passed, 0 failed"

    with registered_form("perceptron", BLIND):
        assert cli.main(["check", "--algorithm", "perceptron"]) == 1
    out = capsys.readouterr().out
    failures = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert failures and all(line.startswith("FAIL perceptron:kernel_blind:")
                            for line in failures)
    blind_rows = [r for r in (line.split() for line in out.splitlines()
                              if line.startswith("perceptron ")) if r[1] == "kernel_blind"]
    assert len(blind_rows) == len(groups)
    for row in blind_rows:                              # cases == passed iff a linear group
        file, group = row[2].split("#")
        assert (row[3] == row[4]) == ((file, int(group)) in linear), row


def test_verify_lists_the_forms_each_case_takes():
    cases = [c for c in golden.load() if c.algorithm == "perceptron"]
    kernel_case = next(c for c in cases if c.kernel != "linear")
    linear_case = next(c for c in cases if c.kernel == "linear")
    dense_linear = Form("dense_linear", fast_perceptron.primal, sparse=False)
    with registered_form("perceptron", TOY), registered_form("perceptron", dense_linear):
        assert verify.forms_for(linear_case) == ["primal", "dual", "toy_dual", "dense_linear"]
        assert verify.forms_for(kernel_case) == ["dual", "toy_dual"]
        rows = registry.implementations()
        assert ("perceptron", "fast", "toy_dual") in rows
    assert verify.forms_for(linear_case) == ["primal", "dual"]


def test_the_benchmarks_collect_and_run_a_registered_form(tmp_path):
    (tmp_path / "toy_forms_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    bench = "tests/benchmarks/test_forms_bench.py"
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "toy_forms_plugin",
            "-q", bench]
    collected = subprocess.run([*base, "--collect-only"], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=300)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    items = [line for line in collected.stdout.splitlines() if "::test_form[" in line]
    assert f"{bench}::test_form[perceptron:toy_dual]" in items
    assert f"{bench}::test_form[perceptron:kernel_blind]" in items
    assert len(items) == sum(len(a.forms) for a in registry.ALGORITHMS.values()) + 2
    ran = subprocess.run([*base, "-k", "toy_dual"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed, " in ran.stdout


def test_run_follows_the_declarations():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.5]])
    y = np.array([1, -1, 1, -1])
    dense_only = Form("dense_primal", fast_perceptron.primal, sparse=False)
    with registered_form("perceptron", TOY), registered_form("perceptron", dense_only):
        trace = registry.run("perceptron", X, y, impl="fast", form="toy_dual",
                             kernel="rbf:gamma=1", engine="numpy")
        assert trace.form == "toy_dual"
        with pytest.raises(ParamError, match="dense_primal takes the linear kernel only"):
            registry.run("perceptron", X, y, impl="fast", form="dense_primal",
                         kernel="rbf:gamma=1")
        with pytest.raises(ParamError, match="dense_primal takes dense X only"):
            registry.run("perceptron", sp.csr_matrix(X), y, impl="fast", form="dense_primal")
        algo = registry.get("perceptron")
        assert "dense_primal" in algo.forms_for("linear", {})
        assert "dense_primal" not in algo.forms_for("linear", {}, sparse=True)
    with pytest.raises(ParamError, match="higher_order form dual has no engine choice"):
        registry.run("higher_order", X, y, impl="fast", form="dual", engine="numpy")
    with pytest.raises(ParamError, match="fast forms only"):
        registry.run("perceptron", X, y, engine="numpy")
    for name, form in (("perceptron", "primal"), ("second_order", "primal"),
                       ("higher_order", "implicit")):
        fast = registry.run(name, X, y, impl="fast", form=form, engine="numpy", epochs=2)
        assert fast.mistakes == registry.run(name, X, y, epochs=2).mistakes


def test_registration_is_checked():
    with pytest.raises(ValueError, match="already has a fast form 'dual'"):
        registry.register_form("perceptron", Form("dual", toy_dual))
    with pytest.raises(UnknownAlgorithmError, match="unknown algorithm 'adaline'"):
        registry.register_form("adaline", TOY)
    with pytest.raises(UnknownAlgorithmError, match="no fast form 'toy_dual'"):
        registry.unregister_form("perceptron", "toy_dual")
    with pytest.raises(ValueError, match="other than 'reference'"):
        Form("reference", toy_dual)
    with pytest.raises(ValueError, match="kernels is 'linear' or 'any'"):
        Form("toy", toy_dual, kernels="poly")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError), registered_form("perceptron", TOY):
        raise RuntimeError
    assert registry.get("perceptron").forms == ("primal", "dual")   # removed on the way out
    removed = registry.unregister_form("perceptron", "dual")
    try:
        assert registry.get("perceptron").forms == ("primal",)
    finally:
        registry.register_form("perceptron", removed)
    assert registry.get("perceptron").forms == ("primal", "dual")
