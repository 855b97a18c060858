"""The trace: what one run returns, and its JSON form ``perceptron-oracle/trace@1``.

Encoding (CONTRACT.md): exact numbers (``Fraction``, and mpmath's ``mpf``, which is a dyadic
rational) are strings ``"p/q"`` or ``"p"``; Python
ints are JSON integers; floats are JSON numbers (Python writes the shortest repr, which reads
back as the same double).  Decoding turns every string of the form ``p/q`` or ``p`` back into a
``Fraction``; any other string stays a string.  So ``Trace.from_json(t.to_json()) == t`` for
every trace whose values are Fractions, ints, floats, bools, strings, None, lists and dicts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from mpmath.ctx_mp_python import _mpf

from .errors import TraceFormatError
from .numbers import format_exact, is_rational_string, to_fraction

FORMAT = "perceptron-oracle/trace@1"
FORMS = ("reference", "primal", "dual", "implicit")


@dataclass
class Trace:
    """One run of one algorithm on one sequence.

    ``mistakes`` and ``updates`` are ascending trial indices (trial i presents example
    i mod n_examples).  ``final`` holds the state needed to predict (per algorithm: SPEC.md).
    ``fragile`` (reference traces only) lists the trials whose decision a float64
    implementation may legitimately take the other way (SPEC.md, "Fragile trials");
    ``scores`` (optional) holds every trial's score.
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
    def from_dict(cls, data: Any) -> Trace:
        if not isinstance(data, dict):
            raise TraceFormatError("a trace must be a JSON object")
        if data.get("format") != FORMAT:
            raise TraceFormatError(f"format must be {FORMAT!r}, got {data.get('format')!r}")
        required = ("algorithm", "form", "params", "n_examples", "epochs", "mistakes",
                    "updates", "final")
        missing = [k for k in required if k not in data]
        if missing:
            raise TraceFormatError(f"trace lacks {', '.join(missing)}")
        known = set(required) | {"format", "kernel", "fragile", "scores"}
        extra = sorted(set(data) - known)
        if extra:
            raise TraceFormatError(f"unknown trace field(s): {', '.join(extra)}")
        if data["form"] not in FORMS:
            raise TraceFormatError(f"form must be one of {FORMS}, got {data['form']!r}")
        for key in ("n_examples", "epochs"):
            if not _is_int(data[key]) or data[key] < 1:
                raise TraceFormatError(f"{key} must be a positive integer")
        total = data["n_examples"] * data["epochs"]
        for key in ("mistakes", "updates") + (("fragile",) if "fragile" in data else ()):
            _check_trials(key, data[key], total)
        if not isinstance(data["params"], dict) or not isinstance(data["final"], dict):
            raise TraceFormatError("params and final must be objects")
        return cls(
            algorithm=data["algorithm"],
            form=data["form"],
            kernel=data.get("kernel", "linear"),
            params=decode_value(data["params"]),
            n_examples=data["n_examples"],
            epochs=data["epochs"],
            mistakes=list(data["mistakes"]),
            updates=list(data["updates"]),
            final=decode_value(data["final"]),
            fragile=list(data["fragile"]) if "fragile" in data else None,
            scores=decode_value(data["scores"]) if "scores" in data else None,
        )

    @classmethod
    def from_json(cls, text: str) -> Trace:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(f"not valid JSON: {exc}") from None
        return cls.from_dict(data)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_trials(key: str, trials: Any, total: int) -> None:
    if not isinstance(trials, list) or not all(_is_int(t) for t in trials):
        raise TraceFormatError(f"{key} must be a list of trial indices")
    if any(b <= a for a, b in zip(trials, trials[1:])):
        raise TraceFormatError(f"{key} must be strictly ascending")
    if trials and (trials[0] < 0 or trials[-1] >= total):
        raise TraceFormatError(f"{key} has a trial outside 0..{total - 1}")


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
    if isinstance(value, _mpf):  # a binary float is a dyadic rational: exact as p/q
        return format_exact(to_fraction(value))
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return encode_value(value.tolist())
    raise TypeError(f"a trace cannot hold {type(value).__name__} values")


def decode_value(value: Any) -> Any:
    """The inverse of :func:`encode_value`."""
    if isinstance(value, str):
        return to_fraction(value) if is_rational_string(value) else value
    if isinstance(value, dict):
        return {k: decode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value
