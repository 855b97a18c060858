"""Ratios of the fast Perceptron and p-norm Perceptron forms to their floor and their peers.

One command, every time measured in one run on one machine (ratios survive a noisy machine
better than times):

    python -m perceptron_oracle.benchmarks                       # full size
    python -m perceptron_oracle.benchmarks --size 0.1            # a tenth of the rows
    python -m perceptron_oracle.benchmarks --json run.json       # also write the ratios
    python -m perceptron_oracle.benchmarks --compare tests/benchmarks/baseline.json

Cases (rows x columns at ``--size 1``): Perceptron primal on dense 100,000 x 500 and on CSR
100,000 x 20,000 (1% of entries stored), the dual with kernels poly (degree 2) and rbf on
5,000 x 50, the p-norm Perceptron primal (p = 4) on 20,000 x 200; each at update rates near
0.1%, 3% and 25% (label noise; the measured rate is printed).  One epoch each.

Columns, in microseconds per trial (best of ``--repeat`` runs):

- ``fast``: the fast form as shipped (``engine="auto"``), and ``numpy``: its block-ahead path;
- ``floor``: one ``X @ w`` pass over the data (dense: BLAS, which may use every core; CSR:
  scipy's sparse product); for the dual, the T x |S| kernel block ``kernel.matrix(X, X[S])``
  against the run's final support set S;
- ``sklearn``: scikit-learn's ``Perceptron`` for one epoch with eta0=1, no shuffling, no
  penalty, no intercept (the form's C = 0): it updates on y score <= 0 as the Perceptron
  here does (its ``predict`` differs at a zero score, which does not enter training);
  primal forms only;
- ``np loop``: a per-trial numpy loop a user would write (one dot product, or one kernel row
  against the support set, per trial); ``numba loop``: the same loop compiled by numba with a
  plain scalar dot product.  Every peer's mistakes are checked against the fast form's.

Ratios: fast/floor and fast/peer (lower is faster).  ``--compare BASELINE`` fails (exit 1)
when a ratio is worse than the baseline's by more than ``--margin`` (default 1.5: machines are
noisy); a case missing from either side is reported, not failed.  Needs numba and
scikit-learn for the peer columns (a missing one is printed as "-").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

RATES = {"0.1%": 0.0, "3%": 0.013, "25%": 0.14}  # label-noise rates giving those update rates
DEFAULT_MARGIN = 1.5


# -- data -------------------------------------------------------------------------------------
def dense_data(T: int, n: int, noise: float, margin: float = 0.05, seed: int = 11
               ) -> tuple[np.ndarray, np.ndarray]:
    from .datasets import separable, with_label_noise
    ds = separable(T, n, margin, seed=seed)
    if noise:
        ds = with_label_noise(ds, noise, seed=seed + 1)
    return ds.X, ds.y


def csr_data(T: int, n: int, density: float, noise: float, seed: int = 13
             ) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows with density * n random entries, one of them feature 0 = 0.08 y before
    normalising (so e_0 separates the clean labels with a margin), unit 2-norm rows."""
    rng = np.random.default_rng(seed)
    k = max(2, int(density * n))
    y = np.where(rng.random(T) < 0.5, 1, -1)
    cols = np.empty((T, k), dtype=np.int64)
    cols[:, 0] = 0
    cols[:, 1:] = rng.integers(1, n, size=(T, k - 1))
    cols.sort(axis=1)
    vals = rng.standard_normal((T, k)) / np.sqrt(k)
    vals[:, 0] = 0.08 * y
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, T * k + 1, k)), shape=(T, n))
    X.sum_duplicates()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    X.sort_indices()
    if noise:
        y = np.where(rng.random(T) < noise, -y, y)
    return X, y


# -- peers ------------------------------------------------------------------------------------
def numpy_loop(X: Any, y: np.ndarray) -> list[int]:
    """The Perceptron as a per-trial numpy loop (dense or CSR rows)."""
    w = np.zeros(X.shape[1])
    mistakes = []
    if sp.issparse(X):
        ptr, idx, val = X.indptr, X.indices, X.data
        for t in range(X.shape[0]):
            lo, hi = ptr[t], ptr[t + 1]
            if y[t] * (val[lo:hi] @ w[idx[lo:hi]]) <= 0:
                mistakes.append(t)
                w[idx[lo:hi]] += y[t] * val[lo:hi]
        return mistakes
    for t in range(X.shape[0]):
        if y[t] * (X[t] @ w) <= 0:
            mistakes.append(t)
            w += y[t] * X[t]
    return mistakes


