"""The Second-Order Perceptron's simulation (Cesa-Bianchi, Conconi, Gentile 2005; slides
on the paper, "Simulations"): linearly separable Gaussian data with 100 attributes whose
correlation matrix has one eigenvalue eight times the others; the target hyperplane's normal u
is orthogonal to the dominant eigenvector (data set 1) or to the first non-dominant one (data
set 2).  Train two epochs on 9,000 examples, test on 3,000, repeat 5 times; compare the
Perceptron with SOP at a in {1, 10, 50} (test mistakes, mean and standard deviation).

Reading of "hyperplane orthogonal to the eigenvector" (SPEC.md): the normal u is orthogonal
to it, so the dominant direction carries variance but no label information (data set 1).
The eigenvectors are a random orthonormal basis (seeded); u is a random direction with the
named eigenvector projected out.  Test predictions use the sign identity: SOP's final
hypothesis predicts sign(x . w) with w = (a I + X X^T)^{-1} v (SPEC.md); a zero score counts
as a mistake.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..fast import second_order as sop
from ..fast.perceptron import primal as perceptron

ALGORITHMS = ("perceptron", "sop a=1", "sop a=10", "sop a=50")


def simulation(dataset: int, *, n_train: int = 9000, n_test: int = 3000, n: int = 100,
               ratio: float = 8.0, seed: int = 0) -> tuple[np.ndarray, ...]:
    """(X_train, y_train, X_test, y_test) for data set 1 or 2."""
    if dataset not in (1, 2):
        raise ValueError("dataset must be 1 or 2")
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))   # eigenvectors: columns of Q
    scales = np.ones(n)
    scales[0] = np.sqrt(ratio)                          # eigenvalue ratio 8 : 1
    e = Q[:, 0] if dataset == 1 else Q[:, 1]
    u = rng.standard_normal(n)
    u -= (u @ e) * e
    u /= np.linalg.norm(u)
    Z = rng.standard_normal((n_train + n_test, n))
    X = (Z * scales) @ Q.T
    y = np.where(X @ u > 0, 1, -1).astype(np.int64)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def count_test_mistakes(w: Any, X: np.ndarray, y: np.ndarray) -> int:
    return int(np.sum(y * (X @ np.asarray(w, dtype=float)) <= 0))


def one_repeat(dataset: int, seed: int, *, n_train: int = 9000, n_test: int = 3000,
               n: int = 100, epochs: int = 2, a_values: tuple[int, ...] = (1, 10, 50),
               form: str = "primal") -> dict[str, int]:
    """{algorithm: test mistakes} on one draw of data set 1 or 2 (seed ``seed``)."""

    X, y, Xt, yt = simulation(dataset, n_train=n_train, n_test=n_test, n=n, seed=seed)
    runs = {"perceptron": perceptron(X, y, epochs=epochs).final["w"]}
    for a in a_values:
        runs[f"sop a={a}"] = getattr(sop, form)(X, y, epochs=epochs, a=a).final["w"]
    return {name: count_test_mistakes(w, Xt, yt) for name, w in runs.items()}


def summarize(repeats: dict[int, list[dict[str, int]]]
              ) -> dict[str, dict[int, tuple[float, float]]]:
    """{data set: [one_repeat results]} -> {algorithm: {data set: (mean, std)}}."""
    out: dict[str, dict[int, list[int]]] = {}
    for dataset, results in repeats.items():
        for result in results:
            for name, mistakes in result.items():
                out.setdefault(name, {}).setdefault(dataset, []).append(mistakes)
    return {name: {d: (float(np.mean(v)), float(np.std(v))) for d, v in by.items()}
            for name, by in out.items()}


def table(*, repeats: int = 5, n_train: int = 9000, n_test: int = 3000, n: int = 100,
          epochs: int = 2, a_values: tuple[int, ...] = (1, 10, 50),
          form: str = "primal") -> dict[str, dict[int, tuple[float, float]]]:
    """{algorithm: {data set: (mean, std) test mistakes}} over ``repeats`` seeds (data set d,
    repeat r: seed 1000 d + r)."""
    return summarize({dataset: [one_repeat(dataset, 1000 * dataset + seed, n_train=n_train,
                                           n_test=n_test, n=n, epochs=epochs,
                                           a_values=a_values, form=form)
                                for seed in range(repeats)]
                      for dataset in (1, 2)})


def format_table(result: dict[str, dict[int, tuple[float, float]]]) -> str:
    lines = [f"{'algorithm':<14} {'data set 1':>16} {'data set 2':>16}"]
    for name, by in result.items():
        lines.append(f"{name:<14} " + " ".join(f"{m:>9.2f} ({s:4.2f})" for m, s in
                                               (by[1], by[2])))
    return "\n".join(lines)


if __name__ == "__main__":  # python -m perceptron_oracle.experiments.second_order
    print(format_table(table()))
