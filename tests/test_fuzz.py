"""Differential fuzzing (perceptron_oracle/fuzz.py): the planted bugs of tests/wrong_*.py are
found and shrunk to a handful of examples, and the replay directory fails under ``verify`` at
the same first diverging trial; the plain Perceptron of examples/python survives and its tie
bug is found; the project's fast forms survive; a seed gives the same report twice.

CI runs the planted bugs found in under 2.5 s and 40 draws per fast form;
``HYPOTHESIS_PROFILE=thorough`` (by hand) runs every planted bug and 1,000 draws per
algorithm and fast form.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import wrong_alma
import wrong_higher_order
import wrong_perceptrons
import wrong_romma_pumma
import wrong_second_order
from perceptron_oracle import fuzz, golden, verify
from perceptron_oracle.cli import main as cli_main
from perceptron_oracle.properties import strategies
from perceptron_oracle.registry import ALGORITHMS, get

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
TESTS = pathlib.Path(__file__).parent
PLAIN = TESTS.parent / "examples" / "python" / "plain.py"

#: Each module of planted bugs and the algorithms it plants them in, in the order tried: a
#: bug is looked for in the next one only when the first shows nothing.
PLANTED = {wrong_perceptrons: ["perceptron"],
           wrong_higher_order: ["higher_order", "pnorm_perceptron"],
           wrong_second_order: ["second_order"],
           wrong_romma_pumma: ["pumma", "romma"],
           wrong_alma: ["alma"]}
#: Planted bugs that CI leaves to the by-hand run (HYPOTHESIS_PROFILE=thorough): each takes
#: more than 2.5 s (found after 60 to 150 draws, or looked for in vain in a first algorithm).
BY_HAND = {"wrong_perceptrons:lambda_mistaken", "wrong_higher_order:gradient_exponent",
           "wrong_higher_order:theorem1_no_abs", "wrong_second_order:rank_one_sign",
           "wrong_second_order:pinv_as_inverse", "wrong_second_order:adaptive_off_by_one",
           "wrong_alma:p_ignored", "wrong_alma:pnorm_no_abs"}


def _rational_only(impl):
    """wrong_second_order computes exactly and takes rational kernels only (it raises
    ValueError on a Gaussian one): the Gaussian draws do not apply to it."""
    def run(algorithm, X, y, *, epochs, kernel, params):
        if kernel.startswith("rbf"):
            raise NotImplementedError("rational kernels only")
        return impl(algorithm, X, y, epochs=epochs, kernel=kernel, params=params)
    return run


def _target(module, name):
    impl = getattr(module, name)
    return _rational_only(impl) if module is wrong_second_order else impl


def _mutants():
    out = []
    for module in PLANTED:
        for name in module.MUTATIONS:
            if not name:
                continue
            key = f"{module.__name__}:{name}"
            marks = [pytest.mark.skip(reason="by hand: HYPOTHESIS_PROFILE=thorough")] \
                if key in BY_HAND and not THOROUGH else []
            out.append(pytest.param(module, name, id=key, marks=marks))
    return out


def test_the_lists_name_planted_bugs():
    known = {f"{m.__name__}:{n}" for m in PLANTED for n in m.MUTATIONS if n}
    assert BY_HAND <= known


def _first_failure(impl, algorithms, tmp_path, **kwargs):
    for algorithm in algorithms:
        report = fuzz.fuzz(impl, [algorithm], out_dir=tmp_path / algorithm, **kwargs)
        if not report.ok:
            return report
    return None


@pytest.mark.parametrize("module, mutation", _mutants())
def test_a_planted_bug_is_found_shrunk_and_replayed(module, mutation, tmp_path, capsys):
    key = f"{module.__name__}:{mutation}"
    report = _first_failure(_target(module, mutation), PLANTED[module], tmp_path)
    assert report is not None, f"{key} ({module.MUTATIONS[mutation]}) survived the fuzzer"
    result = report.failures[0]
    finding = result.finding
    assert finding is not None, result.reason
    assert len(finding.draw.y) <= 6, report.describe()
    # the fuzzer's own replay, and `verify` on the directory, fail where the finding does
    assert result.replay_first_divergence == finding.first_divergence
    assert result.replay_message.startswith("FAIL "), report.describe()
    capsys.readouterr()
    assert cli_main(["verify", "--impl", key, "--golden", str(report.replay_dir),
                     "--quiet"]) == 1
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("FAIL"))
    if finding.first_divergence is not None:
        assert f": trial {finding.first_divergence} (example" in line, line
        assert f"exact score {finding.score}" in report.describe()
    else:
        assert "final" in line or "raised" in line, line


@pytest.mark.parametrize("kernel", ["linear", "poly:degree=2,coef0=1,gamma=1"])
def test_second_order_a_is_put_next_to_where_a_decision_changes(kernel):
    """The Second-Order Perceptron's a near a decision boundary (strategies._first_boundary): with
    a_k a little below and a little above the value found, the exact runs first decide
    differently at a trial with k - 1 mistakes before it, the score's sign flipped there."""
    X = np.array([[1.0, 0.0], [1.0, 1.0], [3.0, 0.5], [-1.0, 2.0]])
    y = np.array([1, -1, 1, 1])
    found = strategies._first_boundary(fuzz.Draw(X, y, {}, kernel, 2))
    assert found is not None
    value, k = found
    reference = get("second_order").implementation("reference")
    runs = [reference(X, y, epochs=2, kernel=kernel, record_scores=True, a_growth="linear",
                      a=strategies._dyadic(Fraction(value * side / k)))
            for side in strategies._SIDES]
    t = min(set(runs[0].mistakes) ^ set(runs[1].mistakes))
    assert sum(m < t for m in runs[0].mistakes) == k - 1
    assert (runs[0].scores[t] > 0) != (runs[1].scores[t] > 0)


