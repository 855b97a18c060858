"""The trace: what one run returns, and its JSON form ``perceptron-oracle/trace@1``.

Encoding (SPEC.md section 5): exact numbers (``Fraction``, and mpmath's ``mpf``, which is a
dyadic rational) are strings ``"p/q"`` or ``"p"``; Python ints are JSON integers; floats are
JSON numbers (Python writes the shortest repr, which reads back as the same double).  Decoding
turns every string of the form ``p/q`` or ``p`` back into a ``Fraction``; any other string
stays a string.  So ``Trace.from_json(t.to_json()) == t`` for every trace whose values are
Fractions, ints, floats, bools, strings, None, lists and dicts.

Reading is defensive, because ``verify --results`` reads files that any program wrote
(:func:`load_trace_file`): every problem is one :class:`TraceFormatError` naming it and the
key path where it is (``final.w[3]: ...``), and the work is bounded by the size of the file
(:data:`MAX_TRACE_BYTES`; :data:`~perceptron_oracle.numbers.MAX_EXACT_DIGITS` digits per
number; :data:`MAX_NESTING` levels; nothing is allocated or looped over per claimed trial).
"""

from __future__ import annotations

import json
import math
import operator
import os
import pathlib
import stat
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import mpmath

from .errors import TraceFormatError
from .numbers import (
    MAX_EXACT_DIGITS,
    format_exact,
    is_mpf,
    is_rational_string,
    parse_integer,
    parse_rational,
    to_fraction,
)

FORMAT = "perceptron-oracle/trace@1"

#: The largest trace file :func:`load_trace_file` reads, in bytes (8 MiB).  The largest trace
#: of any golden case is 134 kB (romma_pumma.json case 6), 0.7 MB with every trial's score
#: recorded (higher_order.json case 5): the limit leaves a factor of eleven over the latter.
#: A larger file is refused from its size alone.
MAX_TRACE_BYTES = 8 * 2**20

#: How deeply a trace's ``params``, ``final`` and ``scores`` may nest lists and objects (the
#: golden cases' final states nest three levels: ``final.averaged.w[0]``).
MAX_NESTING = 64

#: The most trials (n_examples x epochs) a trace may claim: trial indices are int64 in
#: every language.
MAX_TRIALS = 2**63 - 1

_REQUIRED = ("algorithm", "form", "params", "n_examples", "epochs", "mistakes", "updates",
             "final")
_COMPARED = (*_REQUIRED, "kernel", "fragile", "scores")
_KNOWN = frozenset(_REQUIRED) | {"format", "kernel", "fragile", "scores"}

# What a value under a path may be: anything JSON holds (params, and final in a trace made
# in Python); a final state's value (a number, a list of numbers, an object of such values);
# an element of a final-state list (a number).
_ANY, _STATE, _NUMBER = "any", "state", "number"


