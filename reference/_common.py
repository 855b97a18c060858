"""What every reference module needs: the data as exact rationals, checked without numpy, and
the exact kernel values between examples, each computed once."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ..errors import DataError, ParamError
from ..kernels import Kernel
from ..numbers import number_context


def exact_data(X: Any, y: Any) -> tuple[list[list[Fraction]], list[int]]:
    """X as rows of Fractions (each float64 read as the rational it is), y as ints in {-1, +1}.

    Accepts nested lists, numpy arrays and scipy sparse matrices (through their own
    ``toarray``/``tolist`` methods, so this module never imports numpy).
    """
    if hasattr(X, "toarray"):
        X = X.toarray()
    rows = X.tolist() if hasattr(X, "tolist") else [list(r) for r in X]
    labels = y.tolist() if hasattr(y, "tolist") else list(y)
    if not rows:
        raise DataError("data: the data set is empty")
    if len(rows) != len(labels):
        raise DataError(f"data: X has {len(rows)} rows but y has {len(labels)} labels")
    width = len(rows[0])
    if width == 0:
        raise DataError("data: X has no features")
    exact_rows = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != width:
            raise DataError(f"data: row {i} does not have {width} features")
        for v in row:
            if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):
                raise DataError(f"data: row {i} holds a non-number {v!r}")
            if isinstance(v, float) and not math.isfinite(v):
                raise DataError(f"data: X contains {'NaN' if v != v else 'an infinity'}")
        exact_rows.append([Fraction(v) for v in row])
    out_labels = []
    for i, label in enumerate(labels):
        if isinstance(label, bool) or label not in (-1, 1):
            raise DataError(f"data: label {label!r} at row {i} is not -1 or +1")
        out_labels.append(int(label))
    return exact_rows, out_labels


def check_epochs(epochs: Any) -> int:
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ParamError(f"epochs must be a positive integer, got {epochs!r}")
    return epochs


class Gram:
    """Exact k(x_i, x_j), each computed once, with the float magnitude that bounds rounding."""

    def __init__(self, kernel: Kernel, rows: list[list[Fraction]]):
        self.kernel = kernel
        self.rows = rows
        self.abs_rows = [[abs(float(v)) for v in row] for row in rows]
        self.ctx = None if kernel.is_rational else number_context()
        self.values: dict[tuple[int, int], Any] = {}
        self.magnitudes: dict[tuple[int, int], float] = {}

    def __call__(self, i: int, j: int) -> Any:
        key = (i, j) if i <= j else (j, i)
        if key not in self.values:
            self.values[key] = self.kernel.exact(self.rows[i], self.rows[j], self.ctx)
        return self.values[key]

    def magnitude(self, i: int, j: int) -> float:
        key = (i, j) if i <= j else (j, i)
        if key not in self.magnitudes:
            value = self.kernel.magnitude(self.abs_rows[i], self.abs_rows[j])
            if value == 0 and self(i, j) != 0:  # products below the float64 range
                value = 5e-324
            self.magnitudes[key] = value
        return self.magnitudes[key]
