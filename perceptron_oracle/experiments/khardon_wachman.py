"""Section 3 of Khardon & Wachman, "Noise Tolerant Variants of the Perceptron Algorithm"
(JMLR 2007): the artificial (f, M, N) data, parameter search (Tables 3 and 4) and parameter
optimisation by double cross-validation with the 95% T-confidence interval (Table 6).

Settings (section 3.2): theta_init = C = the average ||x||^2 over the training examples,
eta = 0.1, 100 epochs; tau in {0, 1/8, 1/4, 1/2, 1, 2, 4} in units of theta_init (the
learner's tau is tau * theta_init, SPEC.md section 11), lambda in {0, 1/8, ..., 4} (the
lambda-trick adds y lambda ||x||^2, already in the data's units, eq. 1), alpha-bound in
{none, 80, 60, 40, 20, 10, 5}.  The grid runs every tau with every lambda (alpha-bound none)
and with every alpha-bound (lambda 0): 7 x 13 = 91 settings, which hold every column of the
tables (nothing, tau, lambda, alpha, tau x lambda, tau x alpha).  One run of the fast primal
form gives the three hypotheses: last, longest survivor and voted (Figure 2; SPEC.md
section 11).  A test example counts as correct iff y * score > 0 (a zero score or a tied vote
is an error).

Decisions where the paper is not explicit (EXPERIMENTS.md, "Khardon & Wachman"):

- data (:func:`artificial`): attributes uniform integers in [-10, 10]; w is the sum of the
  examples of a first pool of ``n_examples`` on which a fair coin shows heads ("flipping a
  coin for each example and adding it to the weight vector on a head"); theta is the average
  of |w.x| / 2 over that pool; examples with |w.x - theta| < M theta are dropped and fresh
  examples (same w, theta) drawn until ``n_examples`` remain; label sign(w.x - theta), then
  flipped with probability N.  One numpy PCG64 stream per data set, seeded.
- cross-validation (:func:`splits`): a seeded permutation of the data cut into k folds of
  near-equal size (numpy's ``array_split``); the training part of each fold permuted again by
  its own seed ("the training set is randomly permuted").  The inner folds of the double
  cross-validation cut the outer training sequence the same way.
- parameter search: a column's value is the best, over the column's settings, of the mean
  accuracy over the folds; with several data sets per (f, M, N) (the paper made two), the
  mean over the data sets of those means, so one setting per column for the group.
- parameter optimisation: in each outer fold, for each column and hypothesis, the setting with
  the best mean inner-fold accuracy (the first in grid order on a tie, grid order running
  from "no effect" to "strong effect"), trained on the whole outer training part and tested
  on the outer test fold; columns include the inactive value (section 3.4); tau -> lambda
  and tau -> alpha choose tau first (lambda 0, no bound), then lambda or alpha given it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import stats

from ..data import Dataset, validate
from ..datasets import wdbc
from ..fast.perceptron import primal

TAUS = (Fraction(0), Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2),
        Fraction(4))
LAMS = TAUS
ALPHAS: tuple[int | None, ...] = (None, 80, 60, 40, 20, 10, 5)
HYPOTHESES = ("last", "longest", "voted")
SEARCH_COLUMNS = ("nothing", "tau", "lam", "alpha", "tau x lam", "tau x alpha")
OPTIMISATION_COLUMNS = ("nothing", "tau", "lam", "alpha", "tau x alpha", "tau x lam",
                        "tau -> alpha", "tau -> lam")

Setting = tuple[Fraction, Fraction, "int | None"]   # (tau, lambda, alpha-bound)


@dataclass(frozen=True)
class Config:
    """The experiment's sizes: folds, epochs, eta and the parameter grid."""
    folds: int = 10
    inner_folds: int = 10
    epochs: int = 100
    eta: Fraction = Fraction(1, 10)
    taus: tuple[Fraction, ...] = TAUS
    lams: tuple[Fraction, ...] = LAMS
    alphas: tuple[int | None, ...] = ALPHAS

    def settings(self, tau: Fraction) -> list[Setting]:
        """The grid's settings with this tau: every lambda (no bound), then every bound
        (lambda 0), the inactive setting once."""
        out: list[Setting] = [(tau, Fraction(0), None)]
        out += [(tau, lam, None) for lam in self.lams if lam != 0]
        out += [(tau, Fraction(0), a) for a in self.alphas if a is not None]
        return out

    def grid(self) -> list[Setting]:
        return [s for tau in self.taus for s in self.settings(tau)]


