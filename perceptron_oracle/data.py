"""Loading and validating data: ``.npz``, ``.csv`` (label last) and svmlight/libsvm text.

Every loader ends in :func:`validate`, so every implementation sees the same thing: X as a
C-contiguous float64 array, or a float64 CSR matrix (svmlight files, and CSR input given to
the library); y as an int64 array with values in {-1, +1}.  Nothing is changed silently: a
label that is not exactly -1 or +1, a NaN or infinity, a shape mismatch or an empty set is a
:class:`DataError` naming the problem.
"""

from __future__ import annotations

import csv
import math
import os
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import DataError

SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm", ".txt")

#: A .npz archive whose arrays X and y would take more than this many bytes in memory is
#: refused before any of them is read ...
NPZ_MAX_BYTES = 2 * 2**30
#: ... and so is one whose arrays would take more than NPZ_MAX_RATIO times the file's size
#: and more than NPZ_RATIO_FLOOR bytes: a compressed archive (``np.savez_compressed``) of
#: real data inflates a few times, a zip bomb a thousand.
NPZ_MAX_RATIO = 100
NPZ_RATIO_FLOOR = 256 * 2**20


@dataclass
class Dataset:
    X: Any  # np.ndarray (T, n) float64, or scipy.sparse.csr_matrix
    y: np.ndarray  # (T,) int64 in {-1, +1} (class labels for one-vs-rest data)
    source: str = "<memory>"


def validate(X: Any, y: Any, *, where: str = "data",
             check_finite: bool = True, classes: bool = False) -> tuple[Any, np.ndarray]:
    """Check X and y and return them as the implementations take them.

    Labels are -1 or +1; with ``classes`` (one-vs-rest data) any integers, the class labels.

    X comes back as the caller's own array when it is already a C-contiguous float64 array
    (no copy of a large data set; no implementation writes to X), else as a converted copy;
    likewise a CSR matrix that is already canonical (:func:`canonical_csr`), else a float64
    CSR copy with duplicates summed and indices sorted.
    ``check_finite=False`` leaves the NaN/infinity check of X to a caller that makes it on
    its own first pass over the data (a loop that scores every row: :func:`check_finite_rows`
    then names the entry).
    """
    complex_part = ("y" if np.iscomplexobj(y) else
                    "X" if np.iscomplexobj(X.data if sp.issparse(X) else X) else None)
    if complex_part:  # float64 would drop the imaginary parts (with a numpy warning)
        raise DataError(f"{where}: {complex_part} is complex; the learners take real features "
                        "and labels -1 or +1")
    if sp.issparse(X):
        if X.ndim != 2:
            raise DataError(f"{where}: X must be 2-dimensional")
        if not canonical_csr(X):
            X = sp.csr_matrix(X, dtype=np.float64, copy=True)
            X.sum_duplicates()
            X.sort_indices()
        values = X.data
    else:
        try:
            X = np.ascontiguousarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise DataError(f"{where}: X is not numeric ({exc})") from None
        if X.ndim != 2:
            raise DataError(f"{where}: X must be 2-dimensional, got {X.ndim} dimension(s)")
        values = X
    # One summing pass: a NaN or infinity makes the sum non-finite; only then (or on an
    # overflow of finite values) look closer.
    if check_finite:
        with np.errstate(all="ignore"):
            total = np.sum(values)
        if not np.isfinite(total):
            check_finite_rows(values, where)
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise DataError(f"{where}: y must be 1-dimensional, got shape {y_arr.shape}")
    if X.shape[0] != y_arr.shape[0]:
        raise DataError(f"{where}: X has {X.shape[0]} rows but y has {y_arr.shape[0]} labels")
    if X.shape[0] == 0:
        raise DataError(f"{where}: the data set is empty")
    if X.shape[1] == 0:
        raise DataError(f"{where}: X has no features")
    wanted = "integers" if classes else "-1 or +1"
    if y_arr.dtype == bool or not np.issubdtype(y_arr.dtype, np.number):
        raise DataError(f"{where}: labels must be {wanted}, got dtype {y_arr.dtype}")
    if classes:
        with np.errstate(invalid="ignore"):
            bad_labels = ~np.isfinite(y_arr) | (np.asarray(y_arr, dtype=np.float64)
                                                != np.round(y_arr))
    else:
        bad_labels = (y_arr != 1) & (y_arr != -1)  # np.isin's sort: 10x slower
    if bad_labels.any():
        i = int(np.argmax(bad_labels))
        label = y_arr[i].item()
        if isinstance(label, float) and label.is_integer():
            label = int(label)
        wanted = "an integer" if classes else \
            "-1 or +1 (class labels need one-vs-rest: --multiclass ovr)"
        raise DataError(f"{where}: label {label!r} at row {i} is not {wanted}")
    return X, y_arr.astype(np.int64)


