"""The command line (CONTRACT.md): ``perceptron-oracle run``; bad input is one line, exit 2."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from perceptron_oracle.cli import main
from perceptron_oracle.datasets import builtin
from perceptron_oracle.trace import Trace


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The builtin noisy set written as .npz, .csv and svmlight."""
    root = tmp_path_factory.mktemp("data")
    ds = builtin("noisy")
    np.savez(root / "d.npz", X=ds.X, y=ds.y)
    with open(root / "d.csv", "w") as handle:
        for row, label in zip(ds.X, ds.y):
            handle.write(",".join(repr(float(v)) for v in row) + f",{label}\n")
    with open(root / "d.svm", "w") as handle:
        for row, label in zip(ds.X, ds.y):
            feats = " ".join(f"{i + 1}:{float(v)!r}" for i, v in enumerate(row) if v != 0)
            handle.write(f"{label:+d} {feats}\n")
    return root


@pytest.mark.parametrize("name", ["d.npz", "d.csv", "d.svm"])
def test_run_dual_rbf_writes_a_valid_trace(files, tmp_path, capsys, name):
    out = tmp_path / "t.json"
    code = main(["run", "perceptron", "--data", str(files / name), "--impl", "fast",
                 "--form", "dual", "--kernel", "rbf:gamma=0.5", "--out", str(out)])
    printed = capsys.readouterr().out.strip()
    assert code == 0
    assert printed.count("\n") == 0 and "mistakes" in printed and "updates" in printed
    trace = Trace.from_json(out.read_text())
    assert (trace.algorithm, trace.form, trace.kernel) == ("perceptron", "dual", "rbf:gamma=1/2")
    assert f"{len(trace.mistakes)} mistakes" in printed


def test_all_formats_give_the_same_trace(files, tmp_path):
    traces = []
    for name in ("d.npz", "d.csv", "d.svm"):
        out = tmp_path / f"{name}.json"
        assert main(["run", "perceptron", "--data", str(files / name), "--impl", "fast",
                     "--epochs", "3", "--param", "tau=1/2", "--out", str(out)]) == 0
        traces.append(json.loads(out.read_text()))
    assert traces[0] == traces[1]  # dense from .npz and .csv: the same doubles, same order
    sparse = traces[2]             # CSR from svmlight: sums in another order
    for key in ("mistakes", "updates"):
        assert sparse[key] == traces[0][key]
    assert sparse["final"]["alpha"] == traces[0]["final"]["alpha"]
    assert np.allclose(sparse["final"]["w"], traces[0]["final"]["w"], rtol=1e-12, atol=1e-14)


def test_reference_reads_parameters_exactly(files, tmp_path):
    out = tmp_path / "t.json"
    assert main(["run", "perceptron", "--data", str(files / "d.npz"), "--param", "eta=0.1",
                 "--param", "alpha_bound=2", "--out", str(out)]) == 0
    trace = json.loads(out.read_text())
    assert trace["params"]["eta"] == "1/10" and trace["params"]["alpha_bound"] == 2
    assert trace["form"] == "reference"


def test_preprocessing_flags(files, tmp_path):
    out = tmp_path / "t.json"
    assert main(["run", "perceptron", "--data", str(files / "d.csv"), "--normalize", "2",
                 "--add-bias", "--impl", "fast", "--out", str(out)]) == 0
    assert len(Trace.from_json(out.read_text()).final["w"]) == 6


