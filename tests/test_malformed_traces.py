"""``verify --results`` on trace files that are malformed, and on golden directories that are
not intact.

Each test writes the reference's trace of every perceptron golden case, breaks one file, and
runs the command line: exit status 1, exactly one FAIL line, for the broken case, naming the
problem and its key path (SPEC.md section 5), and no traceback.  Inputs that are large
(a million digits, a 1 GB file, 10^15 claimed trials, deep nesting) are also timed: reading
them must cost about as much as reading the bytes, which a quadratic conversion or a loop
over the claimed trials would not.  A golden directory that is tampered with, truncated,
incomplete or without a readable manifest is refused with exit status 2 and one line on
stderr naming the file.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import time
from collections.abc import Callable
from typing import Any

import pytest

from perceptron_oracle import cli, golden, trace
from perceptron_oracle.errors import TraceFormatError
from perceptron_oracle.registry import get
from perceptron_oracle.verify import result_file

# A conversion quadratic in the digits takes seconds on a million digits; reading them, or
# refusing them unread, takes milliseconds.
FAST_SECONDS = 1.0


@pytest.fixture(scope="module")
def reference_traces() -> tuple[dict[str, bytes], golden.Case]:
    """Every perceptron golden case's reference trace, by result file name, and the case
    whose file the tests break (linear kernel, w of four coordinates, alpha holding a 1)."""
    cases = [c for c in golden.load() if c.algorithm == "perceptron"]
    files = {}
    for case in cases:
        run = get(case.algorithm).implementation("reference")
        text = run(case.X, case.y, epochs=case.epochs, kernel=case.kernel,
                   **case.params).to_json()
        files[result_file(pathlib.Path(), case).name] = text.encode()
    broken = next(c for c in cases if c.kernel == "linear" and len(c.expected.final["w"]) >= 4
                  and 1 in c.expected.final["alpha"] and len(c.expected.mistakes) >= 2)
    return files, broken


@pytest.fixture(scope="module")
def golden_cases() -> dict[pathlib.Path, list[golden.Case]]:
    return {}


@pytest.fixture
def results(tmp_path, reference_traces, golden_cases, monkeypatch) -> pathlib.Path:
    """The reference traces in a fresh directory.  golden.load is memoised for these tests
    (the golden directory is not what they break; the tests at the end of the file load it
    afresh each time)."""
    real_load = golden.load

    def load(directory=None):
        key = pathlib.Path(directory or golden.default_directory()).resolve()
        if key not in golden_cases:
            golden_cases[key] = real_load(directory)
        return golden_cases[key]
    monkeypatch.setattr(golden, "load", load)
    directory = tmp_path / "results"
    directory.mkdir()
    for name, raw in reference_traces[0].items():
        (directory / name).write_bytes(raw)
    return directory


@pytest.fixture
def broken(reference_traces) -> golden.Case:
    return reference_traces[1]


def _verify(directory: pathlib.Path, capsys) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    status = cli.main(["verify", "--results", str(directory), "--algorithm", "perceptron"])
    seconds = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return status, out, err, seconds


def _expect_one_failure(results: pathlib.Path, case: golden.Case, capsys,
                        *fragments: str) -> float:
    """Run verify; the broken case, and only it, fails, naming every fragment.  Returns the
    seconds the command took."""
    status, out, err, seconds = _verify(results, capsys)
    assert status == 1, out + err
    failures = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(failures) == 1, failures
    assert f" {case.name} " in failures[0]
    for fragment in fragments:
        assert fragment in failures[0], failures[0]
    return seconds


def _expect_refused(results: pathlib.Path, case: golden.Case, *fragments: str) -> None:
    """The case's trace file is refused with one line naming every fragment (read directly:
    the inputs listed in the module docstring go through the command line)."""
    path = result_file(results, case)
    with pytest.raises(TraceFormatError) as refused:
        trace.load_trace_file(path)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{path.name}: ")
    for fragment in fragments:
        assert fragment in message, message


def _rewrite(results: pathlib.Path, case: golden.Case,
             change: Callable[[dict[str, Any]], Any]) -> tuple[pathlib.Path, dict[str, Any]]:
    """Apply ``change`` to the case's trace document and write it back; ``change`` may
    return JSON text to write instead (for what json.dumps would not write)."""
    path = result_file(results, case)
    document = json.loads(path.read_text())
    text = change(document)
    path.write_text(text if isinstance(text, str) else json.dumps(document))
    return path, document


def _with_token(document: dict[str, Any], token: str, set_: Callable[[Any], None]) -> str:
    """The document with a placeholder set by ``set_`` replaced by the raw JSON ``token``."""
    set_("@@TOKEN@@")
    return json.dumps(document).replace('"@@TOKEN@@"', token)


def _timed_load(path: pathlib.Path) -> float:
    start = time.perf_counter()
    with pytest.raises(TraceFormatError):
        trace.load_trace_file(path)
    return time.perf_counter() - start


def test_intact_traces_all_pass(results, capsys):
    status, out, err, _ = _verify(results, capsys)
    assert status == 0, out + err
    assert "FAIL" not in out


# -- the bytes and the JSON ------------------------------------------------------------------

def test_truncated_json(results, broken, capsys):
    path = result_file(results, broken)
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
    _expect_one_failure(results, broken, capsys, path.name, "not valid JSON", "ends early",
                        "truncated")


def test_empty_file(results, broken):
    result_file(results, broken).write_bytes(b"")
    _expect_refused(results, broken, "not valid JSON: empty")


def test_not_utf8(results, broken, capsys):
    path = result_file(results, broken)
    raw = path.read_bytes()
    at = raw.index(b'"reference"') + 2
    path.write_bytes(raw[:at] + b"\xe9" + raw[at:])  # Latin-1 e-acute inside a string
    _expect_one_failure(results, broken, capsys, "not UTF-8", "byte 0xe9", f"offset {at}")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinities(results, broken, capsys, token):
    _rewrite(results, broken, lambda d: _with_token(
        d, token, lambda v: d["final"]["w"].__setitem__(3, v)))
    _expect_one_failure(results, broken, capsys, f"final.w[3]: {token}", "finite numbers")


def test_number_beyond_double_range(results, broken):
    _rewrite(results, broken, lambda d: _with_token(
        d, "-1e400", lambda v: d["final"].__setitem__("b", v)))
    _expect_refused(results, broken, "final.b: -1e400", "range of a double")


def test_repeated_key(results, broken):
    _rewrite(results, broken, lambda d: json.dumps(d).replace('"final": {',
                                                              '"final": {"b": "0", ', 1))
    _expect_refused(results, broken, "final: an object with the key 'b' twice")


def test_nesting_thousands_deep(results, broken, capsys):
    path, _ = _rewrite(results, broken, lambda d: _with_token(
        d, "[" * 100_000 + "]" * 100_000, lambda v: d["final"].__setitem__("w", v)))
    assert _timed_load(path) < FAST_SECONDS
    _expect_one_failure(results, broken, capsys, "nested thousands of levels deep")


def test_nesting_past_the_limit(results, broken):
    deep: Any = 1
    for _ in range(trace.MAX_NESTING + 5):
        deep = {"x": deep}
    _rewrite(results, broken, lambda d: d["final"].__setitem__("extra", deep))
    _expect_refused(results, broken, "final.extra.x.x",
                        f"nested more than {trace.MAX_NESTING} levels deep")


def test_file_of_a_gigabyte_is_refused_unread(results, broken, capsys):
    path = result_file(results, broken)
    with open(path, "r+b") as handle:  # sparse: no gigabyte written to disk
        handle.truncate(2**30)
    assert _timed_load(path) < FAST_SECONDS
    seconds = _expect_one_failure(results, broken, capsys, path.name, f"{2**30} bytes",
                                  f"({trace.MAX_TRACE_BYTES} bytes); not read")
    assert seconds < 10


def test_file_one_byte_above_a_lowered_limit(results, broken, monkeypatch):
    limit = max(p.stat().st_size for p in results.iterdir())
    path = result_file(results, broken)
    path.write_bytes(path.read_bytes().ljust(limit + 1))   # valid JSON, padded with blanks
    monkeypatch.setattr(trace, "MAX_TRACE_BYTES", limit)
    _expect_refused(results, broken, f"{limit + 1} bytes, larger than")


def test_directory_in_place_of_a_file(results, broken):
    path = result_file(results, broken)
    path.unlink()
    path.mkdir()
    _expect_refused(results, broken, f"{path.name}: not a regular file")


# -- types -----------------------------------------------------------------------------------

def test_trace_that_is_not_an_object(results, broken):
    result_file(results, broken).write_text("[1, 2, 3]")
    _expect_refused(results, broken, "a trace must be a JSON object, got a list")


def test_mistakes_as_strings(results, broken, capsys):
    _rewrite(results, broken, lambda d: d.update(mistakes=[str(t) for t in d["mistakes"]]))
    _expect_one_failure(results, broken, capsys,
                        "mistakes[0]: expected a trial index (an integer), got '")


def test_mistakes_as_one_string(results, broken):
    _rewrite(results, broken, lambda d: d.update(
        mistakes=",".join(str(t) for t in d["mistakes"])))
    _expect_refused(results, broken, "mistakes: expected a list of trial indices")


def test_boolean_as_epochs(results, broken, capsys):
    _rewrite(results, broken, lambda d: d.update(epochs=True))
    _expect_one_failure(results, broken, capsys, "epochs: expected a positive integer, got true")


def test_boolean_as_integer_in_final(results, broken, capsys):
    """alpha[i] = 1 written as true: equal in Python, refused in a trace."""
    i = broken.expected.final["alpha"].index(1)
    _rewrite(results, broken, lambda d: d["final"]["alpha"].__setitem__(i, True))
    _expect_one_failure(results, broken, capsys, f"final.alpha[{i}]: true where a number")


def test_boolean_as_trial_index(results, broken):
    _rewrite(results, broken, lambda d: d["updates"].__setitem__(0, False))
    _expect_refused(results, broken, "updates[0]: expected a trial index",
                        "got false")


def test_object_where_a_number_is_expected_in_a_list(results, broken, capsys):
    _rewrite(results, broken, lambda d: d["final"]["w"].__setitem__(3, {"p": 1, "q": 3}))
    _expect_one_failure(results, broken, capsys, "final.w[3]: an object where a number belongs")


def test_object_where_a_number_is_expected(results, broken, capsys):
    _rewrite(results, broken, lambda d: d["final"]["longest_survivor"].__setitem__("b", {}))
    _expect_one_failure(results, broken, capsys, "final.longest_survivor.b", "number")


def test_string_that_is_not_an_exact_number(results, broken):
    _rewrite(results, broken, lambda d: d["final"]["averaged"]["w"].__setitem__(0, "0.5"))
    _expect_refused(results, broken, "final.averaged.w[0]: '0.5' is not a number")


def test_null_in_final(results, broken):
    _rewrite(results, broken, lambda d: d["final"].__setitem__("b", None))
    _expect_refused(results, broken, "final.b: null where a number belongs")


def test_final_is_a_list(results, broken, capsys):
    _rewrite(results, broken, lambda d: d.update(final=list(d["final"].values())))
    _expect_one_failure(results, broken, capsys, "final: expected an object, got a list")


def test_params_not_an_object(results, broken, capsys):
    _rewrite(results, broken, lambda d: d.update(params="tau=0"))
    _expect_one_failure(results, broken, capsys, "params: expected an object, got 'tau=0'")


def test_algorithm_not_a_string(results, broken):
    _rewrite(results, broken, lambda d: d.update(algorithm=["perceptron"]))
    _expect_refused(results, broken, "algorithm: expected a string, got a list")


def test_wrong_format(results, broken):
    _rewrite(results, broken, lambda d: d.update(format="perceptron-oracle/trace@2"))
    _expect_refused(results, broken, "format: expected", "got 'perceptron-oracle")


# -- trial indices ---------------------------------------------------------------------------

def test_trials_unsorted(results, broken, capsys):
    m = broken.expected.mistakes
    _rewrite(results, broken, lambda d: d.update(mistakes=[m[1], m[0]] + m[2:]))
    _expect_one_failure(results, broken, capsys,
                        f"mistakes[1]: trial {m[0]} after trial {m[1]}", "strictly ascending")


def test_trials_repeated(results, broken, capsys):
    u = broken.expected.updates
    _rewrite(results, broken, lambda d: d.update(updates=[u[0]] + u))
    _expect_one_failure(results, broken, capsys, f"updates[1]: trial {u[0]} repeated")


def test_trial_negative(results, broken, capsys):
    _rewrite(results, broken, lambda d: d.update(mistakes=[-1] + d["mistakes"]))
    _expect_one_failure(results, broken, capsys, "mistakes[0]: trial -1 is negative")


def test_trial_out_of_range(results, broken, capsys):
    total = broken.expected.n_examples * broken.expected.epochs
    _rewrite(results, broken, lambda d: d["mistakes"].append(total))
    _expect_one_failure(results, broken, capsys, f"trial {total} is outside 0..{total - 1}")


def test_trial_index_as_float(results, broken):
    _rewrite(results, broken, lambda d: d["mistakes"].__setitem__(0, d["mistakes"][0] + 0.5))
    _expect_refused(results, broken, "mistakes[0]: expected a trial index")


# -- absurd sizes ----------------------------------------------------------------------------

def test_claim_of_10_to_the_15_trials(results, broken, capsys):
    """A trace claiming 10^15 trials, with a trial near the end: read and compared without
    touching the trials it claims."""
    path, _ = _rewrite(results, broken, lambda d: (
        d.update(n_examples=10**15), d["mistakes"].append(10**15 * d["epochs"] - 1)))
    start = time.perf_counter()
    assert trace.load_trace_file(path).n_examples == 10**15
    assert time.perf_counter() - start < FAST_SECONDS
    seconds = _expect_one_failure(results, broken, capsys,
                                  f"n_examples: expected {broken.expected.n_examples}, "
                                  "got 1000000000000000")
    assert seconds < 10


def test_claim_beyond_2_to_the_63_trials(results, broken):
    _rewrite(results, broken, lambda d: d.update(epochs=10**40))
    _expect_refused(results, broken, "n_examples x epochs", "2^63")


def test_scores_more_than_trials(results, broken):
    total = broken.expected.n_examples * broken.expected.epochs
    _rewrite(results, broken, lambda d: d.update(scores=["0"] * (total + 1)))
    _expect_refused(results, broken, f"scores: {total + 1} scores for {total}")


def test_exact_number_with_zero_denominator(results, broken, capsys):
    _rewrite(results, broken, lambda d: d["final"]["w"].__setitem__(3, "3/0"))
    _expect_one_failure(results, broken, capsys, "final.w[3]: an exact number with "
                        "denominator 0: '3/0'")


def test_exact_number_of_a_million_digits(results, broken, capsys):
    path, _ = _rewrite(results, broken, lambda d: d["final"]["w"].__setitem__(
        3, "1/" + "7" * 10**6))
    assert _timed_load(path) < FAST_SECONDS
    seconds = _expect_one_failure(results, broken, capsys, "final.w[3]: an exact number whose "
                                  "denominator has 1000000 digits (the limit is 100000)")
    assert seconds < 10


def test_exact_number_at_the_digit_limit_is_read(results, broken, capsys):
    """At the limit the number is read (and is wrong): the refusal is the limit, not the
    4300 digits of Python's int()."""
    digits = trace.MAX_EXACT_DIGITS
    path, _ = _rewrite(results, broken, lambda d: d["final"]["w"].__setitem__(
        3, "9" * digits + "/" + "1" + "0" * (digits - 1)))
    start = time.perf_counter()
    assert trace.load_trace_file(path).final["w"][3] > 9
    assert time.perf_counter() - start < 2 * FAST_SECONDS
    _expect_one_failure(results, broken, capsys, "final.w[3]: expected")