@dataclass
class Trace:
    """One run of one algorithm on one sequence.

    ``mistakes`` and ``updates`` are ascending trial indices (trial i presents example
    i mod n_examples).  ``final`` holds the state needed to predict (per algorithm: SPEC.md).
    ``fragile`` (reference traces only) lists the trials whose decision a float64
    implementation may legitimately take the other way (SPEC.md, "Fragile trials");
    ``scores`` (optional) holds every trial's score.  A fast form's ``final`` holds its
    vectors as the numpy arrays it computed (float64; int64 for counts and indices), a
    reference's as lists of exact numbers: :func:`plain_value` turns the former into the
    latter's Python types, as ``to_json``, ``==`` and ``compare`` do.  ``final_bounds`` is
    set by a reference whose final-state bounds are derived during the run (ROMMA, PUMMA,
    ALMA): the largest |float - exact| per final-state path, read by its
    ``final_error_bounds``; it is not part of the trace format (a trace read from a file has
    none).
    """

    algorithm: str
    form: str
    params: dict[str, Any]
    n_examples: int
    epochs: int
    mistakes: list[int]
    updates: list[int]
    final: dict[str, Any]
    kernel: str = "linear"
    fragile: list[int] | None = None
    scores: list[Any] | None = None
    final_bounds: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __eq__(self, other: object) -> bool:
        """Field by field as a dataclass compares (``final_bounds`` aside), numpy arrays in
        ``final`` as the lists they hold."""
        if not isinstance(other, Trace):
            return NotImplemented
        return all(plain_value(getattr(self, name)) == plain_value(getattr(other, name))
                   for name in _COMPARED)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "algorithm": self.algorithm,
            "form": self.form,
            "kernel": self.kernel,
            "params": encode_value(self.params),
            "n_examples": self.n_examples,
            "epochs": self.epochs,
            "mistakes": list(self.mistakes),
            "updates": list(self.updates),
            "final": encode_value(self.final),
        }
        if self.fragile is not None:
            out["fragile"] = list(self.fragile)
        if self.scores is not None:
            out["scores"] = encode_value(self.scores)
        return out

    def to_json(self, indent: int | None = None) -> str:
        """One line by default; ``indent`` as for ``json.dumps``."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Any, *, numeric_final: bool = False) -> Trace:
        """The trace a JSON document (or a dict made in Python) describes, every field checked
        (SPEC.md section 5).  With ``numeric_final`` the final state must be what every
        algorithm's is: numbers, lists of numbers, and objects of such values (no booleans,
        nulls or other strings), as :func:`load_trace_file` requires of trace files."""
        if isinstance(data, _Refused):
            raise TraceFormatError(data.message("the trace"))
        if not isinstance(data, dict):
            raise TraceFormatError(f"a trace must be a JSON object, got {_describe(data)}")
        fmt = data.get("format")
        if not (isinstance(fmt, str) and fmt == FORMAT):
            raise TraceFormatError(f"format: expected {FORMAT!r}, got {_describe(fmt)}")
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise TraceFormatError(f"trace lacks {', '.join(missing)}")
        extra = sorted(_clip(str(k)) for k in data if k not in _KNOWN)
        if extra:
            raise TraceFormatError(f"unknown trace field(s): {', '.join(extra[:5])}"
                                   + (f" and {len(extra) - 5} more" if len(extra) > 5 else ""))
        for key, value in data.items():
            if isinstance(value, _Refused):
                raise TraceFormatError(value.message(key))
        for key in ("algorithm", "kernel"):
            if key in data and not isinstance(data[key], str):
                raise TraceFormatError(f"{key}: expected a string, got {_describe(data[key])}")
        form = data["form"]
        if not (isinstance(form, str) and form.isidentifier() and form.isascii()):
            raise TraceFormatError(f"form must be an identifier ('reference', or a fast "
                                   f"form's name: primal, dual, ...); got {_describe(form)}")
        for key in ("n_examples", "epochs"):
            value = data[key]
            if not _is_int(value) or value < 1:
                raise TraceFormatError(f"{key}: expected a positive integer, "
                                       f"got {_describe(value)}")
        total = data["n_examples"] * data["epochs"]
        if total > MAX_TRIALS:
            raise TraceFormatError(f"n_examples x epochs: {_describe(total)} trials, more "
                                   "than any run has (the limit is 2^63 - 1)")
        trials = {key: _trials(key, data[key], total)
                  for key in ("mistakes", "updates", "fragile") if key in data}
        for key in ("params", "final"):
            if not isinstance(data[key], dict):
                raise TraceFormatError(f"{key}: expected an object, got {_describe(data[key])}")
        params = _decode(data["params"], "params", 0, _ANY)
        final = _decode(data["final"], "final", 0, _STATE if numeric_final else _ANY)
        scores = None
        if "scores" in data:
            scores = data["scores"]
            if not isinstance(scores, list):
                raise TraceFormatError(f"scores: expected a list, got {_describe(scores)}")
            if len(scores) > total:
                raise TraceFormatError(f"scores: {len(scores)} scores for {total} trials")
            scores = [None if s is None else _number(s, f"scores[{i}]")
                      for i, s in enumerate(scores)]
        return cls(
            algorithm=data["algorithm"],
            form=form,
            kernel=data.get("kernel", "linear"),
            params=params,
            n_examples=data["n_examples"],
            epochs=data["epochs"],
            mistakes=trials["mistakes"],
            updates=trials["updates"],
            final=final,
            fragile=trials.get("fragile"),
            scores=scores,
        )

    @classmethod
    def from_json(cls, text: str | bytes, *, numeric_final: bool = False) -> Trace:
        """The trace a JSON text holds (bytes must be UTF-8).  JSON that Python's parser
        would take but a trace may not hold is refused: NaN and Infinity, numbers beyond
        float64's range, integers of more than MAX_EXACT_DIGITS digits, repeated keys."""
        return cls.from_dict(_parse_json(text), numeric_final=numeric_final)


def load_trace_file(path: str | os.PathLike[str]) -> Trace:
    """The trace in the file ``path``, written by any program.

    FileNotFoundError when there is no such file (``verify`` then counts the case as not
    run); for everything else one :class:`TraceFormatError` whose message starts with the
    file's name: a file above :data:`MAX_TRACE_BYTES` (refused from its size, unread),
    anything but a regular file, bytes that are not UTF-8, JSON that is malformed or
    truncated, and every problem :meth:`Trace.from_dict` finds (with ``numeric_final``: a
    trace file is compared with a golden case, whose final state holds numbers only).
    """
    path = pathlib.Path(path)
    name = path.name
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise TraceFormatError(f"{name}: not a regular file")
        if info.st_size > MAX_TRACE_BYTES:
            raise TraceFormatError(f"{name}: {info.st_size} bytes, larger than a trace file "
                                   f"may be ({MAX_TRACE_BYTES} bytes); not read")
        with open(path, "rb") as handle:
            raw = handle.read(MAX_TRACE_BYTES + 1)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise TraceFormatError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_TRACE_BYTES:  # grew since stat
        raise TraceFormatError(f"{name}: larger than a trace file may be "
                               f"({MAX_TRACE_BYTES} bytes)")
    try:
        return Trace.from_json(raw, numeric_final=True)
    except TraceFormatError as exc:
        raise TraceFormatError(f"{name}: {exc}") from None


