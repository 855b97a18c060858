"""Section 5.1 of Ishibashi, Hatano & Takeda (2008): PUMMA against ROMMA with augmentation on
r-of-k threshold data.

Data (:func:`r_of_k`): n-dimensional {-1, +1} vectors labelled by the r-of-k threshold function
f(x) = sign(x_i1 + ... + x_ik + k - 2r + 1) (+1 iff at least r of the k relevant features
are +1; bias k - 2r + 1, so r = 1, 4, 8 give bias 15, 9, 1 for k = 16), with positive and
negative examples equally likely.  The paper does not say how it balanced the classes; we
draw each label with probability 1/2 and then an example uniformly among those of that label
(the number m of relevant +1s from the binomial restricted to m >= r or m < r, which relevant
features they are uniformly, the irrelevant features uniformly).

Runs (:func:`run_to_convergence`): epochs over the data until an epoch passes without an
update; after each epoch the cumulative updates and the p-norm margin
min_t y_t (w.x_t + b) / ||w||_q of the hypothesis over the data, measured in the original
space.  PUMMA_p(delta) learns the bias directly; ROMMA(delta) (a 2-norm, homogeneous learner)
runs on the augmented x~ = (x, -R) with R = max_t ||x_t||_2, and its hypothesis
(w, w_{n+1}) is read as (w, b = -R w_{n+1}).  The paper compares PUMMA with ROMMA for p = 2
and with ALMA for p = 2 ln n.  ALMA_p(alpha; 1/alpha, sqrt 2) ("alma+aug"; EXPERIMENTS.md,
`pumma-r-of-k`, "With ALMA": alpha = delta = 1/10 in Gentile's own parametrisation, the
reading under which it is guaranteed 0.9 times the best margin) runs on (x, -R) with
R = max_t ||x_t||_p, as the paper says, and reads (w, b = -R w_{n+1}) off as ROMMA; pass
``algorithms`` to include it (at alpha = 1/10 it makes 10^5 - 10^6 corrections at the
paper's size).

The paper's finding: PUMMA needs fewer updates than ROMMA with augmentation, markedly so at
large bias (r = 1).  ``python -m perceptron_oracle.experiments.pumma`` prints the table at
the paper's size (n = 100, k = 16, 1,000 examples, delta = 0.1, 10 data sets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..fast import alma as fast_alma
from ..fast import pumma as fast_pumma
from ..fast import romma as fast_romma
from ..fast.driver import run_blocks
from ..reference.alma import PARAMS as ALMA_PARAMS


@dataclass
class RofK:
    X: np.ndarray
    y: np.ndarray
    relevant: np.ndarray
    bias: int


def r_of_k(n_examples: int = 1000, n: int = 100, k: int = 16, r: int = 1, *,
           seed: int) -> RofK:
    """Balanced r-of-k threshold data (module docstring)."""
    if not 1 <= r <= k <= n:
        raise ValueError(f"need 1 <= r <= k <= n, got r={r}, k={k}, n={n}")
    rng = np.random.default_rng(seed)
    relevant = np.sort(rng.choice(n, size=k, replace=False))
    counts = np.arange(k + 1)
    weights = np.array([math.comb(k, m) for m in counts], dtype=float)
    X = rng.choice([-1.0, 1.0], size=(n_examples, n))
    y = rng.choice([-1, 1], size=n_examples)
    for t in range(n_examples):
        allowed = counts >= r if y[t] > 0 else counts < r
        prob = np.where(allowed, weights, 0.0)
        m = rng.choice(counts, p=prob / prob.sum())
        plus = rng.choice(k, size=m, replace=False)
        values = -np.ones(k)
        values[plus] = 1.0
        X[t, relevant] = values
    bias = k - 2 * r + 1
    assert np.all(y * (X[:, relevant].sum(axis=1) + bias) >= 1)
    return RofK(X, y.astype(np.int64), relevant, bias)


def augment(X: np.ndarray, R: float) -> np.ndarray:
    """x~ = (x, -R): a hyperplane (w, b) becomes the homogeneous (w, -b / R)."""
    return np.hstack([X, np.full((X.shape[0], 1), -R)])


def margin(w: np.ndarray, b: float, X: np.ndarray, y: np.ndarray, p: float) -> float:
    """The p-norm margin min_t y_t (w.x_t + b) / ||w||_q, 1/p + 1/q = 1 (Lemma 1)."""
    q = p / (p - 1.0)
    norm = float(np.sum(np.abs(w) ** q) ** (1.0 / q))
    return float(np.min(y * (X @ w + b))) / norm if norm > 0 else -math.inf


@dataclass
class Run:
    algorithm: str
    updates: list[int] = field(default_factory=list)   # cumulative, after each epoch
    margins: list[float] = field(default_factory=list)  # after each epoch
    converged: bool = False


def run_to_convergence(algorithm: str, X: np.ndarray, y: np.ndarray, *, p: float,
                       delta: Any, max_epochs: int = 1000) -> Run:
    """PUMMA_p(delta) ("pumma") or ROMMA(delta) on (x, -R) ("romma+aug"), epoch by epoch
    (fast primal forms), until an epoch without an update."""
    model: fast_pumma._Pumma | fast_romma._Romma | fast_alma._Primal
    if algorithm == "pumma":
        model, _, Xv, yv, _ = fast_pumma.setup("primal", X, y, 1, "linear",
                                               dict(p=p, delta=delta))
    elif algorithm == "romma+aug":
        R = float(np.max(np.linalg.norm(X, axis=1)))
        model, _, Xv, yv, _ = fast_romma.setup("primal", augment(X, R), y, 1, "linear",
                                               dict(delta=delta))
    elif algorithm == "alma+aug":   # ALMA_p(delta; 1/delta, sqrt 2) on (x, -R), R in p-norm
        R = float(np.max(np.sum(np.abs(X) ** p, axis=1) ** (1.0 / p)))
        yv = np.asarray(y, dtype=np.int64)
        model = fast_alma._Primal(augment(X, R), yv, ALMA_PARAMS.resolve(
            dict(p=Fraction(p), alpha=delta)))
    else:
        raise ValueError(f"unknown algorithm {algorithm!r} (pumma, romma+aug, alma+aug)")
    out = Run(algorithm)
    total = 0
    for _ in range(max_epochs):
        done = len(run_blocks(model, yv, 1).updates)
        total += done
        if isinstance(model, fast_pumma._Pumma):       # "pumma"
            w, b = model.space.w, model.b
        elif isinstance(model, fast_alma._Primal):     # "alma+aug"
            w, b = model.w[:-1], -R * float(model.w[-1])
        else:
            w, b = model.space.w[:-1], -R * float(model.space.w[-1])
        out.updates.append(total)
        out.margins.append(margin(w, b, X, y, p))
        if done == 0:
            out.converged = True
            break
    return out


def target_margin(data: RofK, p: float) -> float:
    """The p-norm margin of the generating hyperplane (u = indicator of the relevant
    features, b = k - 2r + 1; functional margin 1): 1 / ||u||_q = k^(-1/q)."""
    q = p / (p - 1.0)
    target: float = float(len(data.relevant)) ** (-1.0 / q)
    return target


def p_value(p_name: str, n: int) -> float:
    """The norm p of a table row: "2" or "2ln(n)"."""
    if p_name == "2":
        return 2.0
    if p_name == "2ln(n)":
        return 2.0 * math.log(n)
    raise ValueError(f"unknown p {p_name!r} (2, 2ln(n))")


def one_run(p_name: str, r: int, i: int, algorithm: str, *, n_examples: int = 1000,
            n: int = 100, k: int = 16, delta: Any = "1/10", seed: int = 0,
            max_epochs: int = 1000) -> tuple[Run, float]:
    """One algorithm on data set i of row (p, r) (seed ``seed + 1000 r + i``), to
    convergence; with the generating hyperplane's margin."""
    p = p_value(p_name, n)
    data = r_of_k(n_examples, n, k, r, seed=seed + 1000 * r + i)
    run = run_to_convergence(algorithm, data.X, data.y, p=p, delta=delta,
                             max_epochs=max_epochs)
    return run, target_margin(data, p)


