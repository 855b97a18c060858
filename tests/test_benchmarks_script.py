"""The benchmark command (``python -m perceptron_oracle.benchmarks``) end to end at a tiny size.

One run of the command over every case: each case's row is printed and written to --json,
and the command exits 0 only when every engine and every peer (numpy loop, numba loop,
scikit-learn, HO primal) made the fast form's mistakes (ROMMA/PUMMA: its updates; ALMA: its
corrections) on every case (``benchmarks.measure`` asserts it; the command turns a
difference into exit 1).  The timings at this size mean nothing and are not checked.  Bad
options get one line and exit 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from functools import partial

import pytest

from perceptron_oracle import benchmark_cases, registry
from perceptron_oracle import benchmarks as bench
from perceptron_oracle.benchmark_cases import Benchmark, Extra
from perceptron_oracle.fast import _compiled, _compiled_pumma

TINY = 0.005


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "run.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = bench.main(["--size", str(TINY), "--repeat", "1", "--min-seconds", "0",
                           "--json", str(path)])
    return code, out.getvalue(), json.loads(path.read_text(encoding="utf-8"))


def test_every_case_runs_and_every_peer_agrees(tiny_run):
    code, out, data = tiny_run
    assert code == 0, out
    keys = {case.label for _, case in bench.cases()}
    assert len(keys) == 35 and {family.name for family, _ in bench.cases()} == set(
        registry.ALGORITHMS)
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
    (high), and its kernel dual, are ALMA's cases, and no other case's name holds "alma"
    (``--only alma`` runs these five)."""
    names = ["alma primal p=2 a=1", "alma primal p=2 a=0.1", "alma primal p=10.6 a=1",
             "alma primal p=10.6 a=0.1", "alma dual p=2 rbf a=0.5"]
    assert [case.name for case in registry.get("alma").benchmarks] == names
    assert [case.name for _, case in bench.cases("alma")] == names


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
    romma = registry.get("romma")
    monkeypatch.setattr(romma, "benchmarks", tuple(
        dataclasses.replace(case, peers={**case.peers, "np loop": lambda X, y: [0]})
        if case.name == "romma primal" else case for case in romma.benchmarks))
    assert bench.main(["--size", str(TINY), "--repeat", "1", "--min-seconds", "0",
                       "--only", "romma primal"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: romma primal: np loop makes other updates"]


def test_a_case_without_floor_or_peers_prints_its_row(capsys):
    """A family declaring one case with no floor and no peers: ``run_all`` times its fast
    form (and its numpy engine), prints its row with the floor and ratio columns absent,
    and the legend says it has no floor; the command prints the row too."""
    toy_case = Benchmark("toy primal", "12%", partial(benchmark_cases.sized_dense, 300, 5, 0.1),
                         "primal")
    perceptron = registry.get("perceptron")
    toy = dataclasses.replace(perceptron, name="toy", benchmarks=(toy_case,),
                              fast_forms=perceptron.declared)
    out = io.StringIO()
    with registry.registered_family(toy):
        results = bench.run_all(TINY, 1, only="toy", out=out, min_seconds=0)
        assert bench.main(["--size", str(TINY), "--repeat", "1", "--min-seconds", "0",
                           "--only", "toy primal"]) == 0
    assert list(results) == ["toy primal @ 12%"]
    row = results["toy primal @ 12%"]
    assert set(row["us_per_trial"]) == {"fast", "numpy"}
    assert set(row["ratios"]) == {"fast/numpy"} and "peak_mib" not in row
    (line,) = out.getvalue().splitlines()
    assert line == bench.format_row("toy primal @ 12%", row)
    cells = line.split("|")
    assert cells[1].split()[2:] == ["-"] * 6                  # floor and every peer column
    assert cells[2].split() == ["-"] * len(bench.RATIOS)      # every ratio
    (no_floor,) = bench.legend(results)
    assert no_floor.startswith("floor -: no floor declared (toy primal @ 12%)")
    printed = capsys.readouterr().out
    assert any(line.startswith("toy primal @ 12%") for line in printed.splitlines())
    assert "floor -: no floor declared" in printed and "X @ w pass" not in printed


def test_a_peer_needing_a_missing_extra_is_left_out():
    def loop(X, y):
        return []
    case = Benchmark("x", "1%", partial(benchmark_cases.sized_noisy, 300, 3, 0.0), "primal",
                     peers={"numba loop": Extra(lambda: None), "np loop": loop,
                            "sklearn": Extra(lambda: loop)})
    assert case.peer_runs() == {"np loop": loop, "sklearn": loop}
    with pytest.raises(ValueError, match="key"):
        Benchmark("x", "1%", case.data, "primal", key="corrections")
    with pytest.raises(ValueError, match="' @ '"):
        Benchmark("x @ 1%", "1%", case.data, "primal")


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
    (case,) = [case for _, case in bench.cases("pumma primal p=4")]
    X, y = case.data(0.05)
    problems, solutions = benchmark_cases.newton_problems(X, y, case.params["p"])
    assert len(problems) > 20
    newton = _compiled_pumma.loops().pumma_newton
    from perceptron_oracle.fast.maximum_margin import SINGULAR
    from perceptron_oracle.fast.pumma import NEWTON_MAX_STEPS, NEWTON_STOP
    for problem, (alpha, beta) in zip(problems, solutions):
        phi = problem[0].copy()
        got = newton(*problem, NEWTON_MAX_STEPS, NEWTON_STOP, SINGULAR, phi)
        assert got[0] == pytest.approx(alpha, rel=1e-9)
        assert got[1] == pytest.approx(beta, rel=1e-9, abs=1e-12)


def test_the_exact_engines_table_checks_every_engine(tmp_path):
    """``--exact`` at a small size: a row per (family, data set), each engine's trace checked
    against the reference's and the fast form judged against the engine's (exit 0)."""
    path, out = tmp_path / "exact.json", io.StringIO()
    with contextlib.redirect_stdout(out):
        code = bench.main(["--exact", "--size", "0.02", "--json", str(path)])
    assert code == 0, out.getvalue()
    rows = json.loads(path.read_text(encoding="utf-8"))["exact"]
    assert set(rows) == {f"{name} {data}" for name in registry.ALGORITHMS
                         for data in ("wdbc raw", "digits 3/rest raw")}
    for row in rows.values():
        assert row["exact"] > 0 and row["reference"] > 0 and row["fast"] > 0