# -- reading JSON ----------------------------------------------------------------------------

class _Refused:
    """A JSON value the parser met but a trace may not hold, kept where it stood so that the
    check of the document names its key path."""

    __slots__ = ("what", "why")

    def __init__(self, what: str, why: str) -> None:
        self.what, self.why = what, why

    def message(self, path: str) -> str:
        return f"{path}: {self.what}: {self.why}"


def _parse_json(text: str | bytes) -> Any:
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceFormatError(f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset "
                                   f"{exc.start} ({exc.reason})") from None
        if text.startswith("\ufeff"):  # a byte order mark: RFC 8259 lets a reader ignore it
            text = text[1:]
    try:
        return json.loads(text, parse_constant=_json_constant, parse_int=_json_int,
                          parse_float=_json_float, object_pairs_hook=_json_object)
    except json.JSONDecodeError as exc:
        if not text.strip():
            raise TraceFormatError("not valid JSON: empty") from None
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            raise TraceFormatError(f"not valid JSON: it ends early, at line {exc.lineno}, "
                                   f"column {exc.colno} ({exc.msg}): truncated?") from None
        raise TraceFormatError(f"not valid JSON: {exc.msg} at line {exc.lineno}, "
                               f"column {exc.colno}") from None
    except RecursionError:
        raise TraceFormatError("not valid JSON for a trace: lists or objects nested "
                               "thousands of levels deep") from None


#: The trace reader's JSON parser (``Trace.from_json`` applies it): NaN, Infinity, numbers
#: beyond float64's range, integers of more than MAX_EXACT_DIGITS digits and repeated keys
#: are kept as refusals that ``Trace.from_dict`` reports under their key path.
parse_json = _parse_json


def _json_constant(name: str) -> _Refused:
    return _Refused(name, "JSON has no NaN or Infinity, and a trace holds finite numbers "
                          "only")


def _json_int(text: str) -> int | _Refused:
    if len(text) <= 4000:  # within Python's own int() limit
        return int(text)
    digits = len(text.lstrip("-"))
    if digits > MAX_EXACT_DIGITS:
        return _Refused(f"a JSON integer of {digits} digits",
                        f"the limit is {MAX_EXACT_DIGITS} digits (SPEC.md section 5)")
    return parse_integer(text)


def _json_float(text: str) -> float | _Refused:
    value = float(text)
    if not math.isfinite(value):
        return _Refused(text if len(text) <= 24 else text[:24] + "...",
                        "beyond the range of a double")
    return value


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Refused:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                return _Refused(f"an object with the key {_clip(key)} twice",
                                "keys must be unique")
            seen.add(key)
    return out


# -- checking values -----------------------------------------------------------------------

def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _trials(key: str, trials: Any, total: int) -> list[int]:
    """Trial indices: integers, strictly ascending, in 0..total-1.  One pass over the list,
    never over the trials the trace claims."""
    if not isinstance(trials, list):
        raise TraceFormatError(f"{key}: expected a list of trial indices, "
                               f"got {_describe(trials)}")
    if len(trials) > total:  # strictly ascending in 0..total-1: at most total of them
        raise TraceFormatError(f"{key}: {len(trials)} trial indices for a run of {total} "
                               "trials")
    if all(type(t) is int for t in trials) and all(map(operator.lt, trials, trials[1:])) \
            and (not trials or (trials[0] >= 0 and trials[-1] < total)):
        return list(trials)      # the common case, checked in C; else find the problem below
    previous = -1
    for i, t in enumerate(trials):
        where = f"{key}[{i}]"
        if isinstance(t, _Refused):
            raise TraceFormatError(t.message(where))
        if not _is_int(t):
            raise TraceFormatError(f"{where}: expected a trial index (an integer), "
                                   f"got {_describe(t)}")
        if t < 0:
            raise TraceFormatError(f"{where}: trial {_describe(t)} is negative")
        if t >= total:
            raise TraceFormatError(f"{where}: trial {_describe(t)} is outside 0..{total - 1} "
                                   f"(n_examples x epochs = {total} trials)")
        if t <= previous:
            problem = "repeated" if t == previous else f"after trial {previous}"
            raise TraceFormatError(f"{where}: trial {t} {problem} (trial indices must be "
                                   "strictly ascending)")
        previous = t
    return list(trials)


