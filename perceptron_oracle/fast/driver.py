"""The block-ahead driver shared by every fast form whose state changes only at an update.

Between two updates the state is fixed, so the scores of a whole block of upcoming trials come
from one matrix product.  The driver asks the model for a block's scores, finds the first trial
in it that updates, records every mistake up to and including that trial, lets the model apply
the update and goes on from the next trial.  Blocks never cross an epoch boundary, so a block
is a slice of the data (no copy, also for CSR).

Block size (a fixed block loses at high update rates: IMPLEMENTING.md, "Block-ahead scoring
at high update rates"): it follows a running estimate of the gap between updates (the mean of
the previous estimate and the latest gap), doubling after a block without an update and set
to half the estimate after one, within [MIN_BLOCK, MAX_BLOCK].

This is the numpy engine's path.  With numba installed, ``engine="auto"`` runs a form's
compiled loop instead where it has one (``fast._compiled``, ``fast._numba`` and its family
modules).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import DataError
from ..numbers import scoped


class FloatRangeError(DataError):
    """A fast form's float64 state left float64's range (inf or NaN) at trial ``trial``."""

    def __init__(self, message: str, trial: int | None = None):
        super().__init__(message)
        self.trial = trial   # None after pickling (the message still names it)


#: What a float64 update raises when its matrix, positive definite in exact arithmetic, is
#: not in float64 (the Second-Order Perceptron's a I + K with a below K's rounding): a
#: failed Cholesky factorisation, a pivot of exactly 0.
UPDATE_FAILURES = (np.linalg.LinAlgError, ZeroDivisionError)


def update_or_stop(model: Any, example: int, trial: int) -> None:
    """``model.update(example)``, or ``update_failed``'s FloatRangeError when a
    factorisation the update makes fails."""
    try:
        model.update(example)
    except UPDATE_FAILURES as exc:
        raise update_failed(trial, example, exc) from None


def update_failed(trial: int, example: int, exc: Exception) -> FloatRangeError:
    """The report of an update at ``trial`` that raised one of ``UPDATE_FAILURES``.  The run
    stops at the next trial, the first whose score needs that state."""
    why = "a pivot of 0" if isinstance(exc, ZeroDivisionError) else str(exc)
    return FloatRangeError(
        f"trial {trial + 1}: the float64 state after the update at trial {trial} (example "
        f"{example}) could not be formed ({why}); the data's or the parameters' scale is "
        "beyond float64 for this algorithm", trial + 1)


def float_range_error(trial: int, example: int, score: float) -> FloatRangeError:
    """The one report of a score that is not finite at ``trial`` (also the compiled loops')."""
    return FloatRangeError(
        f"trial {trial} (example {example}): the float64 state overflowed (a score of "
        f"{score}); the data's scale is beyond float64 for this algorithm: normalise the "
        "instances (--normalize 2, or preprocessing.normalize)", trial)


def finite_final(final: dict[str, Any], updates: list[int], n_examples: int) -> dict[str, Any]:
    """``final`` itself when every number in it is finite, or in a shadow run
    (``forced_updates``: its non-finite scores do not stop it either); else the run stops
    as at a score that is not finite (an update overflowed after the last score that could
    show it, as on the last trial): FloatRangeError at the last update, by which the state
    had overflowed."""
    bad = _non_finite(final)
    if bad is None or in_forced_run():   # a shadow run goes on as its scores do
        return final
    t = updates[-1] if updates else 0
    raise FloatRangeError(
        f"trial {t} (example {t % max(n_examples, 1)}): the float64 state overflowed by then "
        f"(its final state holds {bad}); the data's scale is beyond float64 for this "
        "algorithm: normalise the instances (--normalize 2, or preprocessing.normalize)", t)


def _non_finite(value: Any) -> float | None:
    """The first float in ``value`` (nested dicts, lists and numpy arrays) that is not
    finite, or None.  A list of numbers is summed first (a NaN or an infinity makes the sum
    one): a trace's lists hold up to T numbers, and the item by item look runs only after
    such a sum."""
    if isinstance(value, float):
        return None if math.isfinite(value) else value
    if isinstance(value, dict):
        return _first(map(_non_finite, value.values()))
    if isinstance(value, np.ndarray):
        bad = value[~np.isfinite(value)] if value.dtype.kind == "f" else value[:0]
        return float(bad.flat[0]) if bad.size else None
    if not isinstance(value, list) or value and type(value[0]) is int:
        return None   # ints (counts, indices) are finite; lists are built by tolist()
    try:
        if math.isfinite(sum(value, 0.0)):
            return None
    except (TypeError, OverflowError):
        pass   # None, nested values, or ints beyond float64: item by item
    return _first(map(_non_finite, value))


def _first(found: Iterator[float | None]) -> float | None:
    return next((bad for bad in found if bad is not None), None)


MIN_BLOCK = 16
MAX_BLOCK = 8192


class BlockModel(Protocol):
    def scores(self, start: int, stop: int) -> np.ndarray:
        """The current state's scores of examples start .. stop-1."""

    def updates_at(self, start: int, stop: int, margins: np.ndarray) -> np.ndarray:
        """Which of those examples would update, given their margins y * score."""

    def update(self, j: int) -> None:
        """Apply the update that example j causes."""


@dataclass
class DriverResult:
    mistakes: list[int] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)
    scores: list[float] | None = None