def numpy_dual_loop(X: np.ndarray, y: np.ndarray, kernel: Any) -> list[int]:
    """The kernel Perceptron per trial: one kernel row against the support set."""
    support: list[int] = []
    mistakes = []
    for t in range(X.shape[0]):
        score = float((kernel.matrix(X[t:t + 1], X[support]) @ y[support])[0]) if support else 0.0
        if y[t] * score <= 0:
            mistakes.append(t)
            support.append(t)
    return mistakes


def numpy_pnorm_loop(X: np.ndarray, y: np.ndarray, p: float) -> list[int]:
    from .fast.higher_order import pnorm_gradient
    v, w = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    mistakes = []
    for t in range(X.shape[0]):
        if y[t] * (X[t] @ w) <= 0:
            mistakes.append(t)
            v += y[t] * X[t]
            w = pnorm_gradient(v, p)
    return mistakes


_NUMBA: dict[str, Callable[..., Any]] = {}


def numba_loops() -> dict[str, Callable[..., Any]]:
    """Plain numba loops (a scalar dot product per trial); empty without numba."""
    if _NUMBA:
        return _NUMBA
    try:
        import numba
    except ImportError:
        return _NUMBA

    @numba.njit(cache=False)
    def dense(X: Any, y: Any, flags: Any) -> None:
        w = np.zeros(X.shape[1])
        for t in range(X.shape[0]):
            s = 0.0
            for i in range(X.shape[1]):
                s += X[t, i] * w[i]
            if y[t] * s <= 0:
                flags[t] = 1
                for i in range(X.shape[1]):
                    w[i] += y[t] * X[t, i]

    @numba.njit(cache=False)
    def csr(ptr: Any, idx: Any, val: Any, n: int, y: Any, flags: Any) -> None:
        w = np.zeros(n)
        for t in range(y.shape[0]):
            s = 0.0
            for k in range(ptr[t], ptr[t + 1]):
                s += val[k] * w[idx[k]]
            if y[t] * s <= 0:
                flags[t] = 1
                for k in range(ptr[t], ptr[t + 1]):
                    w[idx[k]] += y[t] * val[k]

    @numba.njit(cache=False)
    def kernel_dual(X: Any, rbf: bool, gamma: float, y: Any, flags: Any) -> None:
        support = np.zeros(X.shape[0], dtype=np.int64)
        S = 0
        for t in range(X.shape[0]):
            score = 0.0
            for s in range(S):
                i = support[s]
                if rbf:
                    d = 0.0
                    for f in range(X.shape[1]):
                        d += (X[i, f] - X[t, f]) ** 2
                    score += y[i] * np.exp(-gamma * d)
                else:
                    d = 0.0
                    for f in range(X.shape[1]):
                        d += X[i, f] * X[t, f]
                    score += y[i] * (gamma * d + 1.0) ** 2
            if y[t] * score <= 0:
                flags[t] = 1
                support[S] = t
                S += 1

    @numba.njit(cache=False)
    def pnorm(X: Any, p: float, y: Any, flags: Any) -> None:
        n = X.shape[1]
        v, w = np.zeros(n), np.zeros(n)
        for t in range(X.shape[0]):
            s = 0.0
            for i in range(n):
                s += X[t, i] * w[i]
            if y[t] * s <= 0:
                flags[t] = 1
                for i in range(n):
                    v[i] += y[t] * X[t, i]
                norm = 0.0
                for i in range(n):
                    norm += abs(v[i]) ** p
                norm = norm ** ((p - 2.0) / p)
                for i in range(n):
                    w[i] = np.sign(v[i]) * abs(v[i]) ** (p - 1.0) / norm

    def flagged(fn: Callable[..., Any], args: tuple[Any, ...], y: np.ndarray) -> list[int]:
        flags = np.zeros(len(y), dtype=np.uint8)
        fn(*args, y.astype(np.float64), flags)
        out: list[int] = np.flatnonzero(flags).tolist()
        return out

    _NUMBA.update(
        dense=lambda X, y: flagged(dense, (X,), y),
        csr=lambda X, y: flagged(csr, (X.indptr, X.indices, X.data, X.shape[1]), y),
        dual=lambda X, y, kern: flagged(kernel_dual, (X, kern.name == "rbf",
                                                      float(kern.gamma)), y),
        pnorm=lambda X, y, p: flagged(pnorm, (X, p), y),
    )
    return _NUMBA