def column_of(setting: Setting) -> str:
    """The parameter-search column (Tables 3 and 4: active values only) of a setting."""
    tau, lam, alpha = setting
    active = ("tau" if tau else "") + ("lam" if lam else "") + ("alpha" if alpha else "")
    return {"": "nothing", "tau": "tau", "lam": "lam", "alpha": "alpha", "taulam": "tau x lam",
            "taualpha": "tau x alpha"}[active]


def in_optimisation_column(setting: Setting, column: str) -> bool:
    """Whether a setting is a candidate of an optimisation column (Table 6: inactive value
    included).  The sequential columns are handled by :func:`choose`."""
    tau, lam, alpha = setting
    return {"nothing": not tau and not lam and alpha is None,
            "tau": not lam and alpha is None,
            "lam": not tau and alpha is None,
            "alpha": not tau and not lam,
            "tau x lam": alpha is None,
            "tau x alpha": not lam}[column]


def format_setting(setting: Setting) -> str:
    tau, lam, alpha = setting
    return (f"tau={tau} lam={lam} alpha={'inf' if alpha is None else alpha}")


# -- data ------------------------------------------------------------------------------------

def artificial(f: int, M: float, N: float, *, seed: int, n_examples: int = 600) -> Dataset:
    """An (f, M, N) data set of section 3.1 (module docstring for the decisions)."""
    if f < 1 or n_examples < 2 or M < 0 or not 0 <= N <= 1:
        raise ValueError(f"need f >= 1, n_examples >= 2, M >= 0, 0 <= N <= 1; got f={f}, "
                         f"n_examples={n_examples}, M={M}, N={N}")
    rng = np.random.default_rng(seed)
    pool = rng.integers(-10, 11, size=(n_examples, f)).astype(np.float64)
    heads = rng.random(n_examples) < 0.5
    w = pool[heads].sum(axis=0)
    theta = float(np.mean(np.abs(pool @ w))) / 2.0
    if theta == 0:
        raise ValueError("the coin flips gave w.x = 0 on every example; use another seed")
    kept = [pool[np.abs(pool @ w - theta) >= M * theta]]
    count = kept[0].shape[0]
    while count < n_examples:
        fresh = rng.integers(-10, 11, size=(n_examples, f)).astype(np.float64)
        fresh = fresh[np.abs(fresh @ w - theta) >= M * theta]
        kept.append(fresh)
        count += fresh.shape[0]
    X = np.concatenate(kept)[:n_examples]
    y = np.where(X @ w - theta > 0, 1, -1)
    flips = rng.random(n_examples) < N
    y = np.where(flips, -y, y)
    X, y = validate(X, y)
    return Dataset(X, y, f"artificial(f={f}, M={M}, N={N}, seed={seed})")


@functools.lru_cache(maxsize=8)
def load(spec: tuple[Any, ...]) -> Dataset:
    """A data set from a picklable description: ("artificial", f, M, N, seed[, n]) or
    ("wdbc",) (the shipped copy, raw features as the paper uses them)."""
    if spec[0] == "artificial":
        return artificial(spec[1], spec[2], spec[3], seed=spec[4],
                          **({"n_examples": spec[5]} if len(spec) > 5 else {}))
    if spec[0] == "wdbc":
        return wdbc()
    raise ValueError(f"unknown data set description {spec!r}")


