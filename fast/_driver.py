"""The block-ahead driver shared by every fast form whose state changes only at an update.

Between two updates the state is fixed, so the scores of a whole block of upcoming trials come
from one matrix product.  The driver asks the model for a block's scores, finds the first trial
in it that updates, records every mistake up to and including that trial, lets the model apply
the update and goes on from the next trial.  Blocks never cross an epoch boundary, so a block
is a slice of the data (no copy, also for CSR).

Block size (PITFALLS.md: a fixed block loses at high update rates): it follows a running
estimate of the gap between updates, doubling after a block without an update and shrinking to
the estimate after one, within [MIN_BLOCK, MAX_BLOCK].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

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


def run_blocks(model: BlockModel, y: np.ndarray, epochs: int,
               record_scores: bool = False) -> DriverResult:
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
            margins = y[pos:stop] * scores
            wants = model.updates_at(pos, stop, margins)
            hit = int(np.argmax(wants)) if wants.any() else -1
            end = hit + 1 if hit >= 0 else stop - pos
            mistakes.append(np.flatnonzero(margins[:end] <= 0) + (base + pos))
            if out.scores is not None:
                out.scores.extend(scores[:end].tolist())
            if hit >= 0:
                trial = base + pos + hit
                model.update(pos + hit)
                out.updates.append(trial)
                gap = 0.5 * gap + 0.5 * (trial - last_update)
                last_update = trial
                block = int(min(MAX_BLOCK, max(MIN_BLOCK, gap / 2)))
            else:
                block = min(MAX_BLOCK, 2 * block)
            pos += end
    out.mistakes = np.concatenate(mistakes).tolist() if mistakes else []
    return out
