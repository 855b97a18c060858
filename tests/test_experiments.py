"""``perceptron-oracle experiment``: every experiment at reduced size writes its CSV and PNG,
the numbers do not depend on --jobs or the backend, Khardon & Wachman's pieces (data, folds,
voted prediction, T-interval) and the Wdbc reproduction (Table 3, last hypothesis)."""

from __future__ import annotations

import csv
import sys
from fractions import Fraction

import numpy as np
import pytest

from perceptron_oracle.cli import main as cli_main
from perceptron_oracle.experiments import commands
from perceptron_oracle.experiments import khardon_wachman as kw
from perceptron_oracle.experiments.engine import Engine, MissingExtra


def run_quick(name, out, *extra):
    return commands.main([name, "--quick", "--no-progress", "--out", str(out), *extra])


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def check_png(path):
    """The figure exists, is a real plot size and is not blank."""
    image = pytest.importorskip("matplotlib.image", reason="matplotlib not installed: "
                                "the experiments draw no figure").imread(str(path))
    height, width = image.shape[:2]
    assert width >= 400 and height >= 300
    rgb = image[..., :3]
    ink = np.mean(np.any(rgb < 0.9, axis=-1))   # share of pixels that are not near-white
    assert 0.01 < ink < 0.9, ink
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 10   # lines, text and colours


