"""The benchmark command (``python -m perceptron_oracle.benchmarks``) end to end at a tiny size.

One run of the command over every case: each case's row is printed and written to --json,
and the command exits 0 only when every engine and every peer (numpy loop, numba loop,
scikit-learn, HO primal) made the fast form's mistakes (ROMMA/PUMMA: its updates; ALMA: its
corrections) on every case (``benchmarks.measure`` asserts it; the command turns a
difference into exit 1).  The timings at this size mean nothing and are not checked.  Bad
options get one line and exit 2.
"""

from __future__ import annotations

import json

import pytest

from perceptron_oracle import benchmarks as bench
from perceptron_oracle.fast import _compiled

TINY = 0.005


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "run.json"
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = bench.main(["--size", str(TINY), "--repeat", "1", "--min-seconds", "0",
                           "--json", str(path)])
    return code, out.getvalue(), json.loads(path.read_text(encoding="utf-8"))


def test_every_case_runs_and_every_peer_agrees(tiny_run):
    code, out, data = tiny_run
    assert code == 0, out
    keys = {f"{name} @ {rate}" for name, rate, _ in bench.cases(1.0)}
    assert set(data["results"]) == keys
    for key in keys:
        assert any(line.startswith(key) for line in out.splitlines()), key
    assert "threads: 1" in out and "KERNEL_CACHE_BYTES" in out


def test_every_row_has_its_floor_its_loops_and_the_duals_memory(tiny_run):
    results = tiny_run[2]["results"]
    for key, row in results.items():
        ratios = row["ratios"]
        assert ratios["fast/floor"] > 0 and ratios["fast/np loop"] > 0, key
        assert ("peak_mib" in row) == (" dual " in f" {key} "), key
        if _compiled.available() and key.startswith(("perceptron", "pnorm", "romma primal",
                                                     "pumma primal p=2", "alma primal")):
            assert "fast/numba loop" in ratios, key
        if key.startswith("perceptron primal"):
            assert "fast/sklearn" in ratios, key
        if key.startswith(("ho implicit p=2", "ho dual", "sop dual")):
            assert "fast/primal" in ratios, key


def test_alma_has_its_rows_at_both_correction_rates_and_its_dual():
    """ALMA's primal at p = 2 and p = 2 ln n, each at alpha = 1 (low correction rate) and 0.1
    (high), and its kernel dual, are cases, and no other case's name holds "alma" (``--only
    alma`` runs these five)."""
    names = [name for name, _, _ in bench.cases(1.0) if "alma" in name]
    assert names == ["alma primal p=2 a=1", "alma primal p=2 a=0.1", "alma primal p=10.6 a=1",
                     "alma primal p=10.6 a=0.1", "alma dual p=2 rbf a=0.5"]


def test_compare_reports_a_case_missing_from_the_baseline_without_failing(tiny_run):
    """A row the baseline lacks (ALMA's, against tests/benchmarks/baseline.json) is a note;
    only a worse ratio fails."""
    results = tiny_run[2]["results"]
    baseline = {k: v for k, v in results.items() if not k.startswith("alma")}
    failures, notes = bench.compare(results, baseline, bench.DEFAULT_MARGIN)
    assert failures == []
    assert sorted(notes) == sorted(f"{k}: only in the run" for k in results
                                   if k.startswith("alma"))


def test_a_peer_that_differs_fails_the_command(monkeypatch, capsys):
    monkeypatch.setattr(bench, "numpy_romma_loop", lambda X, y: [0])
    assert bench.main(["--size", str(TINY), "--repeat", "1", "--min-seconds", "0",
                       "--only", "romma primal"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: romma primal: np loop makes other updates"]


@pytest.mark.parametrize("argv,message", [
    (["--size", "0"], "--size must be > 0"),
    (["--threads", "0"], "--threads >= 1"),
    (["--only", "no such case"], "names no case"),
    (["--min-seconds", "-1"], "--min-seconds a finite number >= 0"),
    (["--min-seconds", "nan"], "--min-seconds a finite number >= 0"),
    (["--repeat", "often"], "invalid int value: 'often'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_options_get_one_line(argv, message, capsys):
    assert bench.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_best_time_calls_short_paths_until_min_seconds_within_the_cap():
    """At least ``repeat`` calls; more while their times add up to less than min_seconds, up
    to MAX_CALLS (instant calls never add up to a minute); the best time and the last call's
    output come back."""
    calls = []
    best, out = bench.best_time(lambda: calls.append(None) or len(calls), 3)
    assert len(calls) == 3 and out == 3 and best >= 0
    calls.clear()
    best, out = bench.best_time(lambda: calls.append(None) or len(calls), 3, min_seconds=60.0)
    assert len(calls) == bench.MAX_CALLS and out == bench.MAX_CALLS


@pytest.mark.skipif(not _compiled.available(), reason="the Newton floor needs numba")
def test_the_pumma_newton_floor_solves_the_runs_own_problems():
    """The floor of ``pumma primal p=4`` times the compiled solver on the problems the run's
    updates solved: each recorded problem, solved again, gives the run's (alpha, beta)."""
    (maker,) = [make for name, _, make in bench.cases(0.05) if name == "pumma primal p=4"]
    X, y, p = maker()
    problems, solutions = bench.newton_problems(X, y, p)
    assert len(problems) > 20
    newton = _compiled.kernels().pumma_newton
    from perceptron_oracle.fast.maximum_margin import SINGULAR
    from perceptron_oracle.fast.pumma import NEWTON_MAX_STEPS, NEWTON_STOP
    for problem, (alpha, beta) in zip(problems, solutions):
        phi = problem[0].copy()
        got = newton(*problem, NEWTON_MAX_STEPS, NEWTON_STOP, SINGULAR, phi)
        assert got[0] == pytest.approx(alpha, rel=1e-9)
        assert got[1] == pytest.approx(beta, rel=1e-9, abs=1e-12)
