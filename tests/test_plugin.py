"""The pytest plugin: ``pytest --oracle-impl MODULE:CALLABLE`` in an outside project."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

TESTS = pathlib.Path(__file__).parent


def _pytest(tmp_path, *args):
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    env.pop("HYPOTHESIS_PROFILE", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:warnings", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True)


def test_plugin_passes_a_correct_implementation(tmp_path):
    done = _pytest(tmp_path, "--oracle-impl", "wrong_perceptrons:correct",
                   "--oracle-algorithm", "perceptron")
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


def test_plugin_fails_a_wrong_implementation_case_by_case(tmp_path):
    done = _pytest(tmp_path, "--oracle-impl", "wrong_perceptrons:tie_rule",
                   "--oracle-algorithm", "perceptron")
    assert done.returncode == 1
    assert "test_golden_case[perceptron:perceptron.json:2]" in done.stdout  # one item a case
    assert "expected mistake" in done.stdout


def test_plugin_names_an_unimportable_target(tmp_path):
    done = _pytest(tmp_path, "--oracle-impl", "no_such_module:f")
    assert done.returncode == 4  # pytest's usage error
    assert "cannot import 'no_such_module'" in done.stderr