#: Shadow runs (``forced_updates``): the update trials of an exact run, imposed on the form.
_FORCED: contextvars.ContextVar[frozenset[int] | None] = contextvars.ContextVar(
    "forced_updates", default=None)


@contextlib.contextmanager
def forced_updates(trials: Any) -> Iterator[None]:
    """Within this block, every fast form updates at exactly ``trials`` (an exact run's
    updates) and nowhere else, whatever its own float64 scores say, and a non-finite score
    does not stop it: the form then computes its float64 scores along the exact run's path
    of states (the reference's a-posteriori fragile rule, SPEC.md section 3, reads them).  A
    forced update whose problem the form finds infeasible leaves its state as it is."""
    with scoped(_FORCED, frozenset(trials)):
        yield


def in_forced_run() -> bool:
    """Whether a ``forced_updates`` block is active (compiled loops then leave the run to
    the driver, which honours it)."""
    return _FORCED.get() is not None


def run_blocks(model: BlockModel, y: np.ndarray, epochs: int,
               record_scores: bool = False) -> DriverResult:
    """Run the model; a score that is not finite (the float64 state overflowed, or turned
    NaN) stops the run with a ``FloatRangeError`` naming the trial (SPEC.md section 3: float64
    cannot decide it; the reference flags it fragile).  numpy's overflow warnings are
    silenced here: that error is the one report."""
    forced = _FORCED.get()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if forced is not None:
            return _run_forced(model, y, epochs, forced)
        return _run(model, y, epochs, record_scores)


def _run_forced(model: BlockModel, y: np.ndarray, epochs: int,
                forced: frozenset[int]) -> DriverResult:
    """Every trial's score, updating at the ``forced`` trials only (``forced_updates``)."""
    T = y.shape[0]
    out = DriverResult(scores=[])
    assert out.scores is not None
    order = sorted(forced)
    at = 0
    for epoch in range(epochs):
        base, pos = epoch * T, 0
        while pos < T:
            nxt = order[at] if at < len(order) else math.inf
            stop = int(min(T, nxt - base + 1)) if nxt < base + T else T
            stop = max(stop, pos + 1)
            scores = model.scores(pos, stop)
            out.scores.extend(scores.tolist())
            margins = y[pos:stop] * scores
            out.mistakes.extend((np.flatnonzero(margins <= 0) + base + pos).tolist())
            if nxt == base + stop - 1:
                j = stop - 1
                at += 1
                if hasattr(model, "threshold") and hasattr(model, "tight"):  # Guarded
                    saved = model.threshold
                    model.threshold = math.inf
                    try:
                        take = bool(model.updates_at(j, j + 1, margins[-1:])[0])
                    finally:
                        model.threshold = saved
                else:
                    take = True
                if take:
                    update_or_stop(model, j, base + j)
                    out.updates.append(base + j)
            pos = stop
    return out


def _run(model: BlockModel, y: np.ndarray, epochs: int, record_scores: bool) -> DriverResult:
    T = y.shape[0]
    out = DriverResult(scores=[] if record_scores else None)
    mistakes: list[np.ndarray] = []
    gap = float(MIN_BLOCK * 4)  # running estimate of the trials between two updates
    block = int(gap)
    last_update = -1
    for epoch in range(epochs):
        base = epoch * T
        pos = 0
        while pos < T:
            stop = min(T, pos + block)
            scores = model.scores(pos, stop)
            finite = np.isfinite(scores)
            if not finite.all():
                bad = int(np.argmin(finite))
                raise float_range_error(base + pos + bad, pos + bad, float(scores[bad]))
            margins = y[pos:stop] * scores
            wants = model.updates_at(pos, stop, margins)
            hit = int(np.argmax(wants)) if wants.any() else -1
            end = hit + 1 if hit >= 0 else stop - pos
            mistakes.append(np.flatnonzero(margins[:end] <= 0) + (base + pos))
            if out.scores is not None:
                out.scores.extend(scores[:end].tolist())
            if hit >= 0:
                trial = base + pos + hit
                update_or_stop(model, pos + hit, trial)
                out.updates.append(trial)
                gap = 0.5 * gap + 0.5 * (trial - last_update)
                last_update = trial
                block = int(min(MAX_BLOCK, max(MIN_BLOCK, gap / 2)))
            else:
                block = min(MAX_BLOCK, 2 * block)
            pos += end
    out.mistakes = np.concatenate(mistakes).tolist() if mistakes else []
    return out
