"""``verify --data FILE`` and ``verify_on``: an implementation on the user's own data, every
trial judged against the exact run.

The implementation is the README's ``examples/python/plain.py`` (a float64 Perceptron, w and
b), run in its sandbox from the working directory as a user runs it, and copies with a
planted bug (tests/plain_mutants.py): a tie rule (a zero score is no mistake), float32
accumulation, and an update that accumulates the wrong instance.  The data is raw Wdbc as
``datasets.export_real_data`` writes it.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from perceptron_oracle import datasets, verify_on
from perceptron_oracle.registry import run
from perceptron_oracle.verify import FAIL, NOT_APPLICABLE, PASS

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> pathlib.Path:
    """A directory with wdbc.csv (raw, labels -1/+1), plain.py and the mutants."""
    where = tmp_path_factory.mktemp("verify_data")
    datasets.export_real_data(where)
    shutil.copy(ROOT / "examples" / "python" / "plain.py", where)
    shutil.copy(ROOT / "tests" / "plain_mutants.py", where)
    return where


def _verify(workdir: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perceptron_oracle.cli", "verify",
                           "--data", "wdbc.csv", "--algorithm", "perceptron", *args],
                          cwd=workdir, capture_output=True, text=True, timeout=600)


def test_plain_passes_on_ten_epochs_of_raw_wdbc(workdir) -> None:
    done = _verify(workdir, "--impl", "plain:run", "--epochs", "10",
                   "--report", "report.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS perceptron on wdbc.csv (569 examples x 10 epochs")
    assert "every one of 5690 trials judged" in done.stdout
    report = json.loads((workdir / "report.json").read_text())
    assert report["status"] == PASS and report["trials"] == 5690
    assert report["judged_every_trial"] is True


def test_a_tie_bug_fails_naming_the_trial(workdir) -> None:
    done = _verify(workdir, "--impl", "plain_mutants:tie")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("FAIL perceptron on wdbc.csv")
    assert "trial 0 (example 0): expected mistake (exact score 0), got the opposite" \
        in done.stdout


def test_an_accumulation_bug_fails_naming_the_trial(workdir) -> None:
    done = _verify(workdir, "--impl", "plain_mutants:stale", "--epochs", "10",
                   "--report", "stale.json")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((workdir / "stale.json").read_text())
    t = report["first_divergence"]
    assert report["status"] == FAIL and t is not None and 0 < t < 5690
    assert f"trial {t} (example {t % 569})" in done.stdout


def test_float32_accumulation_fails_on_the_final_state(workdir) -> None:
    """Its decisions agree on raw Wdbc (the margins are wide); its w does not."""
    done = _verify(workdir, "--impl", "plain_mutants:float32", "--epochs", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "final.w[0]: expected" in done.stdout and "allowed" in done.stdout


def test_a_trace_file_the_users_code_wrote(workdir) -> None:
    d = datasets.wdbc()
    trace = run("perceptron", d.X, d.y, impl="fast", epochs=2)
    (workdir / "mine.json").write_text(trace.to_json())
    done = _verify(workdir, "--results", "mine.json", "--epochs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every one of 1138 trials judged" in done.stdout


@pytest.mark.parametrize("args,message", [
    (("--impl", "plain:run", "--algorithm", "romma"), "--data needs one --algorithm"),
    (("--impl", "plain:run", "--epochs", "0"), "--epochs must be at least 1, got 0"),
    (("--impl", "plain:run", "--fuzz"), "--fuzz does not apply with --data"),
    (("--impl", "plain:run", "--strict"), "--strict does not apply with --data"),
    (("--impl", "plain:run", "--param", "eta"), "--param expects NAME=VALUE"),
    (("--impl", "plain:run", "--param", "gamma=1"), "unknown parameter(s) gamma"),
])
def test_bad_input_is_one_line(workdir, args, message) -> None:
    done = _verify(workdir, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_options_of_data_runs_are_refused_without_data(workdir) -> None:
    done = subprocess.run([sys.executable, "-m", "perceptron_oracle.cli", "verify", "--impl",
                           "plain:run", "--epochs", "3"], cwd=workdir, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "--epochs applies with --data only" in done.stderr


def _plain(algorithm, X, y, *, epochs, kernel, params):
    w, b, mistakes = np.zeros(X.shape[1]), 0.0, []
    for t in range(epochs * len(y)):
        x, label = X[t % len(y)], y[t % len(y)]
        if label * (x @ w + b) <= 0:
            mistakes.append(t)
            w += label * x
    return {"format": "perceptron-oracle/trace@1", "algorithm": algorithm, "form": "primal",
            "kernel": kernel, "params": {}, "n_examples": len(y), "epochs": epochs,
            "mistakes": mistakes, "updates": mistakes, "final": {"w": w.tolist(), "b": b}}


def test_verify_on_from_python_with_progress() -> None:
    d = datasets.wdbc(rows=200)
    seen = []
    verdict = verify_on((d.X, d.y), _plain, algorithm="perceptron", epochs=3,
                        progress=lambda done, total: seen.append((done, total)))
    assert verdict.ok and verdict.comparison.judged_every_trial, verdict.describe()
    assert seen[0] == (0, 600) and seen[-1] == (600, 600)
    assert verify_on("builtin:noisy", _plain, algorithm="perceptron").ok


def test_verify_on_a_callable_that_declines_or_breaks() -> None:
    d = datasets.wdbc(rows=50)

    def declines(*args, **kwargs):
        raise NotImplementedError("linear kernel only")

    def breaks(*args, **kwargs):
        return {"format": "perceptron-oracle/trace@1"}

    declined = verify_on((d.X, d.y), declines, algorithm="perceptron")
    assert declined.status == NOT_APPLICABLE and declined.message == "linear kernel only"
    broken = verify_on((d.X, d.y), breaks, algorithm="perceptron")
    assert broken.status == FAIL and broken.message.startswith("not a valid trace")


def _plugin(workdir: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "--oracle-algorithm", "perceptron", *args],
                          cwd=workdir, capture_output=True, text=True, timeout=600)


def test_the_plugin_runs_the_data(workdir) -> None:
    done = _plugin(workdir, "--oracle-impl", "plain:run", "--oracle-data", "wdbc.csv",
                   "--oracle-epochs", "2", "-k", "test_data_run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    done = _plugin(workdir, "--oracle-impl", "plain_mutants:stale", "--oracle-data",
                   "wdbc.csv", "-k", "test_data_run")
    assert done.returncode == 1 and "FAIL perceptron on wdbc.csv" in done.stdout
    assert "trial " in done.stdout


def test_the_plugins_data_options_need_an_implementation(workdir) -> None:
    done = _plugin(workdir, "--oracle-data", "wdbc.csv")
    assert done.returncode != 0
    assert "--oracle-data needs --oracle-impl MODULE:CALLABLE" in done.stderr
