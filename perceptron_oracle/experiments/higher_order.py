"""The artificial experiment of Brotto, Gentile, Vitale (2007), section 4, Task 1 and Figure 2.

Data ("Artificial 0.0" and "Artificial 0.1"), as the paper describes it:

- a target u in {-1, 0, +1}^n (n = 500): the first ``relevant`` (50) components drawn
  independently and uniformly from {-1, +1}, the rest 0; then normalised (||u||_2 = 1);
- instances drawn uniformly from [-1, +1]^n and normalised (2-norm, the paper's section 1);
  an instance with |u.x| < gamma (gamma = 0.005) is rejected and redrawn; the label is +1 if
  u.x >= gamma and -1 if u.x <= -gamma;
- every label (training and test) flipped independently with probability eta (0.0 or 0.1);
- 1,000 training and 1,000 test examples.

The algorithms are HO_p(c) with rho_k = c/k (FO = HO_2(0); HO_p(0) is the p-norm Perceptron).
For p > 2 the instances are normalised to unit p-norm before the run (Figure 1 with the dual
norms of section 2 item 3 "normalize[s] instance vectors w.r.t. the p-norm"); the label of an
instance does not change under scaling.  Each algorithm is trained epoch after epoch on the
same (fixed, unshuffled) training sequence; after every epoch we record the training updates
made in that epoch, their running total, and the test error of the current hypothesis (a zero
score counts as an error, SPEC.md).

Decisions the paper leaves open: the random source (numpy PCG64 with an explicit seed; the
target, the training set, the test set and the noise come from one seeded stream, in that
order), the order of the training set (as drawn), and the reading of "training updates" in
Figure 2 (we report both the per-epoch count and the running total).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..data import Dataset, validate
from ..fast import higher_order as ho
from ..fast.blas_threads import OneBlasThread
from ..fast.driver import run_blocks
from ..kernels import parse_kernel
from ..preprocessing import normalize
from ..reference.higher_order import resolve_params

#: the algorithms of Figure 2, as (label, p, c)
ALGORITHMS = (("FO = HO_2(0)", 2, Fraction(0)), ("HO_2(0.4)", 2, Fraction(2, 5)),
              ("HO_4(0.4)", 4, Fraction(2, 5)), ("HO_7(0)", 7, Fraction(0)),
              ("HO_7(0.4)", 7, Fraction(2, 5)))


@dataclass
class ArtificialData:
    train: Dataset
    test: Dataset
    u: np.ndarray
    noise: float


def artificial(noise: float, *, seed: int, n: int = 500, relevant: int = 50,
               margin: float = 0.005, n_train: int = 1000, n_test: int = 1000
               ) -> ArtificialData:
    """Artificial ``noise`` (0.0 or 0.1 in the paper), generated as section 4 describes."""
    rng = np.random.default_rng(seed)
    u = np.zeros(n)
    u[:relevant] = rng.choice([-1.0, 1.0], size=relevant)
    u /= np.linalg.norm(u)

    def draw(count: int) -> tuple[np.ndarray, np.ndarray]:
        kept: list[np.ndarray] = []
        total = 0
        while total < count:
            X = rng.uniform(-1.0, 1.0, size=(count, n))
            X /= np.linalg.norm(X, axis=1, keepdims=True)
            X = X[np.abs(X @ u) >= margin]  # rejection: |u.x| < gamma is redrawn
            kept.append(X)
            total += X.shape[0]
        X = np.concatenate(kept)[:count]
        return X, np.where(X @ u >= margin, 1, -1)

    X_train, y_train = draw(n_train)
    X_test, y_test = draw(n_test)
    flips = rng.random(n_train + n_test) < noise
    y_train = np.where(flips[:n_train], -y_train, y_train)
    y_test = np.where(flips[n_train:], -y_test, y_test)
    name = f"Artificial {noise:.1f} (n={n}, relevant={relevant}, margin={margin}, seed={seed})"
    return ArtificialData(Dataset(*validate(X_train, y_train), name + " train"),
                          Dataset(*validate(X_test, y_test), name + " test"), u, noise)


@dataclass
class Curve:
    label: str
    p: int
    c: Fraction
    updates: list[int] = field(default_factory=list)        # per epoch
    total_updates: list[int] = field(default_factory=list)  # running total after each epoch
    test_error: list[float] = field(default_factory=list)   # after each epoch


def run_epochs(X: Any, y: np.ndarray, X_test: Any, y_test: np.ndarray, *, p: int, c: Any,
               epochs: int) -> tuple[list[int], list[float]]:
    """HO_p(c) (rho_k = c/k) trained epoch by epoch: per-epoch updates and test errors.

    One model is carried across the epochs (the same run as ``epochs`` passes at once), with
    the primal form for p = 2 and the implicit one otherwise.
    """
    form = ho._Primal if p == 2 else ho._Implicit     # ho.FORMS' "primal" and "implicit"
    X, y = validate(X, y)
    params = resolve_params(dict(p=p, c=c))
    model = form(X, y, params, parse_kernel("linear"))
    updates, errors = [], []
    with OneBlasThread():
        for _ in range(epochs):
            updates.append(len(run_blocks(model, y, 1).updates))
            scores = X_test @ model.w
            errors.append(float(np.mean(y_test * scores <= 0)))
    return updates, errors


def curve(noise: float, label: str, p: int, c: Any, *, seed: int, epochs: int = 20,
          **sizes: Any) -> Curve:
    """One algorithm's :class:`Curve` on Artificial ``noise`` (the data regenerated from
    ``seed``, so each curve is an independent task)."""
    data = artificial(noise, seed=seed, **sizes)
    X_train = data.train.X if p == 2 else normalize(data.train.X, p)
    X_test = data.test.X if p == 2 else normalize(data.test.X, p)
    updates, errors = run_epochs(X_train, data.train.y, X_test, data.test.y, p=p, c=c,
                                 epochs=epochs)
    return Curve(label, p, Fraction(c), updates, np.cumsum(updates).tolist(), errors)


def experiment(noise: float, *, seed: int, epochs: int = 20, algorithms: Any = ALGORITHMS,
               **sizes: Any) -> list[Curve]:
    """Figure 2 for one data set: a :class:`Curve` per algorithm."""
    return [curve(noise, label, p, c, seed=seed, epochs=epochs, **sizes)
            for label, p, c in algorithms]


def table(curves: list[Curve]) -> str:
    """The curves as text: total training updates and test error after selected epochs."""
    epochs = len(curves[0].updates)
    marks = sorted({1, 2, 5, 10, epochs} & set(range(1, epochs + 1)))
    head = f"{'algorithm':<14}" + "".join(f"  ep{e:>2}: upd   err" for e in marks)
    lines = [head]
    for curve in curves:
        lines.append(f"{curve.label:<14}" + "".join(
            f"  {curve.total_updates[e - 1]:>9d} {curve.test_error[e - 1]:5.3f}"
            for e in marks))
    return "\n".join(lines)


def main() -> None:  # pragma: no cover - by hand: python -m perceptron_oracle.experiments...
    for noise in (0.0, 0.1):
        print(f"Artificial {noise:.1f}, seed 0, 20 epochs (running total of updates, test error)")
        print(table(experiment(noise, seed=0)))


if __name__ == "__main__":  # pragma: no cover
    main()