def sklearn_perceptron(X: Any, y: np.ndarray) -> Callable[[], Any] | None:
    try:
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import Perceptron
    except ImportError:
        return None

    def fit() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return Perceptron(eta0=1.0, shuffle=False, penalty=None, fit_intercept=False,
                              max_iter=1, tol=None).fit(X, y)
    return fit


# -- measuring --------------------------------------------------------------------------------
def best_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def cases(size: float) -> list[tuple[str, str, Callable[[], tuple[Any, ...]]]]:
    """(case name, rate, data maker); data are (X, y[, kernel or p])."""
    from .kernels import parse_kernel

    def rows(T: int) -> int:
        return max(500, int(T * size))

    out: list[tuple[str, str, Callable[[], tuple[Any, ...]]]] = []
    for rate, noise in RATES.items():
        out.append(("primal dense", rate, lambda noise=noise: dense_data(rows(100_000), 500,  # type: ignore[misc]
                                                                          noise)))
        out.append(("primal csr", rate, lambda noise=noise: csr_data(  # type: ignore[misc]
            rows(100_000), 20_000, 0.01, noise)))
        for spec, name in (("poly:degree=2,coef0=1,gamma=1", "dual poly2"),
                           ("rbf:gamma=1", "dual rbf")):
            out.append((name, rate, lambda noise=noise, spec=spec: (  # type: ignore[misc]
                *dense_data(rows(5_000), 50, noise * 0.6, margin=0.1, seed=21),
                parse_kernel(spec))))
        out.append(("pnorm p=4", rate, lambda noise=noise: (  # type: ignore[misc]
            *dense_data(rows(20_000), 200, noise, seed=31), 4.0)))
    return out


def measure(name: str, data: tuple[Any, ...], repeat: int) -> dict[str, Any]:
    """Times (us per trial) and ratios of one case; raises AssertionError on a peer whose
    mistakes differ from the fast form's."""
    from .fast import perceptron as fp
    from .fast import pnorm_perceptron as pn

    X, y = data[0], data[1]
    T = X.shape[0]
    loops = numba_loops()
    times: dict[str, float] = {}
    peers: dict[str, Callable[[], Any]] = {}
    if name.startswith("primal"):
        def fast(engine: str = "auto") -> Any:
            return fp.primal(X, y, engine=engine)
        w = np.ones(X.shape[1])
        floor: Callable[[], Any] = lambda: X @ w  # noqa: E731
        peers["np loop"] = lambda: numpy_loop(X, y)
        if loops:
            peers["numba loop"] = (lambda: loops["csr"](X, y)) if sp.issparse(X) else (
                lambda: loops["dense"](X, y))
        fit = sklearn_perceptron(X, y)
        if fit is not None:
            peers["sklearn"] = fit
    elif name.startswith("dual"):
        kern = data[2]

        def fast(engine: str = "auto") -> Any:
            return fp.dual(X, y, kernel=kern, engine=engine)
        support = sorted(set(fast().updates))
        floor = lambda: kern.matrix(X, X[support])  # noqa: E731
        peers["np loop"] = lambda: numpy_dual_loop(X, y, kern)
        if loops:
            peers["numba loop"] = lambda: loops["dual"](X, y, kern)
    else:
        p = data[2]

        def fast(engine: str = "auto") -> Any:
            return pn.primal(X, y, p=p, engine=engine)
        w = np.ones(X.shape[1])
        floor = lambda: X @ w  # noqa: E731
        peers["np loop"] = lambda: numpy_pnorm_loop(X, y, p)
        if loops:
            peers["numba loop"] = lambda: loops["pnorm"](X, y, p)
    fast()  # compile outside the timings
    times["fast"], trace = best_time(fast, repeat)
    times["numpy"], numpy_trace = best_time(lambda: fast("numpy"), max(1, repeat - 1))
    assert numpy_trace.mistakes == trace.mistakes, f"{name}: numpy engine differs"
    times["floor"], _ = best_time(floor, repeat + 2)
    for peer, fn in peers.items():
        fn()  # compile (numba) outside the timings
        times[peer], out = best_time(fn, 1 if peer == "np loop" else repeat)
        if isinstance(out, list):
            assert out == trace.mistakes, f"{name}: {peer} makes other mistakes"
        else:  # scikit-learn reports no mistakes: its weights must be the fast form's
            assert np.allclose(out.coef_.ravel(), trace.final["w"], rtol=1e-9, atol=1e-9), \
                f"{name}: {peer} ends with other weights"
    ratios = {"fast/floor": times["fast"] / times["floor"]}
    for peer in ("numpy", *peers):
        ratios[f"fast/{peer}"] = times["fast"] / times[peer]
    return {"rows": T, "update_rate": len(trace.updates) / T,
            "us_per_trial": {k: v / T * 1e6 for k, v in times.items()}, "ratios": ratios}


