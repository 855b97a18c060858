"""The golden files: lint, schema, tamper detection, regeneration, and the verifier against
the project's fast forms and against deliberately wrong implementations."""

from __future__ import annotations

import json
import pathlib
import shutil

import jsonschema
import pytest

import wrong_higher_order
import wrong_perceptrons
import wrong_romma_pumma
import wrong_second_order
from perceptron_oracle import golden, verify
from perceptron_oracle.cli import main
from perceptron_oracle.golden import GoldenFileError
from perceptron_oracle.trace import Trace

GOLDEN = golden.default_directory()
FILES = json.loads((GOLDEN / "manifest.json").read_text())["files"]


@pytest.fixture(scope="module")
def cases():
    return golden.load(GOLDEN)


@pytest.mark.parametrize("entry", FILES, ids=lambda e: e["path"])
def test_lint(entry):
    """Schema valid, ids unique, counts right, every flag defined and every note used."""
    doc = json.loads((GOLDEN / entry["path"]).read_text())
    schema = json.loads((GOLDEN / doc["schema"]).read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    assert not errors, errors[0].message
    ids = [c["id"] for g in doc["groups"] for c in g["cases"]]
    assert len(ids) == len(set(ids)) == doc["numberOfCases"] == entry["numberOfCases"]
    used = {f for g in doc["groups"] for c in g["cases"] for f in c["flags"]}
    assert used == set(doc["notes"])


def _only_exact_ties(case) -> bool:
    """Whether every fragile trial of the case is an exact tie: the exact margin y score is
    exactly a decision threshold (0; the Perceptron's tau; ROMMA's and hard-margin PUMMA's
    1 - delta; soft-margin PUMMA's update test is not on y score, so 0 alone there).  At a
    tie a float64 form of a non-dyadic state decides by its rounding alone (the forms part
    there: SPEC.md section 3), so it is fragile by nature, not by a loose rule."""
    from perceptron_oracle.registry import run
    trace = run(case.algorithm, case.X, case.y, epochs=case.epochs, kernel=case.kernel,
                record_scores=True, **case.params)
    thresholds = {0}
    if case.algorithm == "perceptron":
        thresholds.add(case.params.get("tau") or 0)
    if case.algorithm == "romma" or (case.algorithm == "pumma"
                                     and case.params.get("C") is None):
        thresholds.add(1 - case.params["delta"])   # with a soft margin the update test
        # compares y score + xi_j, not y score: only 0 counts as a tie there
    T = len(case.y)
    return all(int(case.y[t % T]) * trace.scores[t] in thresholds for t in trace.fragile)


def test_most_cases_are_robust(cases):
    """A float64 implementation must match most cases exactly: in every family at most one
    case in ten carries any fragile trial (the fragile rules are a-posteriori: SPEC.md 3,
    12.5, 13.5, 14.5), and every fragile trial left is an exact tie, fragile by nature (the
    groups that do not test ties run on jittered integers, ``golden_cases._jittered``)."""
    families: dict[str, list] = {}
    for case in cases:
        families.setdefault(case.algorithm, []).append(case)
    for family, members in families.items():
        fragile = [c.name for c in members if c.expected.fragile]
        assert 10 * len(fragile) <= len(members), (family, fragile)
    loose = [c.name for c in cases if c.expected.fragile and not _only_exact_ties(c)]
    assert not loose


def _copy(tmp_path):
    target = tmp_path / "golden"
    shutil.copytree(GOLDEN, target)
    return target


def test_tampered_file_is_named(tmp_path):
    target = _copy(tmp_path)
    path = target / FILES[0]["path"]
    text = path.read_text()
    path.write_text(text.replace('"mistakes": [', '"mistakes": [0, ', 1))
    with pytest.raises(GoldenFileError, match=f"{FILES[0]['path']}: sha256"):
        golden.load(target)


def test_truncated_file_is_named(tmp_path):
    target = _copy(tmp_path)
    path = target / FILES[0]["path"]
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(GoldenFileError, match="sha256"):
        golden.load(target)


def test_malformed_file_with_a_forged_manifest_is_named(tmp_path):
    import hashlib
    target = _copy(tmp_path)
    path = target / FILES[0]["path"]
    doc = json.loads(path.read_text())
    del doc["groups"][0]["cases"][0]["expected"]
    for text, message in ((json.dumps(doc), "case 1: malformed"), ("{", "not valid JSON")):
        path.write_text(text)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["files"][0]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
        (target / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(GoldenFileError, match=message):
            golden.load(target)


def test_missing_manifest_and_files(tmp_path, capsys):
    with pytest.raises(GoldenFileError, match="no manifest"):
        golden.load(tmp_path)
    target = _copy(tmp_path)
    (target / FILES[0]["path"]).unlink()
    with pytest.raises(GoldenFileError, match="missing"):
        golden.load(target)
    assert main(["check", "--golden", str(target)]) == 2
    assert "missing" in capsys.readouterr().err


def test_check_passes_on_every_fast_form(capsys):
    assert main(["check"]) == 0
    out = capsys.readouterr().out
    assert " 0 failed" in out and "perceptron        primal" in out


def test_verify_accepts_the_correct_independent_implementation(capsys):
    assert main(["verify", "--impl", "wrong_perceptrons:correct", "--algorithm",
                 "perceptron", "--quiet"]) == 0


#: Each module of planted bugs and the algorithms it plants them in (tests/wrong_*.py).
WRONG = {wrong_perceptrons: {"perceptron"},
         wrong_higher_order: {"higher_order", "pnorm_perceptron"},
         wrong_second_order: {"second_order"},
         wrong_romma_pumma: {"romma", "pumma"}}
MUTANTS = [pytest.param(module, name, id=f"{module.__name__}:{name}")
           for module in WRONG for name in module.MUTATIONS if name]


def _cases_for(module, cases):
    """The module's algorithms' cases (wrong_second_order is exact: rational kernels only)."""
    return [c for c in cases if c.algorithm in WRONG[module] and not (
        module is wrong_second_order and c.kernel.startswith("rbf"))]


@pytest.mark.parametrize("module", WRONG, ids=lambda m: m.__name__)
def test_verify_accepts_each_unmutated_implementation(module, cases):
    mine = _cases_for(module, cases)
    assert mine, f"no golden case for {WRONG[module]}"
    results = verify.verify(mine, lambda c: verify.run_external(c, module.correct))
    assert all(r.ok for r in results), [r.message for r in results if not r.ok][:3]


@pytest.mark.parametrize("module, mutation", MUTANTS)
def test_verify_rejects_a_wrong_implementation_at_its_first_divergence(module, mutation,
                                                                        cases):
    """The first golden case (in file order) that the planted bug fails names the first
    trial where its trace and the expected one part (or the final state, when the decisions
    agree throughout)."""
    impl = getattr(module, mutation)
    for case in _cases_for(module, cases):
        actual = verify.run_external(case, impl)
        result = verify.judge(case, actual)
        if not result.ok:
            break
    else:
        pytest.fail(f"{mutation} ({module.MUTATIONS[mutation]}) passed every case")
    actual = actual if isinstance(actual, Trace) else Trace.from_dict(actual)
    expected = case.expected
    diverging = sorted((set(actual.mistakes) ^ set(expected.mistakes)) |
                       (set(actual.updates) ^ set(expected.updates)))
    if diverging:
        assert f"trial {diverging[0]} " in result.message, result.message
    else:  # same decisions: the planted bug shows in the final state
        assert result.message.startswith("final"), result.message


def test_verify_results_directory(tmp_path, capsys, cases):
    """Trace files written by another program: all correct, then one missing, one wrong."""
    for case in cases:
        trace = verify.run_fast_form(case, verify.forms_for(case)[-1])
        (tmp_path / f"{pathlib.Path(case.file).stem}-{case.id}.json").write_text(
            trace.to_json())
    assert main(["verify", "--results", str(tmp_path), "--quiet"]) == 0
    (tmp_path / "perceptron-1.json").unlink()
    bad = json.loads((tmp_path / "perceptron-2.json").read_text())
    bad["mistakes"] = bad["mistakes"][1:]
    (tmp_path / "perceptron-2.json").write_text(json.dumps(bad))
    capsys.readouterr()
    assert main(["verify", "--results", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "N/A  perceptron.json:1 [perceptron]" in out  # not run, not a pass
    assert "no trace file (1)" in out  # the summary counts the missing files as one reason
    assert f"1 case(s) had no trace file: case FILE.json:ID is read from DIR/FILE-ID.json " \
           f"(for perceptron.json:1: {tmp_path / 'perceptron-1.json'})" in out
    assert "FAIL perceptron.json:2" in out and "exact score" in out
    assert out.strip().endswith("1 failed, 1 not applicable")


@pytest.mark.parametrize("spec, message", [("nomodule:f", "cannot import"),
                                           ("wrong_perceptrons:nothing", "no attribute"),
                                           ("justaname", "MODULE:CALLABLE")])
def test_verify_impl_errors(spec, message, capsys):
    assert main(["verify", "--impl", spec]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("break_it, message", [
    (lambda m, d: m.update(files=[1]), "a file entry must name a .json file"),
    (lambda m, d: m["files"][0].update(path="../../etc/passwd.json"),
     "a file entry must name a .json file"),
    (lambda m, d: d.update(groups=5), "malformed"),
    (lambda m, d: d["groups"][0]["params"].update(tau="1/0"), "malformed"),
], ids=["entry-not-an-object", "path-outside", "groups-not-a-list", "params-1/0"])
def test_a_malformed_golden_directory_is_refused_naming_the_file(tmp_path, capsys, break_it,
                                                                 message):
    """Even with a manifest whose checksums agree: one line on stderr, exit 2."""
    import hashlib
    target = _copy(tmp_path)
    manifest = json.loads((target / "manifest.json").read_text())
    path = target / FILES[0]["path"]
    doc = json.loads(path.read_text())
    break_it(manifest, doc)
    text = json.dumps(doc)
    path.write_text(text)
    if isinstance(manifest["files"][0], dict) and manifest["files"][0]["path"] == path.name:
        manifest["files"][0]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (target / "manifest.json").write_text(json.dumps(manifest))
    assert main(["verify", "--results", str(tmp_path), "--golden", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and ".json" in err


def test_a_deeply_nested_manifest_is_refused(tmp_path, capsys):
    (tmp_path / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    assert main(["check", "--golden", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "manifest.json: not valid JSON" in err
