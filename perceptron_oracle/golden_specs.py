"""What the golden-file generator writes, as plain data: a file of groups of cases.

:mod:`~perceptron_oracle.golden_cases` builds these specifications (one function per case
family); :mod:`~perceptron_oracle.golden` runs the reference on them and writes the files
(format ``perceptron-oracle/cases@1``, SPEC.md "Golden files").  Kept apart from both, so
that neither imports the other's dependencies in a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class CaseSpec:
    comment: str
    X: np.ndarray
    y: np.ndarray
    epochs: int = 1
    flags: tuple[str, ...] = ()          # flags the generator cannot see from the run
    preprocessing: tuple[str, ...] = ()  # already applied to X


@dataclass
class GroupSpec:
    comment: str
    algorithm: str
    params: dict[str, Any]
    cases: list[CaseSpec]
    kernel: str = "linear"


@dataclass
class FileSpec:
    name: str                            # file stem: conformance_data/<name>.json
    header: list[str]
    groups: list[GroupSpec]
    notes: dict[str, dict[str, str]] = field(default_factory=dict)