def canonical_csr(X: Any) -> bool:
    """Whether X is already what :func:`validate` returns for sparse input: a
    ``scipy.sparse.csr_matrix`` of float64 with int32 index arrays (the compiled loops'
    signature), sorted indices and no duplicate entries.  scipy's own
    ``has_canonical_format`` decides the last two (one pass over the indices, remembered by
    the matrix: a matrix built by ``sum_duplicates`` or ``sort_indices`` costs nothing)."""
    return (isinstance(X, sp.csr_matrix) and X.dtype == np.float64
            and X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
            and bool(X.has_canonical_format))


def check_finite_rows(values: np.ndarray, where: str = "data") -> None:
    """Raise the DataError that names a NaN or infinity in ``values``, if there is one."""
    if not np.all(np.isfinite(values)):
        bad = "NaN" if np.isnan(values).any() else "an infinity"
        raise DataError(f"{where}: X contains {bad}")


def load(path: str | os.PathLike[str], *, n_features: int | None = None,
         classes: bool = False) -> Dataset:
    """Load by suffix: ``.npz`` (arrays ``X``, ``y``), ``.csv`` (label last), svmlight;
    ``classes``: integer class labels (one-vs-rest) instead of -1 / +1."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file")
    suffix = os.path.splitext(path)[1].lower()
    try:
        if suffix == ".npz":
            X, y = _read_npz(path)
        elif suffix == ".csv":
            X, y = _read_csv(path)
        elif suffix in SVMLIGHT_SUFFIXES:
            X, y = _read_svmlight(path, n_features)
        else:
            raise DataError(f"{path}: unknown data format {suffix!r} "
                            f"(.npz, .csv, or svmlight {'/'.join(SVMLIGHT_SUFFIXES)})")
    except UnicodeDecodeError:
        raise DataError(f"{path}: not a text file") from None
    X, y = validate(X, y, where=path, classes=classes)
    return Dataset(X, y, path)


def _npz_array_bytes(path: str) -> int:
    """The bytes the arrays X and y of the .npz archive ``path`` take once loaded, from the
    .npy headers of its members (nothing inflated beyond them); a DataError for object
    arrays (pickles, never loaded) and for a header that asks for more bytes than its
    member holds."""
    total = 0
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: info for info in archive.infolist()}
        for name in ("X", "y"):
            info = members.get(f"{name}.npy")
            if info is None:
                continue  # np.load names the missing array
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read_header(member)
            if dtype.hasobject:
                raise DataError(f"{path}: array {name} holds Python objects (a pickle); only "
                                "numeric arrays are read")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > info.file_size:
                raise DataError(f"{path}: array {name} declares {nbytes} bytes of data but "
                                f"its member holds {info.file_size}")
            total += nbytes
    return total


def _read_npz(path: str) -> tuple[Any, Any]:
    try:
        size = _npz_array_bytes(path)
        limit = min(NPZ_MAX_BYTES, max(NPZ_RATIO_FLOOR, NPZ_MAX_RATIO * os.path.getsize(path)))
        if size > limit:
            raise DataError(f"{path}: its arrays would inflate to {size / 2**20:.0f} MiB, "
                            f"beyond the limit of {limit / 2**20:.0f} MiB for a "
                            f"{os.path.getsize(path) / 2**20:.1f} MiB archive (at most "
                            f"{NPZ_MAX_BYTES // 2**30} GiB, and {NPZ_MAX_RATIO}x the file "
                            f"beyond {NPZ_RATIO_FLOOR // 2**20} MiB)")
        with np.load(path, allow_pickle=False) as archive:
            missing = [k for k in ("X", "y") if k not in archive.files]
            if missing:
                raise DataError(f"{path}: the archive lacks array(s) {', '.join(missing)}")
            return archive["X"], archive["y"]
    except DataError:
        raise
    except Exception as exc:  # zipfile, pickle and format errors from numpy
        raise DataError(f"{path}: not a readable .npz archive ({exc})") from None


def _read_csv(path: str) -> tuple[np.ndarray, np.ndarray]:
    rows: list[list[float]] = []
    width = None
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        for lineno, record in _csv_records(reader, path):
            if not record or all(not field.strip() for field in record):
                continue
            try:
                values = [float(field) for field in record]
            except ValueError:
                if lineno == 1 and not any(_is_number(field) for field in record):
                    continue  # a header line: names only (a row with a bad field is an error)
                raise DataError(f"{path}:{lineno}: not a number in {record!r}") from None
            if width is None:
                width = len(values)
                if width < 2:
                    raise DataError(f"{path}:{lineno}: a row needs features and a label")
            elif len(values) != width:
                raise DataError(f"{path}:{lineno}: {len(values)} fields, expected {width}")
            rows.append(values)
    if not rows:
        raise DataError(f"{path}: the data set is empty")
    table = np.array(rows, dtype=np.float64)
    return table[:, :-1], table[:, -1]


def _csv_records(reader: Any, path: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, record) of a csv reader; a field over csv's field size limit
    (``csv.field_size_limit()``, 128 KiB unless changed: a number that long is not data) or
    a malformed line (csv.Error) is a DataError naming the line."""
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            line = reader.line_num
            if "field larger than field limit" in str(exc):
                raise DataError(f"{path}:{line}: a field longer than "
                                f"{csv.field_size_limit()} characters (the limit)") from None
            raise DataError(f"{path}:{line}: not a CSV line ({exc})") from None
        yield reader.line_num, record


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _read_svmlight(path: str, n_features: int | None) -> tuple[sp.csr_matrix, np.ndarray]:
    """libsvm format: ``label index:value ...`` with 1-based ascending indices; ``#`` starts a
    comment; ``qid:`` fields are rejected (ranking data is not classification data)."""
    labels: list[float] = []
    indptr = [0]
    indices: list[int] = []
    values: list[float] = []
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            head, *fields = line.split()
            try:
                labels.append(float(head))
            except ValueError:
                raise DataError(f"{path}:{lineno}: label {head!r} is not a number") from None
            previous = 0
            for field in fields:
                key, colon, value = field.partition(":")
                if key == "qid":
                    raise DataError(f"{path}:{lineno}: qid fields are not supported")
                try:
                    index, number = int(key), float(value)
                except ValueError:
                    raise DataError(f"{path}:{lineno}: malformed feature {field!r}") from None
                if not colon or index < 1:
                    raise DataError(f"{path}:{lineno}: malformed feature {field!r} "
                                    "(indices are 1-based)")
                if index <= previous:
                    raise DataError(f"{path}:{lineno}: feature indices must ascend")
                previous = index
                indices.append(index - 1)
                values.append(number)
            indptr.append(len(indices))
    if not labels:
        raise DataError(f"{path}: the data set is empty")
    width = (max(indices) + 1) if indices else 1
    if n_features is not None:
        if n_features < width:
            raise DataError(f"{path}: a feature index exceeds n_features={n_features}")
        width = n_features
    X = sp.csr_matrix((np.array(values, dtype=np.float64), np.array(indices, dtype=np.int64),
                       np.array(indptr, dtype=np.int64)), shape=(len(labels), width))
    return X, np.array(labels)
