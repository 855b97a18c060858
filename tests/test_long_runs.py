"""``python -m perceptron_oracle.long_runs`` at a small size: the same code path as the 10^5
trial runs (every form and engine of the registry against the reference), and a form with a
planted bug reported FAILED with exit status 1."""

from __future__ import annotations

import io
from typing import Any

import pytest

from perceptron_oracle import long_runs
from perceptron_oracle.fast import perceptron as fast_perceptron
from perceptron_oracle.fast.driver import FloatRangeError
from perceptron_oracle.registry import ALGORITHMS, Form, registered_form


def _run(*argv: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    status = long_runs.main(list(argv), out=out)
    return status, out.getvalue().splitlines()


def test_small_long_runs_agree_for_every_form_and_engine():
    status, lines = _run("--trials", "2000", "--only", "pnorm_perceptron,alma",
                         "--forms", "primal")
    assert status == 0, "\n".join(lines)
    runs = [line.split() for line in lines[:-1]]
    # pnorm: p = 2 and p = 3, numpy and numba; ALMA's primal (no engine): p = 2 and p = 4
    assert [(r[0], r[-1]) for r in runs].count(("pnorm_perceptron", "agreed")) == 4
    assert sum(r[0] == "alma" for r in runs) == 2
    assert all("2000 trials" in line for line in lines[:-1])
    assert lines[-1].endswith("every run passed")


def tau_ignored(X: Any, y: Any, **kwargs: Any) -> Any:
    """The fast primal Perceptron with a planted bug: the margin tau read as 0."""
    return fast_perceptron.primal(X, y, **{**kwargs, "tau": 0})


def test_a_wrong_registered_form_is_reported_failed():
    with registered_form("perceptron", Form("tau_ignored", tau_ignored, engine=True)):
        status, lines = _run("--trials", "2000", "--only", "perceptron",
                             "--forms", "primal,tau_ignored")
    assert status == 1
    verdicts = {(line.split()[3], line.split()[4]): line for line in lines[:-1]}
    assert set(verdicts) == {(f, e) for f in ("primal", "tau_ignored")
                             for e in ("numpy", "numba")}
    for engine in ("numpy", "numba"):
        assert verdicts["primal", engine].endswith("agreed")
        assert "FAILED at trial" in verdicts["tau_ignored", engine]
    assert lines[-1].endswith("FAILED")
    assert "tau_ignored" not in ALGORITHMS["perceptron"].forms


def test_a_float_range_stop_is_accepted_only_after_a_flagged_trial():
    X, y = long_runs.grid_data(20, 3, 0.1, seed=0)
    expected = ALGORITHMS["perceptron"].implementation("reference")(X, y, epochs=2)

    def stops() -> Any:
        raise FloatRangeError("trial 7 (example 7): overflowed", trial=7)

    expected.fragile = []
    assert not long_runs.judge(expected, stops, X, y, "linear", {}).ok
    expected.fragile = [9]
    assert not long_runs.judge(expected, stops, X, y, "linear", {}).ok
    expected.fragile = [7]
    outcome = long_runs.judge(expected, stops, X, y, "linear", {})
    assert outcome.ok and "after a flagged trial" in outcome.verdict


@pytest.mark.parametrize("argv,message", [
    (["--only", "nonesuch"], "unknown family nonesuch"),
    (["--trials", "0"], "--trials must be at least 1"),
    (["--trials", "many"], "invalid int value: 'many'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_arguments_are_one_line(argv, message, capsys):
    assert long_runs.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