def run_all(size: float = 1.0, repeat: int = 3, only: str | None = None,
            out: Any = sys.stdout) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, rate, make in cases(size):
        if only and only not in name:
            continue
        row = measure(name, make(), repeat)
        results[f"{name} @ {rate}"] = row
        if out is not None:
            print(format_row(f"{name} @ {rate}", row), file=out, flush=True)
    return results


COLUMNS = ("fast", "numpy", "floor", "sklearn", "np loop", "numba loop")


def header() -> str:
    return (f"{'case':<22}{'rows':>8}{'upd':>7} | "
            + "".join(f"{c:>11}" for c in COLUMNS)
            + " | fast/floor  /sklearn  /np loop  /numba")


def format_row(key: str, row: dict[str, Any]) -> str:
    us, r = row["us_per_trial"], row["ratios"]

    def cell(value: float | None, width: int, digits: int) -> str:
        return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"
    return (f"{key:<22}{row['rows']:>8}{row['update_rate']:>7.2%} | "
            + "".join(cell(us.get(c), 11, 3) for c in COLUMNS)
            + " | " + cell(r.get("fast/floor"), 10, 2) + cell(r.get("fast/sklearn"), 10, 2)
            + cell(r.get("fast/np loop"), 10, 3) + cell(r.get("fast/numba loop"), 8, 2))


def compare(run: dict[str, Any], baseline: dict[str, Any], margin: float
            ) -> tuple[list[str], list[str]]:
    """(failures, notes): a ratio worse than the baseline's by more than ``margin``."""
    failures, notes = [], []
    for key in sorted(set(run) | set(baseline)):
        if key not in run or key not in baseline:
            notes.append(f"{key}: only in the {'run' if key in run else 'baseline'}")
            continue
        for ratio, value in run[key]["ratios"].items():
            base = baseline[key]["ratios"].get(ratio)
            if base is None:
                notes.append(f"{key}: {ratio} not in the baseline")
            elif value > margin * base:
                failures.append(f"{key}: {ratio} {value:.3f} > {margin} x baseline {base:.3f}")
    return failures, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perceptron_oracle.benchmarks",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=1.0,
                        help="fraction of the full row counts (default 1)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--only", help="only the cases whose name contains this text")
    parser.add_argument("--json", help="write the results (times and ratios) to this file")
    parser.add_argument("--compare", metavar="BASELINE",
                        help="fail when a ratio is worse than this baseline's by --margin")
    parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                        help=f"allowed worsening factor (default {DEFAULT_MARGIN})")
    args = parser.parse_args(argv)
    if args.size <= 0 or args.repeat < 1 or args.margin < 1:
        print("error: --size must be > 0, --repeat >= 1, --margin >= 1", file=sys.stderr)
        return 2
    baseline = None
    if args.compare:
        try:
            with open(args.compare, encoding="utf-8") as handle:
                baseline = json.load(handle)["results"]
        except (OSError, ValueError, KeyError) as exc:
            print(f"error: {args.compare}: not a benchmark baseline ({exc})", file=sys.stderr)
            return 2
    print(header(), flush=True)
    results = run_all(args.size, args.repeat, args.only)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"size": args.size, "results": results}, handle, indent=1)
    if baseline is not None:
        failures, notes = compare(results, baseline, args.margin)
        for line in notes:
            print(f"note: {line}")
        for line in failures:
            print(f"WORSE: {line}")
        print(f"{len(failures)} ratio(s) worse than the baseline by more than {args.margin}x")
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