# -- the plain Perceptron --------------------------------------------------------------------

@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """plain.py and plain_tie.py (a zero score counted as correct) importable from the
    current directory; the modules are forgotten afterwards."""
    shutil.copy(PLAIN, tmp_path / "plain.py")
    text = PLAIN.read_text()
    assert "(x @ w + b) <= 0:" in text
    (tmp_path / "plain_tie.py").write_text(text.replace("(x @ w + b) <= 0:", "(x @ w + b) < 0:"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("sys.modules", dict(sys.modules))
    return tmp_path


def test_plain_perceptron_survives_and_is_not_applicable_elsewhere(user_dir):
    import plain

    report = fuzz.fuzz(plain.run, ["perceptron", "romma"], examples=1000 if THOROUGH else 60)
    perceptron, romma = report.results
    assert perceptron.status == fuzz.PASS, report.describe()
    assert perceptron.checked == (1000 if THOROUGH else 60)
    assert perceptron.not_applicable  # tau, lam, alpha_bound and kernels were drawn
    assert romma.status == fuzz.NOT_APPLICABLE and romma.reason == "only the perceptron, not romma"
    assert report.ok and report.replay_dir is None


def test_plain_perceptron_tie_bug_is_found_at_a_zero_score(user_dir, capsys):
    assert cli_main(["verify", "--fuzz", "--impl", "plain_tie:run", "--algorithm",
                     "perceptron", "--fuzz-out", "replay"]) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert captured.err.startswith("perceptron: fail (")  # the progress line, one per algorithm
    assert "FAIL perceptron" in out
    assert "X = [[0]]" in out and "y = [1]" in out   # one example, the zero instance
    assert ("first divergence: trial 0 (example 0, label +1): expected mistake and update, "
            "got no mistake, no update; exact score 0") in out
    assert "replay: perceptron-oracle verify --impl plain_tie:run --golden replay" in out
    assert cli_main(["verify", "--impl", "plain_tie:run", "--golden", "replay"]) == 1
    assert "trial 0 (example 0): expected mistake, got the opposite; exact score 0" in \
        capsys.readouterr().out
    assert cli_main(["verify", "--impl", "plain:run", "--golden", "replay"]) == 0


# -- the project's fast forms ----------------------------------------------------------------

FORMS = sorted({(a.name, form) for a in ALGORITHMS.values() for form in a.forms})


def _fast(form):
    def run(algorithm, X, y, *, epochs, kernel, params):
        if form not in get(algorithm).forms_for(kernel, params):
            raise NotImplementedError(f"the {form} form does not take {kernel} with these "
                                      "parameters")
        return get(algorithm).implementation("fast", form)(X, y, epochs=epochs,
                                                           kernel=kernel, **params)
    return run


@pytest.mark.parametrize("algorithm, form", FORMS, ids=[f"{a}-{f}" for a, f in FORMS])
def test_the_fast_forms_survive(algorithm, form):
    examples = 1000 if THOROUGH else 40
    report = fuzz.fuzz(_fast(form), [algorithm], examples=examples, seed=1)
    result = report.results[0]
    assert result.status == fuzz.PASS, report.describe()
    assert result.checked == examples


# -- determinism, other outcomes, the command line, the plugin -------------------------------

def test_a_seed_gives_the_same_shrunk_report(tmp_path):
    def run(seed, name):
        report = fuzz.fuzz(wrong_perceptrons.alpha_off_by_one, ["perceptron"], seed=seed,
                           out_dir=tmp_path / name)
        record = report.record()["results"][0]
        record.pop("seconds")
        return record, (tmp_path / name / "fuzz_perceptron.json").read_bytes()

    first, again = run(3, "a"), run(3, "b")
    assert first == again
    assert first[0]["status"] == "fail" and first[0]["finding"]["first_divergence"] is not None


def test_an_exception_is_a_finding_and_the_replay_fails_with_it(tmp_path):
    """An implementation that fails on a zero instance: the fuzzer shrinks to it."""
    reference = get("perceptron").implementation("reference")

    def crashes(algorithm, X, y, *, epochs, kernel, params):
        if not np.all(X.any(axis=1)):
            raise ZeroDivisionError("normalising a zero row")
        return reference(X, y, epochs=epochs, kernel=kernel, **params)

    report = fuzz.fuzz(crashes, ["perceptron"], examples=50, out_dir=tmp_path)
    finding = report.failures[0].finding
    assert finding.message == "raised ZeroDivisionError: normalising a zero row"
    assert finding.draw.X.tolist() == [[0.0]] and finding.first_divergence is None
    cases = golden.load(tmp_path)
    [result] = verify.verify(cases, lambda c: verify.run_external(c, crashes))
    assert result.status == verify.FAIL and "ZeroDivisionError" in result.message


def test_a_nondeterministic_implementation_is_named(tmp_path):
    reference = get("perceptron").implementation("reference")
    calls = []

    def sometimes(algorithm, X, y, *, epochs, kernel, params):
        calls.append(1)
        trace = reference(X, y, epochs=epochs, kernel=kernel, **params)
        if len(calls) % 3 == 2:   # drops its mistakes on every third call
            trace.mistakes, trace.updates = [], []
        return trace

    report = fuzz.fuzz(sometimes, ["perceptron"], examples=30, out_dir=tmp_path)
    assert not report.ok
    assert "not deterministic" in report.failures[0].reason
    assert "not deterministic" in report.describe()


def test_a_draw_never_taken_is_not_applicable_with_the_reason():
    def declines(algorithm, X, y, *, epochs, kernel, params):
        raise NotImplementedError("nothing implemented")

    report = fuzz.fuzz(declines, ["second_order"], examples=20)
    assert report.results[0].status == fuzz.NOT_APPLICABLE
    assert report.results[0].reason == "nothing implemented"
    assert report.ok and "N/A  second_order: nothing implemented" in report.describe()


def test_every_registered_algorithm_is_fuzzed_by_default():
    report = fuzz.fuzz(lambda *a, **k: (_ for _ in ()).throw(NotImplementedError("no")),
                       examples=1)
    assert [r.algorithm for r in report.results] == list(ALGORITHMS)


@pytest.mark.parametrize("argv, message", [
    (["--fuzz", "--impl", "no_such_module:f"], "cannot import 'no_such_module'"),
    (["--fuzz", "--impl", "wrong_perceptrons:correct", "--algorithm", "nope"],
     "unknown algorithm"),
    (["--fuzz", "--impl", "wrong_perceptrons:correct", "--fuzz-examples", "0"],
     "--fuzz-examples must be at least 1, got 0"),
    (["--fuzz", "--impl", "wrong_perceptrons:correct", "--fuzz-examples", "many"],
     "--fuzz-examples: invalid int value"),
    (["--fuzz", "--results", "."], "give --impl MODULE:CALLABLE, not --results"),
    (["--fuzz", "--impl", "wrong_perceptrons:correct", "--golden", "."],
     "--golden applies to the golden cases, not to --fuzz"),
    (["--fuzz", "--impl", "wrong_perceptrons:correct", "--strict"],
     "--strict applies to the golden cases, not to --fuzz"),
    (["--impl", "wrong_perceptrons:correct", "--fuzz-seed", "3"],
     "--fuzz-seed applies with --fuzz only"),
    (["--impl", "wrong_perceptrons:correct", "--kernel", "poly:degree=2"],
     "--kernel poly:degree=2: no such kernel (known: linear, poly, rbf)"),
])
def test_verify_refuses_bad_input_in_one_line(argv, message, capsys):
    assert cli_main(["verify", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and message in captured.err, captured.err
    assert captured.out == ""


def test_verify_fuzz_passes_a_correct_implementation(capsys):
    assert cli_main(["verify", "--fuzz", "--impl", "wrong_perceptrons:correct", "--algorithm",
                     "perceptron", "--fuzz-examples", "20", "--fuzz-seed", "5", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "PASS perceptron: no disagreement in 20 draws" in captured.out
    assert captured.err == ""  # --quiet: no progress lines


def test_verify_fuzz_fails_when_every_draw_is_declined(tmp_path, monkeypatch, capsys):
    (tmp_path / "declines.py").write_text(
        "def run(algorithm, X, y, *, epochs, kernel, params):\n"
        "    raise NotImplementedError('nothing implemented')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.modules", dict(sys.modules))
    assert cli_main(["verify", "--fuzz", "--impl", "declines:run", "--algorithm", "romma",
                     "--fuzz-examples", "5", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "N/A  romma: nothing implemented" in captured.out
    assert captured.err == "nothing was checked: the implementation declined every draw\n"


@pytest.mark.skipif(shutil.which("perceptron-oracle") is None,
                    reason="console script not on PATH (package not installed as the README says)")
def test_the_installed_command_fuzzes(tmp_path):
    """``perceptron-oracle verify --fuzz`` as a user types it, from the console script."""
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    done = subprocess.run(
        ["perceptron-oracle", "verify", "--fuzz",
         "--impl", "wrong_perceptrons:tie_rule", "--algorithm", "perceptron",
         "--fuzz-out", "replay"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "FAIL perceptron" in done.stdout and "first divergence: trial 0" in done.stdout
    assert (tmp_path / "replay" / "manifest.json").is_file()


def test_the_plugin_runs_the_fuzz_tests(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    env.pop("HYPOTHESIS_PROFILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:warnings",
         "-k", "test_fuzz", "--oracle-impl", "wrong_perceptrons:tie_rule",
         "--oracle-algorithm", "perceptron", "--oracle-fuzz", "--oracle-fuzz-examples", "50"],
        cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "FAILED" in done.stdout and "test_fuzz[perceptron]" in done.stdout
    assert "first divergence: trial 0" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("1 failed, ")
