"""Partial conformance: an outside implementation says what it implements, and the verdict
says exactly what was checked (CONTRACT.md, "Partial conformance").

The implementation under test is the README's plain Perceptron (examples/python/plain.py: w
and b only; eta, b0, C; linear kernel; NotImplementedError for anything else), imported the
way a user runs it: ``--impl plain:run`` from the directory that holds plain.py.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from perceptron_oracle import golden, verify
from perceptron_oracle.cli import main

PLAIN = pathlib.Path(__file__).parent.parent / "examples" / "python" / "plain.py"


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """A user's directory holding plain.py and plain_tie.py (a zero score counted as
    correct), as the current directory; the modules are forgotten afterwards."""
    shutil.copy(PLAIN, tmp_path / "plain.py")
    text = PLAIN.read_text()
    assert "(x @ w + b) <= 0:" in text
    (tmp_path / "plain_tie.py").write_text(text.replace("(x @ w + b) <= 0:", "(x @ w + b) < 0:"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # undone after the test, with the modules
    monkeypatch.setattr("sys.modules", dict(__import__("sys").modules))
    return tmp_path


def test_impl_is_found_in_the_current_directory(user_dir, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(user_dir))])
    assert callable(verify.load_callable("plain:run"))


def test_plain_perceptron_passes_with_its_not_applicable_cases_listed(user_dir, capsys):
    report = user_dir / "report.json"
    assert main(["verify", "--impl", "plain:run", "--algorithm", "perceptron",
                 "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "N/A  perceptron.json:" in out and "linear kernel only" in out
    assert "keys not reported: final.alpha" in out
    records = json.loads(report.read_text())["cases"]
    cases = [c for c in golden.load() if c.algorithm == "perceptron"]
    assert [r["case"] for r in records] == [c.name for c in cases]
    by_status = {s: [r for r in records if r["status"] == s]
                 for s in ("pass", "fail", "not_applicable")}
    assert by_status["pass"] and by_status["not_applicable"] and not by_status["fail"]
    # exactly the cases with a parameter or kernel plain.py does not implement are N/A
    for record, case in zip(records, cases):
        unsupported = (case.kernel != "linear" or case.params["tau"] or case.params["lam"]
                       or case.params["alpha_bound"] is not None)
        assert (record["status"] == "not_applicable") == bool(unsupported), record
    for record in by_status["pass"]:  # an excused case stops before the final state
        assert record["excused"] or set(record["not_reported"]) == {"final.alpha", "final.votes",
                                               "final.longest_survivor", "final.averaged"}


def test_zero_score_counted_as_correct_fails_at_the_first_tie(user_dir, capsys):
    assert main(["verify", "--impl", "plain_tie:run", "--algorithm", "perceptron",
                 "--quiet"]) == 1
    out = capsys.readouterr().out
    first = next(line for line in out.splitlines() if line.startswith("FAIL"))
    assert first.startswith("FAIL perceptron.json:1 ")
    assert "trial 0 (example 0): expected mistake, got the opposite; exact score 0" in first


def test_strict_makes_not_applicable_and_unreported_keys_failures(user_dir, capsys):
    assert main(["verify", "--impl", "plain:run", "--algorithm", "perceptron", "--quiet",
                 "--strict"]) == 1
    out = capsys.readouterr().out
    assert "not applicable (--strict): linear kernel only" in out
    assert "final state not reported (--strict): final.alpha" in out


def test_nothing_checked_is_a_failure(user_dir, capsys):
    """Every higher_order case is not applicable to plain.py: exit 1, said on stderr."""
    assert main(["verify", "--impl", "plain:run", "--algorithm", "higher_order"]) == 1
    captured = capsys.readouterr()
    assert "0 passed, 0 failed" in captured.out
    assert "nothing was checked" in captured.err


def test_unknown_algorithm_is_an_input_error(user_dir, capsys):
    assert main(["verify", "--impl", "plain:run", "--algorithm", "perceptorn"]) == 2
    assert "unknown algorithm 'perceptorn'" in capsys.readouterr().err


def test_a_key_that_is_reported_is_compared(user_dir):
    """Partial conformance compares what is reported: a wrong b fails, even with w right."""
    import plain

    case = next(c for c in golden.load() if c.algorithm == "perceptron"
                and c.params["C"] and not c.params["tau"] and not c.params["lam"]
                and c.params["alpha_bound"] is None and c.kernel == "linear")
    trace = plain.run("perceptron", case.X, case.y, epochs=case.epochs, kernel=case.kernel,
                      params=dict(case.params))
    assert verify.judge(case, trace).ok
    trace["final"]["b"] += 1.0
    result = verify.judge(case, trace)
    assert result.status == verify.FAIL and result.message.startswith("final.b:")
    del trace["final"]["b"]
    result = verify.judge(case, trace)
    assert result.ok and "final.b" in result.not_reported
    assert not verify.judge(case, trace, partial=False).ok  # the project's own forms


def test_an_import_error_inside_the_module_is_one_line(user_dir, capsys):
    (user_dir / "broken.py").write_text("import numpy\nraise RuntimeError('bad setup')\n")
    assert main(["verify", "--impl", "broken:run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RuntimeError: bad setup" in err
