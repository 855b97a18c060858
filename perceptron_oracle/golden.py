"""The golden files: generated from the reference, read and checked by any implementation.

Format ``perceptron-oracle/cases@1`` (``conformance_data/README.md``, JSON Schema in
``conformance_data/schema/cases-1.schema.json``): one file per case family, groups sharing an
algorithm, a kernel and parameters, cases with a stable integer id, a comment, flags (each
defined in the file's ``notes``), the inputs and the reference's expected trace.

- X is written as strings holding the shortest decimal that round-trips the double (Python's
  ``repr``): every correctly rounded decimal-to-double conversion (C ``strtod``, JavaScript
  ``Number``, Julia ``parse``, Rust ``str::parse``) recovers the same double.  X is the input
  exactly as the run takes it: any preprocessing named in a case was already applied.
- Exact expected numbers are "p/q" strings; ``final_float`` repeats them as the nearest
  doubles, for reading; ``final_tolerance`` states how far a float64 implementation's final
  state may lie from the exact one (rounding.py), so no tolerance is hidden in code.
- ``manifest.json`` lists every file with its sha256; loading checks it.

Generation is deterministic: seeded data, fixed ordering, one number format.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import pathlib
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from . import __version__, golden_cases
from .errors import OracleInputError
from .golden_specs import CaseSpec, FileSpec, GroupSpec
from .numbers import to_fraction
from .registry import get
from .trace import Trace, decode_value, encode_value

FORMAT = "perceptron-oracle/cases@1"
MANIFEST_FORMAT = "perceptron-oracle/manifest@1"
SCHEMA = "schema/cases-1.schema.json"


class GoldenFileError(OracleInputError):
    """A golden file that is missing, malformed, truncated or tampered with."""


def default_directory() -> pathlib.Path:
    """``$PERCEPTRON_ORACLE_GOLDEN``, else the golden files installed with the package (the
    repository's ``conformance_data/``, package ``perceptron_oracle.conformance_data``)."""
    env = os.environ.get("PERCEPTRON_ORACLE_GOLDEN")
    if env:
        return pathlib.Path(env)
    return pathlib.Path(str(importlib.resources.files("perceptron_oracle.conformance_data")))


# -- the case families and the flags their files may use ------------------------------------

# Flags every file may use; a family adds its own in FileSpec.notes.
COMMON_NOTES: dict[str, dict[str, str]] = {
    "tie": {"bugType": "EDGE_CASE", "description":
            "a trial after the first update has a score of exactly 0: it is a mistake "
            "(and, for mistake-driven algorithms, an update)"},
    "margin-band": {"bugType": "EDGE_CASE", "description":
                    "a trial has y * score exactly equal to the update threshold: it "
                    "updates where the rule is y * score <= tau (the Perceptron's margin), "
                    "and does not where it is y * score < 1 - delta (ROMMA, PUMMA)"},
    "fragile": {"bugType": "FLOAT_ROUNDING", "description":
                "some trial's exact score lies within float64 rounding distance of a "
                "threshold (listed in expected.fragile): a float64 implementation may take "
                "either branch there, and is compared only up to that trial"},
    "long-run": {"bugType": "ACCUMULATION", "description":
                 "at least 1000 trials or 200 updates: drift and bookkeeping bugs show"},
    "duplicates": {"bugType": "EDGE_CASE", "description":
                   "repeated instances, some with opposite labels"},
    "kernel": {"bugType": "KERNEL", "description": "a non-linear kernel (dual forms only)"},
    "alpha-bound-blocked": {"bugType": "EDGE_CASE", "description":
                            "a mistake that the alpha-bound keeps from updating"},
    "sparse-data": {"bugType": "EDGE_CASE", "description":
                    "most coordinates are exactly 0 (text-like data)"},
}

#: Case families: the functions returning their FileSpecs (one file each).
FAMILIES: dict[str, Callable[[], FileSpec]] = {
    "perceptron": golden_cases.perceptron_file,
    "higher_order": golden_cases.higher_order_file,
    "second_order": golden_cases.second_order_file,
    "romma_pumma": golden_cases.romma_pumma_file,
    "alma": golden_cases.alma_file,
}


def _family_specs() -> list[FileSpec]:
    return [family() for family in FAMILIES.values()]


# -- generation ----------------------------------------------------------------------------

def _case_document(case_id: int, group: GroupSpec, spec: CaseSpec) -> dict[str, Any]:
    algo = get(group.algorithm)
    reference = algo.implementation("reference")
    trace = reference(spec.X, spec.y, epochs=spec.epochs, kernel=group.kernel,
                      record_scores=True, **group.params)
    tolerance = algo.final_error_bounds(trace, spec.X)
    flags = set(spec.flags) | set(_observed_flags(trace, group, spec.y))
    return {
        "id": case_id,
        "comment": spec.comment,
        "flags": sorted(flags),
        "preprocessing": list(spec.preprocessing),
        "epochs": spec.epochs,
        "X": [[repr(float(v)) for v in row] for row in np.asarray(spec.X).tolist()],
        "y": [int(v) for v in spec.y],
        "expected": {
            "mistakes": trace.mistakes,
            "updates": trace.updates,
            "fragile": trace.fragile or [],
            "final": encode_value(trace.final),
            "final_float": _floats(trace.final),
            "final_tolerance": _floats(tolerance),
        },
    }


def _observed_flags(trace: Trace, group: GroupSpec, y: np.ndarray) -> Iterator[str]:
    """The flags a reference run shows by itself."""
    scores = trace.scores or []
    first = trace.updates[0] if trace.updates else len(scores)
    if any(s == 0 for s in scores[first + 1:]):
        yield "tie"
    T = trace.n_examples
    if group.algorithm in ("romma", "pumma"):   # update iff y score < 1 - delta
        band = 1 - Fraction(group.params.get("delta", 0))
        if any(s is not None and int(y[t % T]) * to_fraction(s) == band
               for t, s in enumerate(scores)):
            yield "margin-band"
    else:                                        # update iff y score <= tau
        tau = Fraction(group.params.get("tau", 0))
        if tau and any(int(y[t % T]) * scores[t] == tau for t in trace.updates):
            yield "margin-band"
    if trace.fragile:
        yield "fragile"
    if T * trace.epochs >= 1000 or len(trace.updates) >= 200:
        yield "long-run"
    if group.kernel != "linear":
        yield "kernel"
    if group.params.get("alpha_bound") is not None and \
            set(trace.mistakes) - set(trace.updates):
        yield "alpha-bound-blocked"


def _floats(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    return float(value)  # Fraction, mpf, numpy scalars: the nearest double


def build_document(spec: FileSpec) -> dict[str, Any]:
    groups = []
    case_id = 0
    for group in spec.groups:
        cases = []
        for case in group.cases:
            case_id += 1
            cases.append(_case_document(case_id, group, case))
        groups.append({"algorithm": group.algorithm, "kernel": group.kernel,
                       "params": encode_value(get(group.algorithm).params.resolve(group.params)),
                       "comment": group.comment, "cases": cases})
    notes = {**COMMON_NOTES, **spec.notes}
    used = sorted({f for g in groups for c in g["cases"] for f in c["flags"]})
    return {
        "format": FORMAT,
        "schema": SCHEMA,
        "generatorVersion": __version__,
        "header": spec.header,
        "notes": {flag: notes[flag] for flag in used},
        "numberOfCases": case_id,
        "groups": groups,
    }


def dumps(document: Any) -> str:
    """Stable, diff-friendly JSON: objects one key per line, arrays of scalars on one line."""
    def write(value: Any, indent: str) -> str:
        if isinstance(value, dict):
            if not value:
                return "{}"
            inner = indent + " "
            items = [f"{inner}{json.dumps(k)}: {write(v, inner)}" for k, v in value.items()]
            return "{\n" + ",\n".join(items) + "\n" + indent + "}"
        if isinstance(value, list):
            if all(not isinstance(v, (dict, list)) for v in value):
                return json.dumps(value)
            inner = indent + " "
            return "[\n" + ",\n".join(inner + write(v, inner) for v in value) + "\n" + indent + "]"
        return json.dumps(value, allow_nan=False)
    return write(document, "") + "\n"


def generate(directory: pathlib.Path, log: Callable[[str], None] = lambda s: None) -> None:
    """Write every golden file and the manifest into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    entries = []
    for spec in _family_specs():
        start = time.perf_counter()
        text = dumps(build_document(spec))
        path = directory / f"{spec.name}.json"
        path.write_text(text, encoding="utf-8")
        document = json.loads(text)
        entries.append({"path": path.name, "sha256": hashlib.sha256(text.encode()).hexdigest(),
                        "numberOfCases": document["numberOfCases"]})
        log(f"{path.name}: {document['numberOfCases']} cases in "
            f"{time.perf_counter() - start:.1f} s")
    manifest = {"format": MANIFEST_FORMAT, "generatorVersion": __version__, "files": entries}
    (directory / "manifest.json").write_text(dumps(manifest), encoding="utf-8")


def check_generated(directory: pathlib.Path, log: Callable[[str], None] = lambda s: None
                    ) -> list[str]:
    """Regenerate into a temporary directory; name every file whose bytes differ."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(pathlib.Path(tmp), log)
        differ = []
        for name in sorted(os.listdir(tmp)):
            fresh = (pathlib.Path(tmp) / name).read_bytes()
            stored = directory / name
            if not stored.exists() or stored.read_bytes() != fresh:
                differ.append(name)
        extra = sorted(set(p.name for p in directory.glob("*.json")) - set(os.listdir(tmp)))
        return differ + [f"{name} (not generated)" for name in extra]


# -- loading -------------------------------------------------------------------------------

@dataclass
class Case:
    file: str
    id: int
    comment: str
    flags: list[str]
    algorithm: str
    kernel: str
    params: dict[str, Any]
    epochs: int
    X: np.ndarray
    y: np.ndarray
    expected: Trace
    tolerance: dict[str, Any]
    group: int
    group_comment: str = ""

    @property
    def name(self) -> str:
        return f"{self.file}:{self.id}"


def load(directory: pathlib.Path | None = None) -> list[Case]:
    """Every case of every file the manifest lists, after checking the sha256 and the
    structure of each file.  A problem is a GoldenFileError naming the file."""
    directory = pathlib.Path(directory or default_directory())
    manifest_path = directory / "manifest.json"
    if not manifest_path.exists():
        raise GoldenFileError(f"{manifest_path}: no manifest (run `perceptron-oracle golden`)")
    manifest = _read_json(manifest_path)
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT or \
            not isinstance(manifest.get("files"), list):
        raise GoldenFileError(f"{manifest_path}: not a {MANIFEST_FORMAT} manifest")
    cases: list[Case] = []
    for entry in manifest["files"]:
        name = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(name, str) or pathlib.PurePath(name).name != name or \
                not name.endswith(".json"):
            raise GoldenFileError(f"{manifest_path}: a file entry must name a .json file "
                                  f"of the directory, got {entry!r:.80}")
        path = directory / name
        if not path.is_file():
            raise GoldenFileError(f"{path}: listed in the manifest but missing")
        raw = path.read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        if digest != entry.get("sha256"):
            raise GoldenFileError(f"{path}: sha256 {digest} does not match the manifest's "
                                  f"{entry.get('sha256')} (edited by hand, truncated or "
                                  "tampered with: regenerate with `perceptron-oracle golden`)")
        document = _read_json(path)
        try:
            cases.extend(_parse_document(path.name, document))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, GoldenFileError):
                raise
            raise GoldenFileError(f"{path}: malformed ({type(exc).__name__}: {exc})") from None
        if document["numberOfCases"] != entry.get("numberOfCases"):
            raise GoldenFileError(f"{path}: numberOfCases disagrees with the manifest")
    return cases


def _read_json(path: pathlib.Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        raise GoldenFileError(f"{path}: not valid JSON ({type(exc).__name__}: "
                              f"{str(exc)[:200]})") from None


def _parse_document(name: str, doc: Any) -> list[Case]:
    def bad(message: str) -> GoldenFileError:
        return GoldenFileError(f"{name}: {message}")

    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise bad(f"format must be {FORMAT!r}")
    for key in ("notes", "numberOfCases", "groups", "header"):
        if key not in doc:
            raise bad(f"lacks {key!r}")
    cases: list[Case] = []
    seen: set[int] = set()
    for g, group in enumerate(doc["groups"]):
        if not isinstance(group, dict) or not {"algorithm", "kernel", "params", "cases"} <= \
                set(group):
            raise bad(f"group {g} lacks algorithm, kernel, params or cases")
        params = decode_value(group["params"])
        for case in group["cases"]:
            try:
                cid = case["id"]
                if not isinstance(cid, int) or cid in seen:
                    raise bad(f"case id {cid!r} is not a unique integer")
                seen.add(cid)
                undefined = [f for f in case["flags"] if f not in doc["notes"]]
                if undefined:
                    raise bad(f"case {cid}: flag(s) {undefined} not defined in notes")
                X = np.array([[float(v) for v in row] for row in case["X"]], dtype=np.float64)
                if X.ndim != 2 or not all(isinstance(v, str) for r in case["X"] for v in r):
                    raise bad(f"case {cid}: X must be rows of decimal strings")
                y = np.array(case["y"], dtype=np.int64)
                exp = case["expected"]
                expected = Trace(algorithm=group["algorithm"], form="reference",
                                 kernel=group["kernel"], params=params, n_examples=len(y),
                                 epochs=case["epochs"], mistakes=exp["mistakes"],
                                 updates=exp["updates"], final=decode_value(exp["final"]),
                                 fragile=exp["fragile"])
                Trace.from_dict(expected.to_dict())  # the trace checks: trial ranges, order
                cases.append(Case(name, cid, case["comment"], case["flags"],
                                  group["algorithm"], group["kernel"], params, case["epochs"],
                                  X, y, expected, exp["final_tolerance"], g,
                                  str(group.get("comment", ""))))
            except GoldenFileError:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise bad(f"case {case.get('id', '?') if isinstance(case, dict) else '?'}: "
                          f"malformed ({type(exc).__name__}: {exc})") from None
    if len(cases) != doc["numberOfCases"]:
        raise bad(f"numberOfCases is {doc['numberOfCases']} but the file holds {len(cases)}")
    return cases
