"""The code under test kept in its box (perceptron_oracle/sandbox.py): hostile
implementations (tests/hostile_impls.py) through ``verify --impl``, ``verify --fuzz`` and the
pytest plugin, each in a subprocess as a user runs it.  Every misbehaviour is that case's
one-line verdict; the verifier's exit status is 1, its summary intact and its own, and each
run takes bounded time.

The golden set here is two Perceptron cases (two replay files written by the fuzzer's own
writer), so that a time limit of 2 s per case keeps every run short.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import subprocess
import sys
import time
from fractions import Fraction

import numpy as np
import pytest

from perceptron_oracle import fuzz, golden, verify
from perceptron_oracle.compare import Comparison
from perceptron_oracle.numbers import brief
from perceptron_oracle.sandbox import ImplementationFailed, Sandbox
from perceptron_oracle.trace import Trace

TESTS = pathlib.Path(__file__).parent
LIMIT = 2          # --case-timeout of the runs whose implementation hangs, seconds
SLACK = 1.0        # what a case may take beyond it
#: The implementations that never answer: held to LIMIT.  The others answer (or die) at
#: once and get the default limit, so that a loaded machine cannot turn their verdict
#: into a timeout (building out_of_range's 10^7 trials takes a second by itself).
HANGS = ("sleep_forever", "busy_loop")


def _limit(name):
    return LIMIT if name in HANGS else 30


@pytest.fixture(scope="module")
def two_cases(tmp_path_factory):
    """A golden directory of two linear Perceptron cases."""
    directory = tmp_path_factory.mktemp("golden")
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0], [0.5, 2.0]])
    for y, epochs in (([1, -1, 1, -1], 2), ([1, 1, -1, -1], 1)):
        draw = fuzz.Draw(X, np.array(y), {}, "linear", epochs)
        fuzz.write_replay(directory, {"perceptron": fuzz.Finding(draw, "a case")})
    assert len(golden.load(directory)) == 2
    return directory


def _run(cwd, *args, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    env.pop("HYPOTHESIS_PROFILE", None)
    start = time.monotonic()
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return done, time.monotonic() - start


def _verify(tmp_path, golden_dir, name, *extra):
    report = tmp_path / "report.json"
    done, seconds = _run(tmp_path, "-m", "perceptron_oracle.cli", "verify", "--impl",
                         f"hostile_impls:{name}", "--golden", str(golden_dir),
                         "--case-timeout", str(_limit(name)), "--report", str(report),
                         *extra)
    records = json.loads(report.read_text())["cases"] if report.exists() else []
    return done, seconds, records


# name -> the one-line verdict of each case
HOSTILE = {
    "exit0": r"raised SystemExit\(0\)",
    "exit3": r"raised SystemExit\(3\)",
    "os_exit0": r"exited with status 0",
    "kill9": r"killed by signal SIGKILL",
    "keyboard_interrupt": r"raised KeyboardInterrupt",
    "argparse_error": r"raised SystemExit\(2\)",
    "sleep_forever": rf"no answer in {LIMIT} s \(--case-timeout\)",
    "busy_loop": rf"no answer in {LIMIT} s \(--case-timeout\)",
    "memory_hog": r"raised MemoryError \(the worker's limit is 256 MiB, --memory-limit\)",
    "huge_b": r"final\.b: an integer of about 3,010,30\d digits \(~9\.04982e\+3010299\), "
              r"more than a trace holds",
    "out_of_range": r"mistakes: 10000000 entries for a run of \d+ trials",
    "descending": r"mistakes\[1\]: trial \d+ after trial \d+",
    "twice": r"mistakes(\[1\]: trial \d+ repeated|: \d+ entries for a run of \d+ trials)",
    "sideways": r"form must be an identifier .*; got 'side ways'",
    "fake_summary": r"form must be an identifier .*; got 'side ways'",
}
def _memory(name):
    """--memory-limit: 256 MiB; 1 GiB for the one that builds a list of 10^7 trials."""
    return "1024" if name == "out_of_range" else "256"


FAKE_LINES = ("44 passed, 0 failed", "golden set /conformance_data", "golden set /x")


def _no_fake_lines(text):
    for fake in FAKE_LINES:
        assert fake not in text, text[-2000:]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_verify_gives_each_misbehaviour_its_verdict(tmp_path, two_cases, name):
    done, seconds, records = _verify(tmp_path, two_cases, name, "--memory-limit", _memory(name))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    fails = [line for line in lines if line.startswith("FAIL ")]
    assert len(fails) == 2, done.stdout
    for line in fails:
        assert re.search(HOSTILE[name], line), line
        assert len(line) < 400
    assert lines[-1].startswith(f"golden set {two_cases} (manifest sha256 ")
    assert lines[-1].endswith(": 0 passed, 2 failed, 0 not applicable")
    _no_fake_lines(done.stdout)
    assert "Traceback" not in done.stderr
    assert [r["status"] for r in records] == ["fail", "fail"]
    for record in records:
        assert record["seconds"] <= _limit(name) + SLACK, record
    assert seconds < 2 * (_limit(name) + SLACK) + 10


def test_output_is_kept_apart_and_shown_labelled(tmp_path, two_cases):
    done, _, records = _verify(tmp_path, two_cases, "fake_golden_line")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].endswith(": 2 passed, 0 failed, 0 not applicable")
    _no_fake_lines(done.stdout)
    assert "wrote to stdout or stderr in 2 case(s)" in done.stderr
    assert all("golden set /x" in r["stdout"] for r in records)
    done, _, _ = _verify(tmp_path, two_cases, "fake_summary", "--show-output")
    shown = [line for line in done.stdout.splitlines() if "44 passed, 0 failed" in line]
    assert shown and all(line.startswith("    | ") for line in shown), done.stdout
    assert done.stdout.splitlines()[-1].endswith(": 0 passed, 2 failed, 0 not applicable")


def test_a_load_failure_is_one_usage_line_before_any_case(tmp_path, two_cases):
    (tmp_path / "exits_at_import.py").write_text("raise SystemExit(0)\n")
    for spec, message in (("hostile_impls:nope", "'hostile_impls' has no attribute 'nope'"),
                          ("exits_at_import:run", "importing 'exits_at_import' raised "
                                                  "SystemExit(0)")):
        done, _ = _run(tmp_path, "-m", "perceptron_oracle.cli", "verify", "--impl", spec,
                       "--golden", str(two_cases))
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.strip() == f"perceptron-oracle: error: {message}", done.stderr


FUZZ = {**HOSTILE, "huge_b": HOSTILE["huge_b"].replace(r"final\.b", r"trace\.final\.b")}


@pytest.mark.parametrize("name", ["exit0", "os_exit0", "kill9", "argparse_error",
                                  "sleep_forever", "memory_hog", "huge_b", "out_of_range",
                                  "descending", "sideways", "fake_summary"])
def test_fuzz_gives_each_misbehaviour_its_verdict(tmp_path, name):
    done, seconds = _run(tmp_path, "-m", "perceptron_oracle.cli", "verify", "--fuzz",
                         "--impl", f"hostile_impls:{name}", "--algorithm", "perceptron",
                         "--fuzz-examples", "5", "--case-timeout", str(_limit(name)),
                         "--memory-limit", _memory(name), "--fuzz-out", str(tmp_path / "replay"))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FAIL perceptron: "), done.stdout
    assert any(re.search(FUZZ[name], line) for line in lines), done.stdout
    assert lines[-1] == "fuzz (seed 0, 5 examples per algorithm): 0 passed, 1 failed, " \
                        "0 not applicable"
    _no_fake_lines(done.stdout)
    assert "Traceback" not in done.stderr
    # one call to find it, one to replay it (a failure of the process is not shrunk)
    assert seconds < 2 * (_limit(name) + SLACK) + 15


def test_fuzz_passes_an_implementation_that_only_prints(tmp_path):
    done, _ = _run(tmp_path, "-m", "perceptron_oracle.cli", "verify", "--fuzz", "--impl",
                   "hostile_impls:fake_golden_line", "--algorithm", "perceptron",
                   "--fuzz-examples", "5")
    assert done.returncode == 0, done.stdout + done.stderr
    _no_fake_lines(done.stdout)
    assert done.stdout.splitlines()[-1].endswith(": 1 passed, 0 failed, 0 not applicable")


def _plugin(tmp_path, golden_dir, name, *extra):
    return _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                "-p", "no:randomly", "--oracle-impl", f"hostile_impls:{name}",
                "--oracle-golden", str(golden_dir), "--oracle-algorithm", "perceptron",
                "--oracle-case-timeout", str(_limit(name)), "--oracle-memory-limit", "256",
                *extra)


@pytest.mark.parametrize("name", ["exit0", "exit3", "os_exit0", "kill9", "argparse_error",
                                  "sleep_forever", "memory_hog", "huge_b", "descending",
                                  "twice", "sideways", "fake_summary"])
def test_plugin_gives_each_misbehaviour_its_verdict(tmp_path, two_cases, name):
    done, seconds = _plugin(tmp_path, two_cases, name, "-k", "test_golden_case")
    assert done.returncode == 1, done.stdout[-3000:]
    lines = done.stdout.splitlines()
    verdicts = [line for line in lines if line.startswith("fuzz_perceptron")]
    assert len(verdicts) == 2, done.stdout[-3000:]
    for line in verdicts:
        assert re.search(HOSTILE[name], line), line
    assert re.fullmatch(r"2 failed, \d+ deselected in [0-9.]+s", lines[-1]), lines[-1]
    assert "Traceback" not in done.stdout
    if name == "fake_summary":   # shown as the item's section, not as the summary
        assert "Captured implementation stdout" in done.stdout
    assert seconds < 2 * (_limit(name) + SLACK) + 15


def test_plugin_checks_and_fuzz_end_at_a_hang(tmp_path, two_cases):
    done, seconds = _plugin(tmp_path, two_cases, "sleep_forever", "-k",
                            "test_check and textbook or test_fuzz", "--oracle-fuzz",
                            "--oracle-fuzz-examples", "5")
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout[-3000:]
    assert "perceptron:textbook: the implementation failed: no answer in 2 s " \
           "(--case-timeout)" in done.stdout
    assert "not shrunk: the implementation's process failed" in done.stdout
    assert re.fullmatch(r"2 failed, \d+ deselected in [0-9.]+s", lines[-1]), lines[-1]
    assert seconds < 3 * (LIMIT + SLACK) + 15


def test_plugin_keeps_printed_lines_out_of_its_summary(tmp_path, two_cases):
    done, _ = _plugin(tmp_path, two_cases, "fake_golden_line", "-k", "test_golden_case")
    assert done.returncode == 0, done.stdout[-3000:]
    _no_fake_lines(done.stdout)
    assert re.fullmatch(r"2 passed, \d+ deselected in [0-9.]+s", done.stdout.splitlines()[-1])


# -- the library API: a callable of this process --------------------------------------------

def test_library_verify_validates_a_trace_object(two_cases):
    import hostile_impls

    cases = golden.load(two_cases)
    for name in ("descending", "twice", "sideways", "huge_b", "out_of_range"):
        impl = getattr(hostile_impls, name)
        start = time.monotonic()
        results = verify.verify(cases, lambda c, f=impl: verify.run_external(c, f))
        assert time.monotonic() - start < 5
        assert [r.status for r in results] == ["fail", "fail"], name
        assert all(re.search(HOSTILE[name], r.message) for r in results), \
            [r.message for r in results]


def test_library_fuzz_validates_a_trace_object():
    import hostile_impls

    report = fuzz.fuzz(hostile_impls.descending, ["perceptron"], examples=5)
    assert report.results[0].status == fuzz.FAIL
    assert "strictly ascending" in report.results[0].finding.message


def test_sandbox_restarts_after_a_death_and_keeps_answering(two_cases, tmp_path,
                                                            monkeypatch):
    (tmp_path / "once.py").write_text(  # a worker forgets everything: a file remembers
        "import os\nfrom hostile_impls import correct\n"
        "def run(*a, **k):\n    if not os.path.exists('died'):\n"
        "        open('died', 'w').close()\n        os._exit(7)\n"
        "    return correct(*a, **k)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(TESTS))
    case = golden.load(two_cases)[0]
    with Sandbox("once:run", timeout=LIMIT) as box:
        with pytest.raises(ImplementationFailed, match="exited with status 7"):
            verify.run_external(case, box)
        assert verify.judge(case, verify.run_external(case, box)).ok
        assert box.restarts == 1


# -- bounded work ------------------------------------------------------------------------------

def test_brief_never_formats_a_huge_number():
    start = time.monotonic()
    assert brief(2 ** (10 ** 7)) == "an integer of about 3,010,301 digits (~9.04982e+3010299)"
    assert brief(-Fraction(1, 3 ** 700)) == "an exact number p/q of about 1 / 334 digits " \
                                            "(~-1.03543e-334)"
    assert brief(Fraction(1, 3)) == "1/3 (~0.333333)"
    assert time.monotonic() - start < 1


def test_a_failure_line_stays_short(two_cases):
    case = golden.load(two_cases)[0]
    trace = Trace.from_dict(case.expected.to_dict())
    wrong = dataclasses.replace(trace, final={**trace.final,
                                              "w": [Fraction(3 ** 3000, 7)] * 2,
                                              "b": Fraction(10 ** 3000 + 1)})
    result = verify.judge(case, wrong.to_dict())
    assert result.status == verify.FAIL
    assert len(result.message) < 600, result.message
    assert "got an integer of about 3,001 digits (~1.0000000000000000e+3000)" in result.message
    many = Comparison(False, 0, problems=[f"final.w[{i}]: wrong" for i in range(1000)])
    assert many.describe() == "final.w[0]: wrong; final.w[1]: wrong; final.w[2]: wrong; " \
                              "and 997 more differences"


def test_the_trace_reader_refuses_a_long_list_at_once():
    document = {"format": "perceptron-oracle/trace@1", "algorithm": "perceptron",
                "form": "primal", "params": {}, "n_examples": 3, "epochs": 1,
                "mistakes": list(range(10, 10 + 10 ** 7)), "updates": [], "final": {}}
    start = time.monotonic()
    with pytest.raises(Exception, match="10000000 trial indices for a run of 3 trials"):
        Trace.from_dict(document, numeric_final=True)
    assert time.monotonic() - start < 1


# -- the files it reads and writes -------------------------------------------------------------

def test_results_refuses_a_link_out_of_its_directory(tmp_path, two_cases, capsys):
    from perceptron_oracle.cli import main

    secret = tmp_path / "secret.json"
    secret.write_text('{"format": "perceptron-oracle/trace@1", "SECRET-CONTENT": 1}')
    results = tmp_path / "results"
    results.mkdir()
    case = golden.load(two_cases)[0]
    (results / verify.result_file(results, case).name).symlink_to(secret)
    assert main(["verify", "--results", str(results), "--golden", str(two_cases)]) == 1
    out = capsys.readouterr().out
    assert f"{case.name}" in out and "a symbolic link to a file outside" in out
    assert "SECRET" not in out


def test_fuzz_out_refuses_a_golden_directory(tmp_path, capsys):
    from perceptron_oracle.cli import main

    target = tmp_path / "golden"
    target.mkdir()
    manifest = {"format": golden.MANIFEST_FORMAT, "files": [{"path": "perceptron.json"}]}
    (target / "manifest.json").write_text(json.dumps(manifest))
    before = (target / "manifest.json").read_bytes()
    assert main(["verify", "--fuzz", "--impl", "hostile_impls:sideways", "--algorithm",
                 "perceptron", "--fuzz-out", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perceptron-oracle: error: --fuzz-out ") and "\n" not in err
    assert (target / "manifest.json").read_bytes() == before


def test_two_fuzzers_keep_both_replays(tmp_path):
    X = np.array([[1.0, 2.0]])
    findings = [fuzz.Finding(fuzz.Draw(X, np.array([y]), {}, "linear", 1), "x")
                for y in (1, -1)]
    for finding in findings + findings:   # the second round adds nothing new
        fuzz.write_replay(tmp_path, {"perceptron": finding})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fuzz_perceptron-2.json", "fuzz_perceptron.json", "manifest.json"]
    assert [c.y.tolist() for c in golden.load(tmp_path)] == [[1], [-1]]
