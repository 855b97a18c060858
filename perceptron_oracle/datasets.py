"""Seeded data generators: the embedded example data sets, the benchmarks' data, the papers'
artificial data.  Deterministic for a given seed (numpy's PCG64 ``default_rng``).

Two small real data sets ship as CSV files in ``perceptron_oracle/data_files/`` (source and
licence in its README): Wdbc (UCI's Breast Cancer Wisconsin (Diagnostic)) and UCI's Optical
Recognition of Handwritten Digits, both as scikit-learn ships them.  :func:`export_real_data`
wrote them once from an installed scikit-learn; reading them (:func:`wdbc`, :func:`digits`)
needs only numpy.
"""

from __future__ import annotations

import csv
import pathlib
from collections.abc import Callable
from importlib import resources

import numpy as np

from .data import Dataset, validate
from .errors import DataError
from .preprocessing import exact_dots, normalize
from .rounding import pnorm


def separable(n_examples: int, n_features: int, margin: float, *, seed: int,
              portable: bool = False) -> Dataset:
    """Unit-norm instances labelled by a random unit hyperplane u through the origin, keeping
    only instances with |u.x| >= margin (so u separates the set with margin ``margin``).

    ``portable``: the norms and dot products correctly rounded (``preprocessing.normalize``,
    ``preprocessing.exact_dots``), so every machine draws the same doubles, as the golden
    files need (SPEC.md, "Portable golden files"); by default numpy's (BLAS, SIMD), fast for
    the benchmarks' large sets, whose last bits vary with the CPU."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(n_features)
    u /= pnorm(u.tolist()) if portable else np.linalg.norm(u)
    dots: Callable[[np.ndarray, np.ndarray], np.ndarray] = exact_dots if portable else np.dot
    kept: list[np.ndarray] = []
    count = 0
    while count < n_examples:
        X = rng.standard_normal((2 * n_examples, n_features))
        if portable:
            X = normalize(X)
        else:
            X /= np.linalg.norm(X, axis=1, keepdims=True)
        X = X[np.abs(dots(X, u)) >= margin]
        kept.append(X)
        count += X.shape[0]
    X = np.concatenate(kept)[:n_examples]
    y = np.where(dots(X, u) > 0, 1, -1)
    X, y = validate(X, y)
    return Dataset(X, y, f"separable(T={n_examples}, n={n_features}, margin={margin}, "
                         f"seed={seed})")


def with_label_noise(dataset: Dataset, rate: float, *, seed: int) -> Dataset:
    """A copy of ``dataset`` with each label flipped independently with probability ``rate``."""
    rng = np.random.default_rng(seed)
    flip = rng.random(dataset.y.shape[0]) < rate
    return Dataset(dataset.X.copy(), np.where(flip, -dataset.y, dataset.y),
                   f"{dataset.source} + {rate:g} label noise (seed={seed})")


#: The shipped CSV files: features, then the label (Wdbc: +1 benign, -1 malignant; digits:
#: the digit 0..9).  Floats are written by ``repr``, so reading them back is exact.
DATA_FILES = {"wdbc": "wdbc.csv", "digits": "digits.csv"}


def _read_shipped(name: str) -> tuple[np.ndarray, np.ndarray]:
    text = resources.files("perceptron_oracle") / "data_files" / DATA_FILES[name]
    lines = text.read_text(encoding="utf-8").splitlines()
    rows = [[float(v) for v in record] for record in csv.reader(lines)
            if record and not record[0].startswith("#")]
    table = np.array(rows, dtype=np.float64)
    return table[:, :-1], table[:, -1].astype(np.int64)


def wdbc(normalized: bool = False, rows: int | None = None) -> Dataset:
    """Wdbc, 569 x 30 raw features (up to ~4,250), y = +1 benign, -1 malignant, in the
    file's order; ``normalized``: every row scaled to unit 2-norm (float64,
    ``preprocessing.normalize``); ``rows``: the first that many."""
    X, y = _read_shipped("wdbc")
    if rows is not None:
        X, y = X[:rows], y[:rows]
    if normalized:
        X = normalize(X, 2.0)
    X, y = validate(X, y)
    return Dataset(X, y, f"wdbc{' unit 2-norm' if normalized else ' raw'}"
                         f"{f', first {rows}' if rows else ''}")


def digits(positive: int = 3, rows: int | None = 600, normalized: bool = True) -> Dataset:
    """Digits (8 x 8 images, pixel values 0..16), ``positive`` against the rest (+1 / -1),
    the first ``rows`` examples in the file's order, rows at unit 2-norm unless
    ``normalized`` is false."""
    X, digit = _read_shipped("digits")
    if rows is not None:
        X, digit = X[:rows], digit[:rows]
    y = np.where(digit == positive, 1, -1)
    if normalized:
        X = normalize(X, 2.0)
    X, y = validate(X, y)
    return Dataset(X, y, f"digits {positive} against the rest, first {X.shape[0]}"
                         f"{', unit 2-norm' if normalized else ''}")


def digit_classes(rows: int | None = None, normalized: bool = True) -> Dataset:
    """Digits with their ten class labels 0..9 (one-vs-rest data), the first ``rows``
    examples (all 1,797 by default), rows at unit 2-norm unless ``normalized`` is false."""
    X, digit = _read_shipped("digits")
    if rows is not None:
        X, digit = X[:rows], digit[:rows]
    if normalized:
        X = normalize(X, 2.0)
    X, y = validate(X, digit, classes=True)
    return Dataset(X, y, f"digits, 10 classes, first {X.shape[0]}"
                         f"{', unit 2-norm' if normalized else ''}")


def export_real_data(directory: str | pathlib.Path) -> list[pathlib.Path]:
    """Write ``wdbc.csv`` and ``digits.csv`` from scikit-learn's ``load_breast_cancer`` and
    ``load_digits`` (needs scikit-learn; run once by hand to make the shipped files:
    ``python -c "from perceptron_oracle.datasets import export_real_data;
    export_real_data('perceptron_oracle/data_files')"``)."""
    from sklearn.datasets import load_breast_cancer, load_digits  # only here
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    cancer = load_breast_cancer()
    labels = np.where(cancer.target == 1, 1, -1)  # target 1 is benign
    hand = load_digits()
    for name, X, y in (("wdbc", cancer.data, labels), ("digits", hand.data, hand.target)):
        path = directory / DATA_FILES[name]
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            for row, label in zip(X.tolist(), y.tolist()):
                writer.writerow([_short(v) for v in row] + [int(label)])
        out.append(path)
    return out


def _short(value: float) -> str:
    """The shortest text that reads back as exactly ``value`` (integers without '.0')."""
    return str(int(value)) if value == int(value) else repr(value)


#: The embedded example data sets: name -> (what it is, how it is made).
BUILTIN: dict[str, tuple[str, Callable[[], Dataset]]] = {
    "separable": ("200 x 5, unit-norm rows, separable with margin 0.1 (seeded)",
                  lambda: separable(200, 5, 0.1, seed=0)),
    "noisy": ("200 x 5, unit-norm rows, margin 0.05, 10% of the labels flipped (seeded)",
              lambda: with_label_noise(separable(200, 5, 0.05, seed=1), 0.1, seed=2)),
    "wdbc": ("Wisconsin breast cancer, 569 x 30 raw features, +1 benign", lambda: wdbc()),
    "wdbc-unit": ("wdbc, every row at unit 2-norm", lambda: wdbc(normalized=True)),
    "digits3": ("handwritten digits, the first 600 of 8 x 8 pixels, 3 against the rest, "
                "unit 2-norm", lambda: digits()),
    "digits": ("handwritten digits, 1,797 x 64, class labels 0..9 (--multiclass ovr), "
               "unit 2-norm", lambda: digit_classes()),
}


def builtin(name: str) -> Dataset:
    """The embedded example data set ``name`` (``builtin_list``)."""
    if name not in BUILTIN:
        raise DataError(f"unknown builtin data set {name!r} (known: {', '.join(BUILTIN)}; "
                        "builtin:list describes them)")
    dataset = BUILTIN[name][1]()
    dataset.source = f"builtin:{name}"
    return dataset


def builtin_list() -> str:
    """One line per embedded data set: ``builtin:NAME``, what it is."""
    return "\n".join(f"builtin:{name:<10} {what}" for name, (what, _) in BUILTIN.items())
