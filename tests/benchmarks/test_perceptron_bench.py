"""Benchmarks: every case of ``perceptron_oracle.benchmarks`` against its floor and peers.

The measuring is ``perceptron_oracle.benchmarks`` (its docstring defines every column); these
tests run it through pytest-benchmark and store each case's ratios (fast/floor, fast/peer)
and update rate in ``extra_info``.  By hand, full size:

    pytest tests/benchmarks/test_perceptron_bench.py --benchmark-enable -s
    python -m perceptron_oracle.benchmarks --compare tests/benchmarks/baseline.json

In CI (``--benchmark-disable``) the cases are not run here: tests/test_benchmarks_script.py
runs the command over every case at a tiny size, which checks that every engine and peer
makes the fast form's mistakes.  The comparison against the baseline is tested on made-up
ratios (it must flag a worse one) and once through the command on a small case.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from perceptron_oracle import benchmarks as bench

SMALL = 0.02
BASELINE = pathlib.Path(__file__).with_name("baseline.json")
CASES = bench.cases()   # (family, Benchmark) of every registered family
_data_cache: dict = {}


def _data(case, size: float):
    key = (case.label, size)
    if key not in _data_cache:
        _data_cache.clear()
        _data_cache[key] = case.data(size)
    return _data_cache[key]


@pytest.mark.parametrize("family,case", CASES, ids=[case.label for _, case in CASES])
def test_case(benchmark, family, case):
    if benchmark.disabled:
        pytest.skip("benchmarks disabled: tests/test_benchmarks_script.py runs every case "
                    "at a tiny size through the command")
    X, y = _data(case, 1.0)
    limits, _ = bench.limit_threads(1)
    with limits:
        row = benchmark.pedantic(bench.measure, args=(family, case, X, y, 3), rounds=1)
    benchmark.extra_info.update(update_rate=row["update_rate"], rows=row["rows"],
                                us_per_trial=row["us_per_trial"], **row["ratios"])
    print("\n" + bench.header() + "\n" + bench.format_row(case.label, row))


def test_baseline_lists_every_case_with_its_ratios():
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))["results"]
    assert set(baseline) == {case.label for _, case in CASES}
    for row in baseline.values():
        assert row["ratios"]["fast/floor"] > 0 and "fast/np loop" in row["ratios"]


def test_compare_flags_a_worse_ratio_only():
    base = {"a @ 3%": {"ratios": {"fast/floor": 2.0, "fast/sklearn": 0.5}}}
    same = {"a @ 3%": {"ratios": {"fast/floor": 2.9, "fast/sklearn": 0.4}}}
    worse = {"a @ 3%": {"ratios": {"fast/floor": 3.1, "fast/sklearn": 0.5}},
             "b @ 3%": {"ratios": {"fast/floor": 1.0}}}
    assert bench.compare(same, base, 1.5) == ([], [])
    failures, notes = bench.compare(worse, base, 1.5)
    assert len(failures) == 1 and "fast/floor 3.100 > 1.5 x baseline 2.000" in failures[0]
    assert notes == ["b @ 3%: only in the run"]


def test_compare_command_fails_on_a_worse_baseline(tmp_path, capsys):
    """The documented command: exit 1 when a ratio worsened beyond the margin."""
    (family, case), = [(f, c) for f, c in CASES if c.label == "pnorm primal p=4 @ 0.1%"]
    row = bench.measure(family, case, *_data(case, SMALL), 1)
    tight = {case.label: {"ratios": {k: v / 10 for k, v in row["ratios"].items()}}}
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"results": tight}), encoding="utf-8")
    assert bench.main(["--size", str(SMALL), "--repeat", "1", "--only", "pnorm",
                       "--compare", str(path)]) == 1
    out = capsys.readouterr().out
    assert "WORSE: pnorm primal p=4 @ 0.1%: fast/floor" in out
    assert bench.main(["--compare", str(tmp_path / "missing.json")]) == 2