@pytest.mark.parametrize("argv, message", [
    (["run", "perceptron", "--data", "builtin:nope"], "unknown builtin"),
    (["run", "nosuch", "--data", "builtin:noisy"], "unknown algorithm"),
    (["run", "perceptron", "--data", "builtin:noisy", "--impl", "fast", "--form", "x"],
     "no fast form"),
    (["run", "perceptron", "--data", "builtin:noisy", "--param", "zeta=1"],
     "unknown parameter"),
    (["run", "perceptron", "--data", "builtin:noisy", "--param", "eta"], "NAME=VALUE"),
    (["run", "perceptron", "--data", "builtin:noisy", "--param", "eta=abc"], "eta"),
    (["run", "perceptron", "--data", "builtin:noisy", "--param", "tau=-1"], "tau"),
    (["run", "perceptron", "--data", "builtin:noisy", "--kernel", "rbf:gamma=0"], "gamma"),
    (["run", "perceptron", "--data", "builtin:noisy", "--impl", "fast", "--form", "primal",
      "--kernel", "rbf:gamma=1"], "linear kernel only"),
    (["run", "perceptron", "--data", "builtin:noisy", "--epochs", "0"], "epochs"),
    (["run", "perceptron", "--data", "builtin:noisy", "--epochs", "x"], "epochs"),
    (["run", "perceptron", "--data", "builtin:noisy", "--normalize", "p"], "normalize"),
    (["run", "perceptron", "--data", "/nonexistent/file.csv"], "no such file"),
    (["run", "perceptron"], "--data"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


@pytest.mark.parametrize("content, suffix, message", [
    ("1,2,1\n1,2,3\n", ".csv", "label 3"),
    ("1,nan,1\n", ".csv", "NaN"),
    ("1,2,1\n1,2\n", ".csv", "fields"),
    ("1 1:2\n-1 1:x\n", ".svm", "malformed"),
    ("", ".csv", "empty"),
    ("1,2,x\n3,4,1\n", ".csv", ":1: not a number"),   # a bad first row is not a header
    ("a,b,label\n", ".csv", "empty"),                 # a header alone is no data
])
def test_bad_files_are_one_line_and_exit_2(tmp_path, capsys, content, suffix, message):
    path = tmp_path / f"bad{suffix}"
    path.write_text(content)
    assert main(["run", "perceptron", "--data", str(path), "--impl", "fast"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and str(path) in err


@pytest.mark.parametrize("argv, message", [
    (["peers", "--library", "foo"], "argument --library: invalid choice: 'foo'"),
    (["fragility", "--bogus"], "unrecognized arguments: --bogus"),
    (["fragility", "--algorithm", "bogus"], "unknown algorithm 'bogus'"),
    (["experiment", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_the_forwarded_commands_refuse_bad_arguments_in_one_line(argv, message, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and message in captured.err and captured.out == ""


def test_running_out_of_memory_is_one_line(monkeypatch, capsys):
    import perceptron_oracle.cli as cli

    def exhausted(args):
        raise MemoryError

    monkeypatch.setattr(cli, "_run", exhausted)
    assert main(["run", "perceptron", "--data", "builtin:separable"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("perceptron-oracle: error: out of memory")


def test_a_csv_header_of_names_is_skipped(tmp_path):
    from perceptron_oracle.data import load

    path = tmp_path / "h.csv"
    path.write_text("x1,x2,label\n1,2,1\n-1,0.5,-1\n")
    dataset = load(path)
    assert dataset.X.tolist() == [[1.0, 2.0], [-1.0, 0.5]] and dataset.y.tolist() == [1, -1]


def test_golden_check_of_a_directory_without_golden_files_is_one_line(tmp_path, capsys):
    assert main(["golden", "--check", "--golden", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no golden files there (no manifest.json)" in err


@pytest.mark.skipif(shutil.which("perceptron-oracle") is None,
                    reason="console script not on PATH (package not installed as the README says)")
def test_a_reader_that_stops_early_gets_no_error(tmp_path):
    """``verify ... | head -1``: the closed pipe ends the command quietly.  The reader here
    (``true``) has gone before the first write, so every write fails."""
    done = subprocess.run("perceptron-oracle verify --impl wrong_perceptrons:correct "
                          "--algorithm perceptron | true", shell=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).parent)},
                          capture_output=True, text=True)
    assert done.stderr == ""


def test_bad_npz_shapes(tmp_path, capsys):
    np.savez(tmp_path / "m.npz", X=np.ones((3, 2)), y=np.array([1, -1]))
    assert main(["run", "perceptron", "--data", str(tmp_path / "m.npz")]) == 2
    assert "3 rows but y has 2" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("perceptron-oracle") is None,
                    reason="console script not on PATH (package not installed as the README says)")
def test_installed_console_script(tmp_path):
    out = tmp_path / "t.json"
    done = subprocess.run(["perceptron-oracle", "run", "perceptron", "--data",
                           "builtin:separable", "--out", str(out)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "perceptron reference linear on builtin:separable" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "perceptron_oracle.cli", "run", "x",
                          "--data", "builtin:separable"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("perceptron-oracle: error:")


def test_traces_validate_against_the_schema(files, tmp_path):
    import pathlib

    import jsonschema  # in the [test] extra
    schema_path = (pathlib.Path(__file__).parent.parent / "perceptron_oracle" /
                   "conformance_data" / "schema" / "trace-1.schema.json")
    validator = jsonschema.Draft202012Validator(json.loads(schema_path.read_text()))
    for argv in (["--impl", "fast", "--form", "dual", "--kernel", "poly:degree=3,coef0=-1/2"],
                 ["--param", "eta=0.1"], ["--impl", "fast", "--kernel", "rbf:gamma=2"]):
        out = tmp_path / "t.json"
        assert main(["run", "perceptron", "--data", str(files / "d.svm"), "--out", str(out),
                     *argv]) == 0
        doc = json.loads(out.read_text())
        assert not list(validator.iter_errors(doc))
        doc["mistakes"] = ["0"]
        assert list(validator.iter_errors(doc))  # the schema does reject a malformed trace


def test_builtin_list_describes_every_builtin_data_set(capsys):
    from perceptron_oracle.datasets import BUILTIN

    assert main(["run", "perceptron", "--data", "builtin:list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [f"builtin:{name}" for name in BUILTIN]
    assert main(["run", "perceptron", "--data", "builtin:nope"]) == 2
    assert "builtin:list describes them" in capsys.readouterr().err


def test_the_trace_schema_takes_every_algorithms_trace():
    """Each registered algorithm's reference trace, its scores recorded, validates; the
    schema names exactly the registry's algorithms; a null score and a signed exact number,
    which a trace file may hold (SPEC.md section 5), validate too."""
    import pathlib

    import jsonschema

    from perceptron_oracle.registry import ALGORITHMS
    schema = json.loads((pathlib.Path(__file__).parent.parent / "perceptron_oracle" /
                         "conformance_data" / "schema" / "trace-1.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    assert set(schema["properties"]["algorithm"]["enum"]) == set(ALGORITHMS)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -0.5], [1.0, 1.0], [0.5, -1.0]])
    y = np.array([1, 1, -1, 1, -1])
    for name, algorithm in ALGORITHMS.items():
        trace = algorithm.implementation("reference")(X, y, epochs=2, record_scores=True)
        doc = json.loads(trace.to_json())
        assert not list(validator.iter_errors(doc)), name
    doc["scores"][0] = None
    doc["final"] = {"b": "+1/2"}
    assert not list(validator.iter_errors(doc))
    assert Trace.from_dict(doc).scores[0] is None


ISSUE_COMMANDS = [  # the commands issues 3-5 name, on the builtin noisy set
    ["higher_order", "--form", "primal", "--param", "c=0.4"],
    ["higher_order", "--form", "dual", "--param", "c=0.4", "--param", "rho=theorem1"],
    ["higher_order", "--form", "implicit", "--param", "c=0.4", "--param", "p=4",
     "--param", "sparse=true"],
    ["second_order", "--form", "primal", "--param", "a=1"],
    ["second_order", "--form", "dual", "--param", "a=1"],   # kernels: test_differential
    ["second_order", "--form", "dual", "--param", "pseudoinverse=true"],
    ["romma", "--form", "primal", "--param", "delta=0.1"],
    ["pumma", "--form", "primal", "--param", "p=2", "--param", "delta=0.1"],
    ["pumma", "--form", "dual", "--param", "p=2", "--param", "delta=0.1", "--param", "C=1"],
]


@pytest.mark.parametrize("command", ISSUE_COMMANDS, ids=lambda c: ":".join(c[:3:2]))
def test_issue_commands_run_and_agree_with_the_reference(command, tmp_path, capsys):
    """Each command works, writes a trace of the form asked for, and agrees with the
    reference run by the same command line (compare: fragile trials excused)."""
    from perceptron_oracle.compare import compare
    from perceptron_oracle.preprocessing import normalize

    fast, ref = tmp_path / "fast.json", tmp_path / "ref.json"
    common = ["run", command[0], "--data", "builtin:noisy", "--epochs", "2", *command[1:]]
    assert main([*common, "--impl", "fast", "--out", str(fast)]) == 0
    printed = capsys.readouterr().out
    form_at = common.index("--form")
    reference = common[:form_at] + common[form_at + 2:]
    assert main([*reference, "--out", str(ref)]) == 0
    actual, expected = Trace.from_json(fast.read_text()), Trace.from_json(ref.read_text())
    assert actual.form == common[form_at + 1] and expected.form == "reference"
    X = builtin("noisy").X
    if command[0] == "higher_order":   # normalised by default (SPEC.md section 1)
        p = 4 if "p=4" in command else 2
        assert f"normalized to unit {p}-norm" in printed
        X = normalize(X, float(p))
    else:
        assert "normalized" not in printed
    result = compare(expected, actual, X)
    assert result.ok, result.describe()


def test_normalize_none_turns_the_default_off(capsys):
    assert main(["run", "higher_order", "--data", "builtin:noisy", "--impl", "fast",
                 "--normalize", "none"]) == 0
    assert "normalized" not in capsys.readouterr().out
    assert main(["run", "pnorm_perceptron", "--data", "builtin:noisy", "--param", "p=3",
                 "--impl", "fast"]) == 0
    assert "normalized to unit 3-norm" in capsys.readouterr().out


# -- one-vs-rest ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def three_classes(tmp_path_factory):
    """30 small-integer examples with labels 4, 7 and 9 as a CSV file (label last)."""
    rng = np.random.default_rng(5)
    X = rng.integers(-3, 4, size=(30, 3)).astype(float)
    labels = np.array([4, 7, 9])[rng.integers(0, 3, size=30)]
    path = tmp_path_factory.mktemp("ovr") / "three.csv"
    path.write_text("".join(",".join(f"{v:g}" for v in row) + f",{label}\n"
                            for row, label in zip(X, labels)))
    return path, X, labels


@pytest.mark.parametrize("algorithm, extra", [("perceptron", ["--param", "tau=1/2"]),
                                              ("second_order", [])])
def test_one_vs_rest_is_one_binary_run_per_class(three_classes, tmp_path, capsys,
                                                 algorithm, extra):
    path, X, labels = three_classes
    records = {}
    for impl in ("fast", "reference"):
        out = tmp_path / f"{impl}.json"
        assert main(["run", algorithm, "--data", str(path), "--impl", impl, "--multiclass",
                     "ovr", "--epochs", "2", "--out", str(out)] + extra) == 0
        assert "3 classes, 30 examples x 2 epochs" in capsys.readouterr().out
        records[impl] = json.loads(out.read_text())
        assert records[impl]["format"] == "perceptron-oracle/one-vs-rest@1"
        assert records[impl]["classes"] == [4, 7, 9]
    params = {"tau": "1/2"} if extra else {}
    for k, cls in enumerate((4, 7, 9)):
        binary = np.where(labels == cls, 1, -1)
        from perceptron_oracle.registry import run
        want = run(algorithm, X, binary, epochs=2, **params)
        for impl in ("fast", "reference"):
            got = Trace.from_dict(records[impl]["traces"][k])
            assert (got.mistakes, got.updates) == (want.mistakes, want.updates), (impl, cls)


def test_class_labels_need_one_vs_rest(three_classes, capsys):
    path, _, labels = three_classes
    assert main(["run", "perceptron", "--data", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"label {labels[0]} at row 0 is not -1 or +1" in err
    assert "--multiclass ovr" in err


def test_one_vs_rest_refuses_fractional_labels(tmp_path, capsys):
    path = tmp_path / "frac.csv"
    path.write_text("1,2,0.5\n2,1,1\n")
    assert main(["run", "perceptron", "--data", str(path), "--multiclass", "ovr"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "label 0.5 at row 0 is not an integer" in err