def _decode(value: Any, path: str, depth: int, kind: str) -> Any:
    """``value`` (under ``path``) with its exact-number strings read as Fractions, checked
    against ``kind`` (_ANY, _STATE, _NUMBER)."""
    if isinstance(value, dict):
        if kind == _NUMBER:
            raise TraceFormatError(f"{path}: an object where a number belongs")
        if depth >= MAX_NESTING:
            raise TraceFormatError(f"{path}: nested more than {MAX_NESTING} levels deep")
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TraceFormatError(f"{path}: key {_describe(key)} is not a string")
            out[key] = _decode(item, f"{path}.{_clip(key, 40, quote=False)}", depth + 1, kind)
        return out
    if isinstance(value, (list, tuple)):
        if kind == _NUMBER:
            raise TraceFormatError(f"{path}: a list where a number belongs")
        if depth >= MAX_NESTING:
            raise TraceFormatError(f"{path}: nested more than {MAX_NESTING} levels deep")
        if all(type(v) is float for v in value) and all(map(math.isfinite, value)):
            return list(value)   # finite floats, as _number takes them: one pass in C
        if all(type(v) is int for v in value) and \
                (not value or max(max(value).bit_length(), min(value).bit_length()) <= 64):
            return list(value)   # small ints (counts, indices), as _number takes them
        inner = _NUMBER if kind == _STATE else kind
        return [_decode(item, f"{path}[{i}]", depth + 1, inner) for i, item in enumerate(value)]
    if kind != _ANY:
        return _number(value, path)
    if isinstance(value, str):
        return _number(value, path) if is_rational_string(value) else value
    if value is None or isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _decode(value.tolist(), path, depth, kind)
    return _number(value, path)


def _number(value: Any, path: str) -> Any:
    """A number of a trace: an exact "p/q" string (read as a Fraction), an int, a finite
    float, or (from Python) a Fraction or an mpf."""
    if isinstance(value, _Refused):
        raise TraceFormatError(value.message(path))
    if isinstance(value, str):
        if not is_rational_string(value):
            raise TraceFormatError(f"{path}: {_describe(value)} is not a number (an exact "
                                   "number is a string \"p/q\" or \"p\")")
        try:
            return parse_rational(value)
        except ValueError as exc:
            raise TraceFormatError(f"{path}: {exc}") from None
    if isinstance(value, bool) or value is None:
        raise TraceFormatError(f"{path}: {_describe(value)} where a number belongs")
    if isinstance(value, float) or is_mpf(value):
        finite = math.isfinite(value) if isinstance(value, float) else mpmath.isfinite(value)
        if not finite:
            raise TraceFormatError(f"{path}: {value!r}: a trace holds finite numbers only")
        return value
    if isinstance(value, (int, Fraction)):
        return value
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _number(value.tolist(), path)
    raise TraceFormatError(f"{path}: {_describe(value)} where a number belongs")


def _describe(value: Any) -> str:
    """A short, safe account of ``value`` for a message: never megabytes, never str() of an
    integer beyond Python's 4300-digit limit."""
    if isinstance(value, _Refused):
        return value.what
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if value.bit_length() <= 200:
            return str(value)
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return _clip(value)
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if type(value).__module__ == "numpy":  # a Python callable's arrays and scalars
        return f"a numpy {type(value).__name__} (give Python numbers: .tolist(), int())"
    return f"a {type(value).__name__}"


def _clip(text: str, width: int = 40, quote: bool = True) -> str:
    """``text`` for a message, cut to about ``width`` characters."""
    short = text if len(text) <= width else text[:width] + f"... ({len(text)} characters)"
    return repr(short) if quote else short


def plain_value(value: Any) -> Any:
    """``value`` with every numpy array and scalar in it (nested in dicts and lists) as the
    Python list or number it holds (``tolist``); anything else as it is."""
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_value(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    return value


def encode_value(value: Any) -> Any:
    """A value as the trace's JSON holds it (module docstring)."""
    if isinstance(value, Fraction):
        return format_exact(value)
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"a trace cannot hold {value!r}")
        return value
    if isinstance(value, dict):
        return {str(k): encode_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if is_mpf(value):  # a binary float is a dyadic rational: exact as p/q
        return format_exact(to_fraction(value))
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return encode_value(value.tolist())
    raise TypeError(f"a trace cannot hold {type(value).__name__} values")


def decode_value(value: Any, path: str = "value") -> Any:
    """The inverse of :func:`encode_value`; a TraceFormatError names the problem under
    ``path`` (a zero denominator, a number of too many digits, NaN, nesting too deep)."""
    return _decode(value, path, 0, _ANY)