def test_list(capsys):
    assert cli_main(["experiment", "--list"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == list(commands.EXPERIMENTS)


@pytest.mark.parametrize("name", [n for n in commands.EXPERIMENTS if n != "khardon-table4"])
def test_quick_writes_table_csv_and_figure(name, tmp_path, capsys):
    assert run_quick(name, tmp_path) == 0
    printed = capsys.readouterr().out
    assert f"wrote {tmp_path / (name + '.csv')}" in printed
    rows = read_csv(tmp_path / f"{name}.csv")
    assert len(rows) > 2 and all(len(r) == len(rows[0]) for r in rows)
    if name != "khardon-wdbc" and name != "khardon-table6":
        assert "reproduction checks:" in printed
    check_png(tmp_path / f"{name}.png")


@pytest.fixture(scope="module")
def table4_quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("t4")
    assert run_quick("khardon-table4", out) == 0
    return (out / "khardon-table4.csv").read_bytes(), out


def test_table4_quick(table4_quick):
    data, out = table4_quick
    rows = read_csv(out / "khardon-table4.csv")
    assert rows[0] == ["noise", "hypothesis", "column", "accuracy", "setting", "paper"]
    assert {r[0] for r in rows[1:]} == {"0.0", "0.25"}
    assert len(rows) == 1 + 2 * 3 * 6
    assert all(0 <= float(r[3]) <= 100 for r in rows[1:])
    check_png(out / "khardon-table4.png")


def test_table4_same_numbers_with_two_jobs(table4_quick, tmp_path):
    pytest.importorskip("joblib", reason="joblib not installed: --jobs 2 needs it")
    assert run_quick("khardon-table4", tmp_path, "--jobs", "2") == 0
    assert (tmp_path / "khardon-table4.csv").read_bytes() == table4_quick[0]


def test_table4_same_numbers_on_a_dask_local_cluster(table4_quick, tmp_path):
    pytest.importorskip("joblib", reason="joblib not installed: --backend dask needs it")
    pytest.importorskip("distributed", reason="dask.distributed not installed")
    assert run_quick("khardon-table4", tmp_path, "--backend", "dask", "--jobs", "2") == 0
    assert (tmp_path / "khardon-table4.csv").read_bytes() == table4_quick[0]


def test_one_noise_level_gives_the_rows_of_the_full_run(table4_quick, tmp_path):
    """--noise picks rows of the full run (the data seeds do not depend on which levels
    run), so a full-size table can be computed level by level."""
    assert run_quick("khardon-table4", tmp_path, "--noise", "0.25") == 0
    alone = read_csv(tmp_path / "khardon-table4.csv")
    full = read_csv(table4_quick[1] / "khardon-table4.csv")
    assert alone[1:] == [r for r in full[1:] if r[0] == "0.25"]


@pytest.mark.parametrize("argv, message", [
    (["no-such"], "unknown experiment 'no-such'"),
    (["khardon-wdbc", "--jobs", "0"], "--jobs must be at least 1"),
    (["ho-artificial", "--noise", "0.1"], "--noise applies to khardon-table4 only"),
    (["khardon-wdbc", "--columns", "tau,sigma"], "unknown --columns sigma"),
    (["khardon-wdbc", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --backend dask"),
    ([], "name an experiment"),
])
def test_bad_input_is_one_line(argv, message, capsys, tmp_path):
    assert cli_main(["experiment", *argv, "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


@pytest.mark.parametrize("module, argv, install", [
    ("joblib", ["--jobs", "2"], "pip install joblib"),
    ("distributed", ["--backend", "dask"], "pip install 'dask[distributed]'"),
])
def test_missing_extra_says_what_to_install(module, argv, install, monkeypatch, capsys,
                                            tmp_path):
    monkeypatch.setitem(sys.modules, module, None)   # import fails as if not installed
    assert cli_main(["experiment", "khardon-wdbc", "--quick", "--out", str(tmp_path),
                     *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and install in err
    with pytest.raises(MissingExtra):
        Engine(2 if module == "joblib" else 1, "dask" if module == "distributed" else "loky")


def test_without_matplotlib_one_line_and_no_figure(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert run_quick("khardon-wdbc", tmp_path) == 0
    printed = capsys.readouterr().out
    assert "no figure: matplotlib is not installed (pip install matplotlib)" in printed
    assert (tmp_path / "khardon-wdbc.csv").exists()
    assert not (tmp_path / "khardon-wdbc.png").exists()


def test_progress_bar_on_stderr_for_long_runs():
    import io

    from perceptron_oracle.experiments.engine import Progress

    stream = io.StringIO()
    bar = Progress("runs", 3, stream, after=0.0)
    for _ in range(3):
        bar.step()
    bar.close()
    text = stream.getvalue()
    assert "runs [" in text and "3/3" in text and text.endswith("\n")
    quiet = io.StringIO()
    bar = Progress("runs", 3, quiet, after=60.0)
    bar.step()
    bar.close()
    assert quiet.getvalue() == ""


# -- Khardon & Wachman's pieces --------------------------------------------------------------

def test_artificial_data_follows_section_3_1():
    d = kw.artificial(20, 0.1, 0.0, seed=5, n_examples=300)
    assert d.X.shape == (300, 20)
    assert np.all(d.X == np.round(d.X)) and d.X.min() >= -10 and d.X.max() <= 10
    assert set(np.unique(d.y)) == {-1, 1}
    again = kw.artificial(20, 0.1, 0.0, seed=5, n_examples=300)
    assert np.array_equal(d.X, again.X) and np.array_equal(d.y, again.y)
    noisy = kw.artificial(20, 0.1, 0.25, seed=5, n_examples=300)
    assert np.array_equal(noisy.X, d.X)   # the noise comes last in the stream
    flipped = np.mean(noisy.y != d.y)
    assert 0.15 < flipped < 0.35


def test_artificial_data_is_separable_with_margin_when_noiseless():
    """With N = 0 the generating (w, theta) separates the data with margin M theta; the
    Perceptron therefore converges (a pass without mistakes) on it."""
    from perceptron_oracle.fast.perceptron import primal

    d = kw.artificial(10, 0.25, 0.0, seed=2, n_examples=200)
    trace = primal(d.X, d.y, epochs=300, b0=0, C=float(np.mean(np.sum(d.X ** 2, 1))))
    last_epoch = [m for m in trace.mistakes if m >= 299 * 200]
    assert last_epoch == []


def test_folds_partition_the_data():
    n = 57
    for path in [(0,), (3,), (2, 4)]:
        config = kw.Config(folds=5, inner_folds=6)
        train, test = kw.split_at(n, path, config, seed=11)
        assert len(set(train)) == len(train) and not set(train) & set(test)
        if len(path) == 1:
            assert sorted(np.concatenate([train, test])) == list(range(n))
    tests = [kw.split_at(n, (o,), kw.Config(folds=5), seed=11)[1] for o in range(5)]
    assert sorted(np.concatenate(tests)) == list(range(n))
    inner = [kw.split_at(n, (1, i), kw.Config(folds=5, inner_folds=6), seed=11)
             for i in range(6)]
    outer_train = kw.split_at(n, (1,), kw.Config(folds=5, inner_folds=6), seed=11)[0]
    assert sorted(np.concatenate([t for _, t in inner])) == sorted(outer_train)


def test_voted_scores_equal_the_exact_reference():
    """voted_scores against reference.perceptron.predict(mode="voted") on integer data with
    integer parameters (every float64 operation exact), margin and lambda-trick active."""
    from perceptron_oracle.reference.perceptron import perceptron, predict

    d = kw.artificial(6, 0.05, 0.2, seed=4, n_examples=40)
    X, y, Xt = d.X[:30], d.y[:30], d.X[30:]
    theta = int(round(float(np.mean(np.sum(X ** 2, axis=1)))))
    trace = perceptron(X, y, epochs=4, eta=1, b0=-theta, C=theta, tau=theta // 2, lam=1)
    assert len(trace.updates) > 5
    ours = np.sign(kw.voted_scores(X, y, Xt, trace.updates, trace.final["votes"], eta=1.0,
                                   b0=-theta, C=theta))
    assert ours.tolist() == predict(trace, X, y, Xt, mode="voted")


def test_t_interval_is_the_papers_footnote():
    """Footnote 5: with k = 10 folds the half-width is 0.754 times the maximum-likelihood
    standard deviation (t_{9, 0.975} = 2.262 over 3)."""
    values = [91.2, 93.0, 95.1, 89.4, 92.2, 94.7, 90.0, 93.3, 92.8, 91.9]
    mean, half = kw.t_interval(values)
    assert mean == pytest.approx(np.mean(values))
    assert half == pytest.approx(0.754 * np.std(values), rel=1e-3)


def test_choose_takes_the_first_best_setting():
    config = kw.Config(taus=(Fraction(0), Fraction(1)), lams=(Fraction(0), Fraction(1)),
                       alphas=(None, 5))
    grid = config.grid()
    means = {s: {h: 80.0 for h in kw.HYPOTHESES} for s in grid}
    means[(Fraction(1), Fraction(0), None)]["last"] = 90.0
    means[(Fraction(1), Fraction(0), 5)]["last"] = 95.0
    means[(Fraction(0), Fraction(1), None)]["last"] = 99.0
    assert kw.choose(means, "nothing", "last", grid) == (0, 0, None)
    assert kw.choose(means, "tau", "last", grid) == (1, 0, None)
    assert kw.choose(means, "tau -> alpha", "last", grid) == (1, 0, 5)
    assert kw.choose(means, "tau -> lam", "last", grid) == (1, 0, None)
    assert kw.choose(means, "tau x lam", "last", grid) == (0, 1, None)
    assert kw.choose(means, "alpha", "voted", grid) == (0, 0, None)


def test_wdbc_table3_last_hypothesis_reproduces():
    """Table 3, Wdbc, last hypothesis: nothing 92.4 and tau 93.2 (parameter search, 10-fold
    cross-validation, 100 epochs, the paper's tau grid), each within 2 points."""
    config = kw.Config(lams=(Fraction(0),), alphas=(None,))
    task_list = kw.tasks([("wdbc",)], config, seed=0)
    results = kw.collect(task_list, [kw.fold_task(*t) for t in task_list])
    table = kw.search_table(results, [("wdbc",)], config)
    assert abs(table["last"]["nothing"][0] - 92.4) <= 2.0
    assert abs(table["last"]["tau"][0] - 93.2) <= 2.0
