"""The pytest plugin: ``pytest --oracle-impl MODULE:CALLABLE`` in an outside project: the
golden cases and the checks of ``properties/checks.py``, one item each."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

TESTS = pathlib.Path(__file__).parent
PLAIN = TESTS.parent / "examples" / "python" / "plain.py"


def _plain(tmp_path, zero_is_correct=False):
    """plain.py in tmp_path (the example: a Perceptron with w and b only); with
    ``zero_is_correct`` the Perceptron that counts a zero score as correct (y s < 0 is a
    mistake)."""
    text = PLAIN.read_text()
    marker = "if label * (x @ w + b) <= 0"
    assert marker in text
    if zero_is_correct:
        text = text.replace(marker, "if label * (x @ w + b) < 0")
    (tmp_path / "plain.py").write_text(text)


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


@pytest.mark.parametrize("args, message", [
    (["--oracle-fuzz"], "--oracle-fuzz needs --oracle-impl MODULE:CALLABLE"),
    (["--oracle-impl", "wrong_perceptrons:correct", "--oracle-fuzz",
      "--oracle-fuzz-examples", "0"], "--oracle-fuzz-examples must be at least 1, got 0"),
])
def test_plugin_refuses_fuzz_options_it_cannot_use(tmp_path, args, message):
    done = _pytest(tmp_path, *args)
    assert done.returncode == 4  # pytest's usage error
    assert message in done.stderr


def test_plugin_fuzzes_the_plain_perceptron_without_a_failure(tmp_path):
    _plain(tmp_path)
    done = _pytest(tmp_path, "--oracle-impl", "plain:run", "--oracle-fuzz",
                   "--oracle-fuzz-examples", "30", "-k", "test_fuzz", "-rs")
    assert done.returncode == 0, done.stdout[-3000:]
    # one test per algorithm: the Perceptron's passes, every other is skipped with the reason
    assert "1 passed, 6 skipped" in done.stdout
    assert "romma not applicable: only the perceptron, not romma" in done.stdout


def test_plugin_runs_a_plain_perceptron_with_skips_and_no_failure(tmp_path):
    _plain(tmp_path)
    done = _pytest(tmp_path, "--oracle-impl", "plain:run", "--oracle-algorithm", "perceptron",
                   "-rs")
    out = done.stdout
    assert done.returncode == 0, out[-3000:]
    assert " passed" in out and " skipped" in out and "failed" not in out
    assert "KeyError" not in out and "KeyError" not in done.stderr
    # the checks: the textbook Perceptron and Novikoff apply; the bookkeeping needs alpha
    assert "not applicable: the trace reports no final.alpha" in out
    assert "not applicable: no alpha-bound" in out          # a golden case, with its reason
    # only the perceptron's items were collected
    assert "higher_order" not in out and "romma" not in out


def test_plugin_fails_the_plain_perceptron_that_counts_a_zero_score_as_correct(tmp_path):
    _plain(tmp_path, zero_is_correct=True)
    done = _pytest(tmp_path, "--oracle-impl", "plain:run", "--oracle-algorithm", "perceptron",
                   "-k", "test_check or json:1]")     # one golden case is enough here
    out = done.stdout
    assert done.returncode == 1
    assert "test_golden_case[perceptron:perceptron.json:1]" in out
    assert "trial 0 (example 0): expected mistake, got the opposite; exact score 0" in out
    assert "test_check[perceptron:textbook]" in out and "Khardon and G. Wachman" in out


def test_plugin_passes_the_fast_forms_of_every_family_on_every_check(tmp_path):
    from perceptron_oracle.registry import ALGORITHMS

    done = _pytest(tmp_path, "--oracle-impl", "fast_protocol:run", "-k", "test_check", "-rA")
    out = done.stdout
    assert done.returncode == 0, out[-3000:]
    every = [c.id for family in ALGORITHMS.values() for c in family.invariant_checks]
    assert f"{len(every)} passed" in out and "skipped" not in out and "failed" not in out
    for item in every:
        assert f"test_check[{item}]" in out, item


@pytest.mark.parametrize("target, algorithm, check", [
    ("wrong_higher_order:rho_not_decayed", "higher_order", "higher_order:r_range"),
    ("wrong_second_order:tie_rule", "second_order", "second_order:large_a"),
    ("wrong_romma_pumma:rhs_one", "pumma", "pumma:lemma4"),
])
def test_plugin_checks_catch_a_planted_bug_of_each_family(tmp_path, target, algorithm, check):
    done = _pytest(tmp_path, "--oracle-impl", target, "--oracle-algorithm", algorithm,
                   "-k", "test_check")
    assert done.returncode == 1, done.stdout[-3000:]
    assert f"FAILED ::test_check[{check}]" in done.stdout.replace(
        "conformance_tests.py::", "::"), done.stdout[-3000:]