def summarize(p_name: str, r: int, k: int, runs: dict[str, list[Run]],
              optimum: list[float]) -> list[dict[str, Any]]:
    """The table rows of (p, r): per algorithm, means over the data sets and the first data
    set's per-epoch curve."""
    return [dict(p=p_name, r=r, bias=k - 2 * r + 1, algorithm=name,
                 updates=float(np.mean([x.updates[-1] for x in rs_runs])),
                 epochs=float(np.mean([len(x.updates) for x in rs_runs])),
                 margin=float(np.mean([x.margins[-1] for x in rs_runs])),
                 target_margin=float(np.mean(optimum)),
                 converged=all(x.converged for x in rs_runs),
                 curve=list(zip(rs_runs[0].updates, rs_runs[0].margins)))
            for name, rs_runs in runs.items()]


def experiment(*, n_examples: int = 1000, n: int = 100, k: int = 16,
               rs: tuple[int, ...] = (1, 4, 8), ps: tuple[str, ...] = ("2", "2ln(n)"),
               delta: Any = "1/10", runs: int = 10, seed: int = 0,
               max_epochs: int = 1000,
               algorithms: tuple[str, ...] = ("pumma", "romma+aug")) -> list[dict[str, Any]]:
    """The table of section 5.1: per (p, r, algorithm), the updates and the final margin,
    averaged over ``runs`` data sets, with the per-epoch curve of the first data set."""
    rows = []
    for p_name in ps:
        for r in rs:
            results: dict[str, list[Run]] = {name: [] for name in algorithms}
            optimum = []
            for i in range(runs):
                for name in algorithms:
                    run, best = one_run(p_name, r, i, name, n_examples=n_examples, n=n, k=k,
                                        delta=delta, seed=seed, max_epochs=max_epochs)
                    results[name].append(run)
                optimum.append(best)
            rows.extend(summarize(p_name, r, k, results, optimum))
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'p':>7} {'r':>2} {'bias':>4} {'algorithm':>10} {'updates':>9} {'epochs':>6} "
             f"{'margin':>8} {'target':>8} converged"]
    for row in rows:
        lines.append(f"{row['p']:>7} {row['r']:>2} {row['bias']:>4} {row['algorithm']:>10} "
                     f"{row['updates']:>9.1f} {row['epochs']:>6.1f} {row['margin']:>8.4f} "
                     f"{row['target_margin']:>8.4f} {row['converged']}")
    return "\n".join(lines)


def main() -> None:  # pragma: no cover - by hand
    rows = experiment()
    print(format_table(rows))
    for row in rows:
        curve = ", ".join(f"{u}:{m:.4f}" for u, m in row["curve"])
        print(f"p={row['p']} r={row['r']} {row['algorithm']} per epoch (updates:margin): "
              f"{curve}")


if __name__ == "__main__":  # pragma: no cover
    main()
