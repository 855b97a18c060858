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

Generation is deterministic and portable: seeded data, fixed ordering, one number format,
and every float written computed by operations that round the same on every machine (exact
arithmetic rounded once, correctly rounded norms, math.fsum, scalar IEEE operations; never
BLAS or numpy's SIMD reductions: SPEC.md 8.1, "Portable golden files").
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import json
import os
import pathlib
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from . import kernels
from .errors import OracleInputError
from .golden_specs import CaseSpec, FileSpec, GroupSpec
from .numbers import to_fraction
from .reference.common import shadow_decisions
from .registry import ALGORITHMS, get
from .trace import Trace, decode_value, encode_value
from .version import __version__

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
    return package_directory()


def package_directory() -> pathlib.Path:
    """The golden files installed with the package (``perceptron_oracle.conformance_data``)."""
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

def golden_files(families: Iterable[str] | None = None) -> list[Callable[[], FileSpec]]:
    """The functions building the golden files (``Family.golden``) of the registered
    families (or of ``families``), each once, in the registry's order: a file may hold
    several families' cases (ROMMA's and PUMMA's, HO's and the p-norm Perceptron's)."""
    found: list[Callable[[], FileSpec]] = []
    for name in families if families is not None else ALGORITHMS:
        build = get(name).golden
        if build is not None and build not in found:
            found.append(build)
    return found


#: Where the trace schema stands, beside the golden files.
TRACE_SCHEMA = "schema/trace-1.schema.json"
#: A form's name in a trace file: any identifier (the form vocabulary is open; ``trace``).
FORM_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"


def trace_schema(template: dict[str, Any]) -> dict[str, Any]:
    """The trace file schema ``template`` with what the registry decides filled in: the
    algorithms' names (the registered families) and the form's and kernel's patterns (an
    identifier; every registered kernel's ``spec_pattern``)."""
    schema: dict[str, Any] = json.loads(json.dumps(template))
    properties = schema["properties"]
    properties["algorithm"] = {"type": "string", "enum": list(ALGORITHMS)}
    properties["form"] = {"type": "string", "pattern": FORM_PATTERN}
    properties["kernel"] = {"type": "string", "pattern": kernels.spec_pattern()}
    return schema


# -- generation ----------------------------------------------------------------------------

#: The fewest binades (powers of two) by which the shadow runs' error must stand from the
#: edge of every ``sharpen`` decision in a golden run (SPEC.md, "Portable golden files").
GOLDEN_SHADOW_MARGIN = 2.0


def _case_document(case_id: int, group: GroupSpec, spec: CaseSpec) -> dict[str, Any]:
    algo = get(group.algorithm)
    exact_run = algo.exact_run()   # the exact engine: the reference's trace (tested)
    with shadow_decisions() as decisions:
        trace = exact_run(spec.X, spec.y, epochs=spec.epochs, kernel=group.kernel,
                          record_scores=True, **group.params)
    close = [t for t, binades in decisions if binades < GOLDEN_SHADOW_MARGIN]
    if close:
        # The fragile list is the one output that float64 code (the shadow runs: BLAS,
        # SIMD) decides; another machine could decide these trials the other way.
        raise GoldenFileError(
            f"case {case_id} ({spec.comment}): the fragile decision on trial(s) "
            f"{sorted(set(close))} lies within a factor 2^{GOLDEN_SHADOW_MARGIN:g} of the "
            "shadow runs' error, which varies with the machine: change the case")
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


def _generate_into(directory: pathlib.Path, log: Callable[[str], None],
                   families: Iterable[str] | None = None) -> list[str]:
    """Write every golden file (of ``families``: default all), then the manifest, into the
    existing ``directory``; each file flushed to disk (fsync).  Returns the names written,
    the manifest last."""
    entries = []
    for build in golden_files(families):
        start = time.perf_counter()
        spec = build()
        text = dumps(build_document(spec))
        path = directory / f"{spec.name}.json"
        _write_synced(path, text)
        document = json.loads(text)
        entries.append({"path": path.name, "sha256": hashlib.sha256(text.encode()).hexdigest(),
                        "numberOfCases": document["numberOfCases"]})
        log(f"{path.name}: {document['numberOfCases']} cases in "
            f"{time.perf_counter() - start:.1f} s")
    template = json.loads((package_directory() / TRACE_SCHEMA).read_text(encoding="utf-8"))
    (directory / TRACE_SCHEMA).parent.mkdir(exist_ok=True)
    _write_synced(directory / TRACE_SCHEMA, dumps(trace_schema(template)))
    manifest = {"format": MANIFEST_FORMAT, "generatorVersion": __version__, "files": entries}
    _write_synced(directory / "manifest.json", dumps(manifest))
    return [str(entry["path"]) for entry in entries] + [TRACE_SCHEMA, "manifest.json"]


def _write_synced(path: pathlib.Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


#: The prefix of the temporary directories ``generate`` and ``check_generated`` make.
TEMPORARY_PREFIX = ".golden-tmp-"


def generate(directory: pathlib.Path, log: Callable[[str], None] = lambda s: None,
             families: Iterable[str] | None = None) -> None:
    """Write every golden file (those of ``families``: default every registered family),
    the trace schema (``schema/trace-1.schema.json``, its algorithm names and patterns from
    the registry: :func:`trace_schema`) and the manifest into ``directory``, replacing those
    files there and leaving every other file alone (the package's ``conformance_data/``
    also holds ``__init__.py``, ``README.md`` and the cases' schema).

    The guarantee: an exception at any point (KeyboardInterrupt on SIGINT, the exception
    the CLI raises on SIGTERM, a full disk) leaves ``directory`` holding either the old
    complete set or the new complete set (every file matching the manifest's sha256), and
    no temporary directory behind.  How: every new file is written and fsynced into a
    temporary directory inside ``directory`` (same filesystem), removed in a ``finally``;
    then each file is moved into place with ``os.replace`` (atomic), the manifest last,
    while SIGINT and SIGTERM are deferred (recorded, then raised again to their own
    handlers once the last file is in place and the temporary directory removed; from the
    main thread) and any other exception puts the old files back.  Only a hard kill
    (SIGKILL, power loss) inside that short commit can leave a mix, which ``load`` rejects
    (sha256) and ``golden`` repairs.
    """
    directory.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=TEMPORARY_PREFIX, dir=directory))
    caught: list[int] = []
    try:
        names = _generate_into(tmp, log, families)
        with _signals_deferred(caught):
            _commit(tmp, directory, names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if caught:   # a signal that came during the commit, now to its own handler
            signal.raise_signal(caught[0])


def _commit(tmp: pathlib.Path, directory: pathlib.Path, names: list[str]) -> None:
    """Move ``names`` from ``tmp`` into ``directory`` in order, each by one ``os.replace``
    (a reader never finds a file missing); on an exception, put back the files replaced so
    far (the old ones, linked or copied into ``tmp/old`` first) and remove new ones."""
    backup = tmp / "old"
    backup.mkdir()
    done: list[tuple[str, bool]] = []    # (name, whether an old file was kept)
    try:
        for name in names:
            target = directory / name
            target.parent.mkdir(exist_ok=True)
            (backup / name).parent.mkdir(exist_ok=True)
            had = target.exists()
            if had:
                try:
                    os.link(target, backup / name)
                except OSError:   # a filesystem without hard links
                    shutil.copy2(target, backup / name)
            done.append((name, had))
            os.replace(tmp / name, target)
    except BaseException:
        for name, had in reversed(done):
            if had:
                os.replace(backup / name, directory / name)
            else:
                (directory / name).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _signals_deferred(caught: list[int]) -> Iterator[None]:
    """SIGINT and SIGTERM appended to ``caught``, not acted on, inside the block (the
    caller raises them again, to the handlers in place before, once it has cleaned up).
    Outside the main thread (where Python cannot set handlers) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    numbers = [signal.SIGINT, signal.SIGTERM]
    previous = {number: signal.getsignal(number) for number in numbers}

    def record(number: int, frame: Any) -> None:
        caught.append(number)

    for number in numbers:
        signal.signal(number, record)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def check_generated(directory: pathlib.Path, log: Callable[[str], None] = lambda s: None
                    ) -> list[str]:
    """Regenerate into a temporary directory (removed whatever happens, an exception
    included); name every file whose bytes differ."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=TEMPORARY_PREFIX))
    try:
        fresh_names = _generate_into(tmp, log)
        differ = []
        for name in sorted(fresh_names):
            fresh = (tmp / name).read_bytes()
            stored = directory / name
            if not stored.exists() or stored.read_bytes() != fresh:
                differ.append(name)
        extra = sorted(set(p.name for p in directory.glob("*.json")) - set(fresh_names))
        return differ + [f"{name} (not generated)" for name in extra]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
    listed: set[str] = set()
    for entry in manifest["files"]:
        name = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(name, str) or pathlib.PurePath(name).name != name or \
                not name.endswith(".json"):
            raise GoldenFileError(f"{manifest_path}: a file entry must name a .json file "
                                  f"of the directory, got {entry!r:.80}")
        if name in listed:   # its cases would be counted (and run) twice
            raise GoldenFileError(f"{manifest_path}: lists {name} twice")
        listed.add(name)
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
