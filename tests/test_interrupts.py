"""Ctrl-C (SIGINT) and SIGTERM end a command with one line on stderr and status 130 / 143,
after its cleanup (temporary directories, half-written outputs); outputs are replaced whole
(perceptron_oracle.interrupts, perceptron_oracle.atomic)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from perceptron_oracle import atomic, benchmarks, cli, fuzz, long_runs
from perceptron_oracle.interrupts import EXIT_INTERRUPTED, EXIT_TERMINATED, one_line

#: Seconds from the start of a command until it is surely at work (imports with numba take
#: 1-2 s here) and before it could have finished.
STARTED = 3.0
STATUS = {signal.SIGINT: EXIT_INTERRUPTED, signal.SIGTERM: EXIT_TERMINATED}
WORD = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM],
                                  ids=["SIGINT", "SIGTERM"])

#: The exact Perceptron on raw wdbc for 20 epochs: a run of a minute or more.
LONG_RUN = ["run", "perceptron", "--data", "builtin:wdbc", "--epochs", "20"]


def _default_sigint() -> None:
    """The child's SIGINT as a terminal's (a parent that ignores it would pass SIG_IGN on)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(argv: list[str], env: dict[str, str] | None = None,
          module: str = "perceptron_oracle.cli") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", module, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint,
                            env={**os.environ, **(env or {})})


def stop(process: subprocess.Popen[str], signum: int) -> tuple[int, str, str]:
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def assert_one_line(status: int, err: str, signum: int) -> None:
    assert status == STATUS[signum], err
    assert err == f"perceptron-oracle: {WORD[signum]}\n", err


@SIGNALS
def test_reference_run(tmp_path: Path, signum: int) -> None:
    """(a) the exact reference at work, and (b) its --out over an existing file."""
    out = tmp_path / "trace.json"
    out.write_text("old\n")
    process = start([*LONG_RUN, "--out", str(out)])
    time.sleep(STARTED)
    assert process.poll() is None, "the run ended before the signal"
    status, stdout, err = stop(process, signum)
    assert_one_line(status, err, signum)
    assert stdout == ""
    assert out.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json"]


def test_out_replaces_the_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    out.write_text("old\n")
    out.chmod(0o640)
    assert cli.main(["run", "perceptron", "--data", "builtin:separable", "--out",
                     str(out)]) == 0
    assert json.loads(out.read_text())["algorithm"] == "perceptron"
    assert out.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json"]


def test_atomic_write_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupt between the temporary file and the rename: the old file stays, the
    temporary one goes."""
    target = tmp_path / "report.json"
    target.write_text("old\n")

    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_text(target, "new\n" * 1000)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    monkeypatch.undo()
    atomic.write_text(target, "new\n")
    assert target.read_text() == "new\n"
    with pytest.raises(FileNotFoundError) as raised:
        atomic.write_text(tmp_path / "missing" / "x.json", "")
    assert raised.value.filename == str(tmp_path / "missing" / "x.json")


@SIGNALS
def test_golden_check_cleans_up(tmp_path: Path, signum: int) -> None:
    """(c) golden --check regenerates into a temporary directory under TMPDIR: gone after
    the signal."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    process = start(["golden", "--check"], env={"TMPDIR": str(tmpdir)})
    assert process.stdout is not None
    process.stdout.readline()  # a file generated: at work in its temporary directory
    assert any(tmpdir.iterdir())
    status, _, err = stop(process, signum)
    assert_one_line(status, err, signum)
    assert list(tmpdir.iterdir()) == []


def test_developer_entry_point() -> None:
    process = start(["--trials", "100000", "--only", "romma"],
                    module="perceptron_oracle.long_runs")
    time.sleep(STARTED)
    status, _, err = stop(process, signal.SIGTERM)
    assert status == EXIT_TERMINATED
    assert err == "python -m perceptron_oracle.long_runs: terminated\n"


def test_handler_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    cleaned = []

    @one_line("prog")
    def terminated() -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
            return 0
        finally:
            cleaned.append(True)

    previous = signal.getsignal(signal.SIGTERM)
    assert terminated() == EXIT_TERMINATED and cleaned == [True]
    assert signal.getsignal(signal.SIGTERM) == previous  # restored
    assert capsys.readouterr().err == "prog: terminated\n"

    @one_line("outer")
    def outer() -> int:
        return inner()

    @one_line("inner")
    def inner() -> int:
        raise KeyboardInterrupt

    assert outer() == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "outer: interrupted\n"
    for main in (benchmarks.main, long_runs.main, cli.main):
        assert hasattr(main, "__wrapped__")


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _no_process_left(process: subprocess.Popen[str]) -> None:
    """Nothing of the command's process group (its sandbox worker) outlives it."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError("a process of the interrupted command was still running")


def _start_in_tests(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    """The command in a session of its own (so its workers can be found), the tests'
    implementations importable."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    return subprocess.Popen([sys.executable, "-m", "perceptron_oracle.cli", *argv], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: (_default_sigint(), os.setsid()), env=env)


@SIGNALS
def test_verify_report_survives(tmp_path: Path, signum: int) -> None:
    """verify --report over an existing report, interrupted while the implementation (in its
    worker) is at work: the old report, no temporary file, no worker left."""
    report = tmp_path / "report.json"
    report.write_text("old\n")
    process = _start_in_tests(["verify", "--impl", "hostile_impls:slow", "--algorithm",
                               "perceptron", "--report", str(report)], tmp_path)
    time.sleep(STARTED + 1)
    assert process.poll() is None, "verify ended before the signal"
    status, _, err = stop(process, signum)
    assert_one_line(status, err, signum)
    assert _snapshot(tmp_path) == {"report.json": b"old\n"}
    _no_process_left(process)


@SIGNALS
def test_fuzz_out_survives(tmp_path: Path, signum: int) -> None:
    """verify --fuzz --fuzz-out over an earlier replay directory, interrupted during the
    search: the earlier replays as they were, no temporary file, no worker left."""
    replays = tmp_path / "replays"
    draw = fuzz.Draw(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, -1]), {}, "linear", 1)
    fuzz.write_replay(replays, {"perceptron": fuzz.Finding(draw, "an earlier finding")})
    before = _snapshot(replays)
    process = _start_in_tests(["verify", "--fuzz", "--impl", "hostile_impls:slow",
                               "--algorithm", "perceptron", "--fuzz-out", str(replays)],
                              tmp_path)
    time.sleep(STARTED + 1)
    assert process.poll() is None, "the fuzzer ended before the signal"
    status, _, err = stop(process, signum)
    assert_one_line(status, err, signum)
    assert _snapshot(replays) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["replays"]
    _no_process_left(process)