def test_json_integer_of_a_million_digits(results, broken, capsys):
    path, _ = _rewrite(results, broken, lambda d: _with_token(
        d, "9" * 10**6, lambda v: d["final"]["alpha"].__setitem__(0, v)))
    assert _timed_load(path) < FAST_SECONDS
    seconds = _expect_one_failure(results, broken, capsys, "final.alpha[0]: a JSON integer of "
                                  "1000000 digits")
    assert seconds < 10


def test_trial_index_of_a_million_digits(results, broken):
    _rewrite(results, broken, lambda d: _with_token(
        d, "1" + "0" * 999_999, lambda v: d["mistakes"].append(v)))
    _expect_refused(results, broken, "a JSON integer of 1000000 digits")


# -- the golden directory --------------------------------------------------------------------

@pytest.fixture
def golden_copy(tmp_path) -> pathlib.Path:
    directory = tmp_path / "golden"
    shutil.copytree(golden.default_directory(), directory,
                    ignore=shutil.ignore_patterns("__pycache__", "*.py", "*.md"))
    return directory


def _verify_against(golden_dir: pathlib.Path, tmp_path: pathlib.Path, capsys) -> str:
    """verify with ``--golden``: exit status 2 and one line on stderr, which is returned."""
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    status = cli.main(["verify", "--results", str(results), "--golden", str(golden_dir)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert status == 2, out + err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_golden_copy_is_accepted(golden_copy, tmp_path, capsys):
    """The copy itself is intact: the refusals below come from the one change each makes."""
    results = tmp_path / "results"
    results.mkdir()
    status = cli.main(["verify", "--results", str(results), "--golden", str(golden_copy),
                       "--algorithm", "perceptron"])
    out, err = capsys.readouterr()
    assert status == 1 and "nothing was checked" in err   # every case not applicable


def test_golden_file_tampered(golden_copy, tmp_path, capsys):
    path = golden_copy / "perceptron.json"
    text = path.read_text()
    at = text.index('"y": [') + len('"y": [')
    flipped = "1" if text[at] == "-" else "-"
    path.write_text(text[:at] + flipped + text[at + 1:])   # one label changed
    line = _verify_against(golden_copy, tmp_path, capsys)
    assert "perceptron.json" in line and "sha256" in line


def test_golden_file_truncated(golden_copy, tmp_path, capsys):
    path = golden_copy / "second_order.json"
    path.write_bytes(path.read_bytes()[:1000])
    line = _verify_against(golden_copy, tmp_path, capsys)
    assert "second_order.json" in line and "sha256" in line


def test_golden_file_missing(golden_copy, tmp_path, capsys):
    (golden_copy / "romma_pumma.json").unlink()
    line = _verify_against(golden_copy, tmp_path, capsys)
    assert "romma_pumma.json" in line and "listed in the manifest but missing" in line


def test_golden_manifest_missing(golden_copy, tmp_path, capsys):
    (golden_copy / "manifest.json").unlink()
    line = _verify_against(golden_copy, tmp_path, capsys)
    assert "manifest.json" in line and "no manifest" in line


def test_golden_manifest_not_json(golden_copy, tmp_path, capsys):
    path = golden_copy / "manifest.json"
    path.write_text(path.read_text()[:-20])
    line = _verify_against(golden_copy, tmp_path, capsys)
    assert "manifest.json" in line and "not valid JSON" in line


def test_golden_manifest_not_a_manifest(golden_copy, tmp_path, capsys):
    (golden_copy / "manifest.json").write_text('["perceptron.json"]')
    line = _verify_against(golden_copy, tmp_path, capsys)
    assert "manifest.json" in line and "manifest@1" in line


def test_numpy_values_from_a_python_callable_are_named_with_the_fix():
    """A Python implementation returning numpy arrays or scalars where the trace holds lists
    and ints: one line naming the value and how to give Python numbers."""
    import numpy as np

    doc = {"format": trace.FORMAT, "algorithm": "perceptron", "form": "primal", "params": {},
           "n_examples": 3, "epochs": 1, "mistakes": np.array([0, 1]), "updates": [0, 1],
           "final": {}}
    with pytest.raises(TraceFormatError, match=r"^mistakes: expected a list of trial "
                       r"indices, got a numpy ndarray \(give Python numbers: \.tolist\(\)"):
        trace.Trace.from_dict(doc)
    doc["mistakes"] = [np.int64(0), 1]
    with pytest.raises(TraceFormatError, match=r"^mistakes\[0\]: .* got a numpy int64 "):
        trace.Trace.from_dict(doc)
