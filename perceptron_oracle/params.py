"""Parameters: one schema per algorithm, read exactly, checked in one place.

A value may come from Python (int, Fraction, float: the double's exact value, bool, None) or
from the command line as text: integers, decimals and ``p/q`` are read exactly (``0.1`` is
1/10), ``true``/``false``, ``none``, or a name.

A schema gives its parameters two ways: :meth:`ParamSchema.resolve`, a plain dict (a
trace's ``params``: JSON data, compared, passed on as keyword arguments), and
:meth:`ParamSchema.read`, the family's frozen dataclass of typed fields (``par.eta``), which
the algorithms read.  A schema declared without a dataclass reads to the dict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Generic, TypeVar, cast, overload

from .errors import ParamError
from .numbers import brief, to_fraction


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "rational" | "count" (positive int or None) | "bool" | "name"
    default: Any
    doc: str
    check: Callable[[Any], bool] | None = None
    requirement: str = ""  # what ``check`` demands, for the error message
    choices: tuple[str, ...] = ()

    def read(self, value: Any) -> Any:
        if self.kind == "rational":
            out: Any = _read_rational(self.name, value)
        elif self.kind == "count":
            out = _read_count(self.name, value)
        elif self.kind == "bool":
            out = _read_bool(self.name, value)
        else:
            out = str(value)
            if self.choices and out not in self.choices:
                raise ParamError(f"parameter {self.name} must be one of "
                                 f"{', '.join(self.choices)}, got {out!r}")
        if self.check is not None and out is not None and not self.check(out):
            raise ParamError(f"parameter {self.name} must be {self.requirement}, got {value!r}")
        return out


#: The typed parameters a schema reads to: a frozen dataclass, or the plain dict.
ParamsT = TypeVar("ParamsT")


class ParamSchema(Generic[ParamsT]):
    """The parameters of one algorithm: ``Param`` entries (text and numbers read exactly,
    checks, docs, defaults) and, with ``dataclass_type``, the frozen dataclass whose fields
    are the same names, which :meth:`read` returns (without it, :meth:`read` returns the
    dict of :meth:`resolve`)."""

    @overload
    def __init__(self: ParamSchema[dict[str, Any]], *params: Param) -> None: ...

    @overload
    def __init__(self, *params: Param, dataclass_type: type[ParamsT]) -> None: ...

    def __init__(self, *params: Param, dataclass_type: type[ParamsT] | None = None) -> None:
        self.params = {p.name: p for p in params}
        self.dataclass_type = dataclass_type
        if dataclass_type is not None:
            if not dataclasses.is_dataclass(dataclass_type):
                raise ValueError(f"{dataclass_type!r} is not a dataclass")
            fields = {f.name for f in dataclasses.fields(dataclass_type)}
            unmatched_fields = ", ".join(sorted(fields - set(self.params))) or "none"
            unmatched_params = ", ".join(sorted(set(self.params) - fields)) or "none"
            if fields != set(self.params):
                raise ValueError(
                    f"the parameters of {dataclass_type.__name__} and its schema differ: "
                    f"fields without a Param: {unmatched_fields}; "
                    f"Params without a field: {unmatched_params}")

    def resolve(self, given: dict[str, Any]) -> dict[str, Any]:
        """Every parameter read and checked, defaults filled in, in schema order."""
        unknown = sorted(set(given) - set(self.params))
        if unknown:
            raise ParamError(f"unknown parameter(s) {', '.join(unknown)}; "
                             f"known: {', '.join(self.params)}")
        return {name: p.read(given.get(name, p.default)) for name, p in self.params.items()}

    def read(self, given: dict[str, Any]) -> ParamsT:
        """:meth:`resolve`, as the schema's dataclass (the dict itself without one)."""
        return self.construct(self.resolve(given))

    def construct(self, resolved: dict[str, Any]) -> ParamsT:
        """The schema's dataclass of parameters already resolved (the dict without one)."""
        if self.dataclass_type is None:
            return cast(ParamsT, dict(resolved))
        constructor: Callable[..., ParamsT] = self.dataclass_type
        return constructor(**resolved)

    def as_dict(self, params: ParamsT) -> dict[str, Any]:
        """The values of ``params`` (as :meth:`read` returns them) as :meth:`resolve` gives
        them: a plain dict in schema order."""
        if isinstance(params, dict):
            return {name: params[name] for name in self.params}
        return {name: getattr(params, name) for name in self.params}

    def defaults(self) -> dict[str, Any]:
        return {name: p.default for name, p in self.params.items()}


#: A rational parameter lies within float64's range, 0 or 2^-1074 <= |value| < 2^1024: the
#: fast forms, the float error models and any outside implementation take it as a double.
FLOAT64_SMALLEST = Fraction(1, 2**1074)
FLOAT64_BEYOND = Fraction(2**1024)


def _read_rational(name: str, value: Any) -> Fraction:
    try:
        out = to_fraction(value)
    except (TypeError, ValueError) as exc:
        raise ParamError(f"parameter {name}: {exc}") from None
    if out and not FLOAT64_SMALLEST <= abs(out) < FLOAT64_BEYOND:
        raise ParamError(f"parameter {name} must lie within float64's range (0, or 2^-1074 "
                         f"<= |{name}| < 2^1024: every implementation takes it as a double), "
                         f"got {brief(out)}")
    return out


def _read_count(name: str, value: Any) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    try:
        q = to_fraction(value)
    except (TypeError, ValueError):
        raise ParamError(f"parameter {name} must be a positive integer or none, "
                         f"got {value!r}") from None
    if q.denominator != 1 or q < 1:
        raise ParamError(f"parameter {name} must be a positive integer or none, got {value!r}")
    return int(q)


def _read_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ParamError(f"parameter {name} must be true or false, got {value!r}")


def parse_assignment(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` from the command line."""
    name, eq, value = text.partition("=")
    if not eq or not name.strip():
        raise ParamError(f"--param expects NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()
