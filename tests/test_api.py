"""The public surface: one protocol for every implementation, the pure reference, ``run``."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest

from perceptron_oracle import run
from perceptron_oracle.errors import DataError, ParamError, UnknownAlgorithmError
from perceptron_oracle.fast._compiled import ENGINES
from perceptron_oracle.registry import ALGORITHMS, implementations


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_form_has_the_references_signature(name):
    """Every form of an algorithm takes the same parameters, with the same defaults, as its
    reference, and those are exactly the parameter schema's (CPython's decimal twins test)."""
    algo = ALGORITHMS[name]
    reference = inspect.signature(algo.implementation("reference"))
    schema = algo.params
    keyword = [p for p in reference.parameters.values() if p.kind is p.KEYWORD_ONLY]
    params = {p.name: p.default for p in keyword}
    assert set(schema.params) <= set(params)
    for pname, param in schema.params.items():
        assert param.read(params[pname]) == param.read(param.default), pname
    assert [p.name for p in reference.parameters.values()][:2] == ["X", "y"]
    for form in algo.forms:
        assert without_engine(algo.implementation("fast", form)) == reference, form


def without_engine(function) -> inspect.Signature:
    """A fast form's signature without ``engine`` (the compiled forms' choice of loop,
    fast._compiled.ENGINES): the one keyword a fast form may add to its reference's."""
    signature = inspect.signature(function)
    engine = signature.parameters.get("engine")
    if engine is not None:
        assert engine.kind is engine.KEYWORD_ONLY and engine.default == ENGINES[0]
        signature = signature.replace(parameters=[p for p in signature.parameters.values()
                                                  if p.name != "engine"])
    return signature


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_forms_declare_what_they_take(name):
    """A form declares ``engine`` iff its signature has it; the declarations and the derived
    lists agree (kernel_forms, p2_forms, engine_forms)."""
    algo = ALGORITHMS[name]
    for form in algo.declared:
        assert ("engine" in inspect.signature(form.run).parameters) == form.engine, form.name
    assert algo.forms == tuple(f.name for f in algo.declared)
    assert set(algo.kernel_forms) == {f.name for f in algo.declared if f.kernels == "any"}
    assert set(algo.p2_forms) == {f.name for f in algo.declared if f.p2_only}
    assert set(algo.engine_forms) == {f.name for f in algo.declared if f.engine}


def test_registry_lists_reference_first():
    rows = implementations()
    assert ("perceptron", "reference", "reference") in rows
    assert rows.index(("perceptron", "reference", "reference")) < rows.index(
        ("perceptron", "fast", "primal"))


@pytest.mark.parametrize("family", ["perceptron", "higher_order", "pnorm_perceptron",
                                    "second_order", "romma"])
def test_reference_imports_with_numpy_blocked(family):
    """The reference is pure Python: importing and running it must not need numpy (PUMMA's
    and ALMA's float64 error models use numpy: reference/__init__.py)."""
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith(("numpy.", "scipy")):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
from perceptron_oracle.reference.FAMILY import FAMILY as run
trace = run([[1.0, 0.0], [0.0, 1.0]], [1, -1], epochs=2, kernel="KERNEL")
assert "numpy" not in sys.modules, "numpy was imported"
print(trace.mistakes)
"""
    kernel = "linear" if family == "pnorm_perceptron" else "poly:degree=2"   # its only one
    done = subprocess.run([sys.executable, "-c", code.replace("FAMILY", family)
                           .replace("KERNEL", kernel)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0, 1]"


def test_run_picks_forms_and_rejects_bad_requests():
    X, y = np.eye(3), np.array([1, -1, 1])
    assert run("perceptron", X, y).form == "reference"
    assert run("perceptron", X, y, impl="fast").form == "primal"
    assert run("perceptron", X, y, impl="fast", kernel="rbf:gamma=1").form == "dual"
    with pytest.raises(UnknownAlgorithmError, match="unknown algorithm"):
        run("adaline", X, y)
    with pytest.raises(UnknownAlgorithmError, match="implementation"):
        run("perceptron", X, y, impl="gpu")
    with pytest.raises(UnknownAlgorithmError, match="no fast form"):
        run("perceptron", X, y, impl="fast", form="implicit")
    with pytest.raises(ParamError, match="unknown parameter"):
        run("perceptron", X, y, rho=1)
    with pytest.raises(ParamError, match="epochs"):
        run("perceptron", X, y, epochs=0)
    for impl, form in (("reference", None), ("fast", "primal"), ("fast", "dual")):
        with pytest.raises(DataError, match="label"):
            run("perceptron", X, np.array([1, 0, 1]), impl=impl, form=form)
        with pytest.raises(DataError, match="NaN"):
            run("perceptron", np.full((3, 3), np.nan), y, impl=impl, form=form)


def test_run_leaves_its_input_alone():
    X, y = np.eye(3), np.array([1, -1, 1])
    X0, y0 = X.copy(), y.copy()
    for impl, form in (("reference", None), ("fast", "primal"), ("fast", "dual")):
        run("perceptron", X, y, impl=impl, form=form, epochs=2, tau=1)
    assert np.array_equal(X, X0) and np.array_equal(y, y0)


_X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.5, -1.0]])
_Y = np.array([1, -1, 1])


@pytest.mark.parametrize("X, y, epochs, error, message", [
    (np.array([1.0, 2.0, 3.0]), _Y, 1, DataError, "X must be 2-dimensional"),
    (_X.astype(complex), _Y, 1, DataError, "X is complex|non-number"),
    (_X, _Y.astype(complex), 1, DataError, r"y is complex|label \(1\+0j\)"),
    (_X, _Y, 10**30, ParamError, r"epochs must be at most 2\^63 - 1"),
], ids=["X 1-D", "X complex", "y complex", "epochs beyond int64"])
@pytest.mark.parametrize("impl", ["reference", "fast"])
def test_bad_input_is_one_line_in_every_implementation(X, y, epochs, error, message, impl):
    """No traceback from deep inside, no warning, nothing silently changed (a complex X was
    cast to its real parts with a numpy warning; a 1-D X raised TypeError in the
    reference; 10^30 epochs ran for ever, or failed allocating)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error, match=message) as info:
            run("perceptron", X, y, impl=impl, epochs=epochs)
    assert "\n" not in str(info.value)
