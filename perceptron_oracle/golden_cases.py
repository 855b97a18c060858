"""What the golden files contain: the case families, each a function returning a FileSpec.

Data is generated from fixed seeds; every flag the reference run shows by itself (ties,
margin-band hits, fragile trials, long runs, blocked updates) is added by the generator, the
rest (duplicates, sparse data) is declared here.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import preprocessing
from .datasets import separable, with_label_noise
from .golden import CaseSpec, FileSpec, GroupSpec


def _integers(T: int, n: int, seed: int, low: int = -2, high: int = 2) -> tuple:
    rng = np.random.default_rng(seed)
    X = rng.integers(low, high + 1, size=(T, n)).astype(np.float64)
    return X, np.where(rng.random(T) < 0.5, 1, -1)


def _continuous(T: int, n: int, seed: int, noise: float = 0.0, margin: float = 0.05) -> tuple:
    ds = separable(T, n, margin, seed=seed)
    if noise:
        ds = with_label_noise(ds, noise, seed=seed + 1000)
    return ds.X, ds.y


def _duplicates(seed: int) -> tuple:
    X, y = _integers(12, 3, seed)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, 12, size=10)
    flips = np.where(rng.random(10) < 0.5, -1, 1)
    return np.vstack([X, X[picks]]), np.concatenate([y, y[picks] * flips])


def _sparse(T: int, n: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((T, n)) < 0.1, rng.integers(1, 4, size=(T, n)), 0).astype(float)
    u = rng.standard_normal(n)
    y = np.where(X @ u > 0, 1, -1)
    return X, y


def _standard_cases(seed: int) -> list[CaseSpec]:
    """The data every parameter group runs on."""
    return [
        CaseSpec("separable continuous data, 40 x 3", *_continuous(40, 3, seed), epochs=3),
        CaseSpec("small integers in -2..2: exact ties", *_integers(30, 3, seed), epochs=3),
        CaseSpec("label noise 10%, continuous", *_continuous(50, 4, seed, noise=0.1),
                 epochs=3),
        CaseSpec("duplicates, some relabelled", *_duplicates(seed), epochs=3,
                 flags=("duplicates",)),
    ]


def perceptron_file() -> FileSpec:
    groups = [
        GroupSpec("the classic Perceptron: every option at its default", "perceptron", {},
                  _standard_cases(1) + [
                      CaseSpec("one example", np.array([[0.5, -1.0]]), np.array([-1]),
                               epochs=3),
                      CaseSpec("zero instances among others: their score is b alone",
                               np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0], [-1.0, 1.0]]),
                               np.array([1, 1, -1, -1]), epochs=3),
                      CaseSpec("sparse integer data, 60 x 20", *_sparse(60, 20, 7), epochs=2,
                               flags=("sparse-data",)),
                      CaseSpec("a long noisy run, 300 x 5, 5 epochs",
                               *_continuous(300, 5, 8, noise=0.15), epochs=5),
                      CaseSpec("unit-normalised with a bias coordinate",
                               preprocessing.add_bias(preprocessing.normalize(
                                   _continuous(40, 3, 9, margin=0.0)[0] + 0.3)),
                               _continuous(40, 3, 9, margin=0.0)[1], epochs=2,
                               preprocessing=("normalize:2", "add_bias:1")),
                  ]),
        GroupSpec("threshold learning with dyadic constants (float64 is exact on integers)",
                  "perceptron", {"eta": Fraction(1, 2), "b0": -1, "C": 1},
                  _standard_cases(2)),
        GroupSpec("threshold learning with eta = 1/10, theta_init = 1/2, C = 1/3: exact ties "
                  "that float64 cannot promise are flagged fragile", "perceptron",
                  {"eta": Fraction(1, 10), "b0": Fraction(-1, 2), "C": Fraction(1, 3)},
                  _standard_cases(3)),
        GroupSpec("margin tau = 1: updates on correct trials with small margin, "
                  "y score == tau exactly on integers", "perceptron", {"tau": 1},
                  _standard_cases(4)),
        GroupSpec("the lambda-trick, lam = 1/2", "perceptron", {"lam": Fraction(1, 2)},
                  _standard_cases(5)),
        GroupSpec("the alpha-bound: at most one update per example", "perceptron",
                  {"alpha_bound": 1}, _standard_cases(6)),
        GroupSpec("everything at once: eta 2, theta_init 1, C 1/4, tau 3/4, lam 1/4, "
                  "alpha-bound 2", "perceptron",
                  {"eta": 2, "b0": -1, "C": Fraction(1, 4), "tau": Fraction(3, 4),
                   "lam": Fraction(1, 4), "alpha_bound": 2}, _standard_cases(7)),
        GroupSpec("polynomial kernel (x.z + 1)^2", "perceptron", {"tau": Fraction(1, 2)},
                  _standard_cases(8)[:3], kernel="poly:degree=2,coef0=1,gamma=1"),
        GroupSpec("polynomial kernel (x.z/2 - 1/2)^3", "perceptron", {},
                  _standard_cases(9)[:3], kernel="poly:degree=3,coef0=-1/2,gamma=1/2"),
        GroupSpec("Gaussian kernel, gamma = 1/2 (mpmath at 256 bits)", "perceptron",
                  {"lam": Fraction(1, 4)}, _standard_cases(10)[:2],
                  kernel="rbf:gamma=1/2"),
    ]
    return FileSpec(
        name="perceptron",
        header=["The general Perceptron of Khardon & Wachman (2007), SPEC.md section 7.",
                "Every case: the reference's mistakes, updates and final state (last, "
                "votes, longest survivor, averaged) on X exactly as written."],
        groups=groups)