def splits(indices: np.ndarray, k: int, seed: Sequence[int]
           ) -> list[tuple[np.ndarray, np.ndarray]]:
    """k-fold cross-validation of ``indices``: a permutation seeded by ``seed`` cut into k
    folds; fold i's training part (the other folds, in order) permuted by seed + [i + 1]."""
    if not 2 <= k <= len(indices):
        raise ValueError(f"cannot make {k} folds of {len(indices)} examples")
    order = indices[np.random.default_rng(list(seed)).permutation(len(indices))]
    folds = np.array_split(order, k)
    out = []
    for i in range(k):
        train = np.concatenate([folds[j] for j in range(k) if j != i])
        train = train[np.random.default_rng(list(seed) + [i + 1]).permutation(len(train))]
        out.append((train, folds[i]))
    return out


def split_at(n: int, path: tuple[int, ...], config: Config, seed: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """The (train, test) indices of an outer fold (path = (o,)) or of inner fold i of outer
    fold o (path = (o, i)); the inner folds split the outer training sequence."""
    outer = splits(np.arange(n), config.folds, [seed])
    train, test = outer[path[0]]
    if len(path) == 1:
        return train, test
    return splits(train, config.inner_folds, [seed, path[0] + 1])[path[1]]


# -- runs ------------------------------------------------------------------------------------

def accuracies(X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray,
               setting: Setting, *, epochs: int, eta: Fraction) -> dict[str, float]:
    """Train the Perceptron (fast primal form) with one setting in the paper's units and
    return the test accuracy (%) of the last, longest-survivor and voted hypotheses."""

    tau, lam, alpha = setting
    theta = float(np.mean(np.einsum("ij,ij->i", X, X)))
    trace = primal(X, y, epochs=epochs, eta=eta, b0=-theta, C=theta, tau=float(tau) * theta,
                   lam=lam, alpha_bound=alpha)
    final = trace.final
    last = X_test @ np.asarray(final["w"]) + final["b"]
    ls = final["longest_survivor"]
    longest = X_test @ np.asarray(ls["w"]) + ls["b"]
    voted = voted_scores(X, y, X_test, trace.updates, final["votes"], eta=float(eta),
                         b0=-theta, C=theta)
    return {name: 100.0 * float(np.mean(y_test * s > 0))
            for name, s in (("last", last), ("longest", longest), ("voted", voted))}


def voted_scores(X: np.ndarray, y: np.ndarray, X_test: np.ndarray, updates: Sequence[int],
                 votes: Sequence[int], *, eta: float, b0: float, C: float) -> np.ndarray:
    """sum_{k=1}^K c_k sign(s_k(x)) (Figure 2's VOTED; h_0 has no say), with
    s_k = s_{k-1} + eta y_u (x_u.x + C) along the update sequence."""
    if not updates:
        return np.zeros(X_test.shape[0])
    examples = np.asarray(updates, dtype=np.int64) % X.shape[0]
    steps = eta * y[examples] * (X_test @ X[examples].T + C)   # (n_test, K)
    scores = b0 + np.cumsum(steps, axis=1)
    return np.sign(scores) @ np.asarray(votes[1:], dtype=np.float64)


def fold_task(spec: tuple[Any, ...], path: tuple[int, ...], tau: Fraction, config: Config,
              seed: int) -> list[tuple[Setting, dict[str, float]]]:
    """One task: the settings with this tau on one (outer or inner) fold."""
    data = load(spec)
    train, test = split_at(data.y.shape[0], path, config, seed)
    X, y = data.X, data.y
    return [(s, accuracies(X[train], y[train], X[test], y[test], s, epochs=config.epochs,
                           eta=config.eta))
            for s in config.settings(tau)]


# -- the tables ------------------------------------------------------------------------------

Results = dict[tuple[Any, ...], dict[Setting, dict[str, float]]]  # path -> setting -> acc


def tasks(specs: Iterable[tuple[Any, ...]], config: Config, seed: int, *,
          inner: bool = False) -> list[tuple[Any, ...]]:
    """Every task of a search (outer folds) or of a double cross-validation (inner folds
    too), as argument tuples for :func:`fold_task`."""
    out = []
    for spec in specs:
        paths: list[tuple[int, ...]] = [(o,) for o in range(config.folds)]
        if inner:
            paths += [(o, i) for o in range(config.folds) for i in range(config.inner_folds)]
        for path in paths:
            for tau in config.taus:
                out.append((spec, path, tau, config, seed))
    return out


def collect(task_list: Sequence[tuple[Any, ...]], outputs: Sequence[Any]
            ) -> dict[tuple[Any, ...], Results]:
    """The tasks' outputs as {data set: {fold path: {setting: {hypothesis: accuracy}}}}."""
    out: dict[tuple[Any, ...], Results] = {}
    for task, result in zip(task_list, outputs):
        spec, path = task[0], task[1]
        for setting, acc in result:
            out.setdefault(spec, {}).setdefault(path, {})[setting] = acc
    return out


def mean_over_folds(results: Results, folds: Iterable[tuple[int, ...]]
                    ) -> dict[Setting, dict[str, float]]:
    folds = list(folds)
    settings = results[folds[0]].keys()
    return {s: {h: float(np.mean([results[p][s][h] for p in folds])) for h in HYPOTHESES}
            for s in settings}


def search_table(by_data: dict[tuple[Any, ...], Results], specs: Sequence[tuple[Any, ...]],
                 config: Config) -> dict[str, dict[str, tuple[float, Setting]]]:
    """Parameter search: {hypothesis: {column: (best accuracy, its setting)}}, the accuracy
    of a setting being its mean over the outer folds, averaged over ``specs``."""
    outer = [(o,) for o in range(config.folds)]
    means = [mean_over_folds(by_data[spec], outer) for spec in specs]
    table: dict[str, dict[str, tuple[float, Setting]]] = {}
    for h in HYPOTHESES:
        for setting in config.grid():
            value = float(np.mean([m[setting][h] for m in means]))
            column = column_of(setting)
            best = table.setdefault(h, {}).get(column)
            if best is None or value > best[0]:
                table[h][column] = (value, setting)
    return table


def choose(means: dict[Setting, dict[str, float]], column: str, hypothesis: str,
           grid: Sequence[Setting]) -> Setting:
    """The optimisation column's choice from inner-fold mean accuracies (first on a tie)."""
    def best(candidates: Iterable[Setting]) -> Setting:
        chosen, value = None, -math.inf
        for s in candidates:
            if means[s][hypothesis] > value:
                chosen, value = s, means[s][hypothesis]
        assert chosen is not None
        return chosen

    if column in ("tau -> alpha", "tau -> lam"):
        tau = best(s for s in grid if in_optimisation_column(s, "tau"))[0]
        if column == "tau -> alpha":
            return best(s for s in grid if s[0] == tau and s[1] == 0)
        return best(s for s in grid if s[0] == tau and s[2] is None)
    return best(s for s in grid if in_optimisation_column(s, column))


def t_interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% T-confidence interval (the paper's footnote 5:
    t_{k-1, 0.975} sqrt(sum (y_i - mean)^2 / (k (k - 1))))."""

    k = len(values)
    mean = float(np.mean(values))
    if k < 2:
        return mean, math.nan
    spread = math.sqrt(float(np.sum((np.asarray(values) - mean) ** 2)) / (k * (k - 1)))
    return mean, float(stats.t.ppf(0.975, k - 1)) * spread


def optimisation_table(results: Results, config: Config
                       ) -> dict[str, dict[str, tuple[float, float, list[Setting]]]]:
    """Parameter optimisation (double cross-validation) on one data set:
    {hypothesis: {column: (mean accuracy, T half-width, the setting chosen per fold)}}."""
    grid = config.grid()
    out: dict[str, dict[str, tuple[float, float, list[Setting]]]] = {}
    for h in HYPOTHESES:
        for column in OPTIMISATION_COLUMNS:
            accs, chosen = [], []
            for o in range(config.folds):
                inner = mean_over_folds(results, [(o, i) for i in range(config.inner_folds)])
                s = choose(inner, column, h, grid)
                chosen.append(s)
                accs.append(results[(o,)][s][h])
            mean, half = t_interval(accs)
            out.setdefault(h, {})[column] = (mean, half, chosen)
    return out
