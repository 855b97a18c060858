"""Every fast form against its floor and its peers, each time measured in one run.

One command, every time measured in one run on one machine (ratios survive a noisy machine
better than times):

    python -m perceptron_oracle.benchmarks                       # full size, every case
    python -m perceptron_oracle.benchmarks --size 0.1            # a tenth of the rows
    python -m perceptron_oracle.benchmarks --only "ho ,sop"      # cases naming either text
    python -m perceptron_oracle.benchmarks --json run.json       # also write the ratios
    python -m perceptron_oracle.benchmarks --compare tests/benchmarks/baseline.json

Cases (rows x columns at ``--size 1``; one epoch each; the measured update rate is printed):

- ``perceptron primal dense`` 100,000 x 500 and ``perceptron primal csr`` 100,000 x 20,000
  (1% of the entries stored), ``perceptron dual poly2`` / ``rbf`` 5,000 x 50, and
  ``pnorm primal p=4`` 20,000 x 200, each at update rates near 0.1%, 3% and 25% (label
  noise);
- noisy Gaussian data (rows scaled to about unit norm, labels of a random hyperplane, a share
  flipped) near 23% mistakes: ``ho primal p=2`` and ``ho implicit p=2`` 20,000 x 200,
  ``ho implicit p=4`` 5,000 x 200 (the numpy engine's O(n k) per trial until its switch:
  20,000 rows take about a minute a run; 5,000 trials make ``engine="auto"`` compile),
  ``ho dual p=2`` 5,000 x 200 (HO_2(2/5), rho_k = c/k); ``sop primal n=100`` / ``n=500``
  10,000 rows and ``sop dual n=100`` / ``n=500`` 4,000 rows (a = 1);
- ``romma primal``, ``pumma primal p=2`` 20,000 x 100 and ``romma dual``, ``pumma dual p=2``
  5,000 x 100, ``pumma primal p=4`` 10,000 x 100 (delta = 0; separable with margin 0.1, 2%
  of the labels flipped: 10-13% updates on 20,000 rows, more on the shorter runs); the
  same 5,000 rows under the Gaussian kernel (``MARGIN_RBF``) for ``romma dual rbf`` and
  ``pumma dual p=2 rbf`` (about 40% updates: both ask for a margin of 1 in feature space);
- ALMA_p(alpha; 1/alpha, sqrt 2) (alpha in the name's ``a=``; B, C the defaults):
  ``alma primal p=2`` and ``alma primal p=10.6`` (p = 2 ln n, Gentile's choice, as in
  tests/benchmarks/test_alma_bench.py) 20,000 x 200, separable with margin 0.05, no label
  noise: at alpha = 1 (threshold 0: a correction only at a mistake) the low correction
  rates, 0.9% and 2.4%; at alpha = 0.1 (the default: a margin of (1 - alpha) B sqrt(p - 1)
  / sqrt(k) asked for) the high ones, 69% and 96%; ``alma dual p=2 rbf a=0.5`` on the
  ``MARGIN_RBF`` cases' 5,000 rows under that kernel (14% corrections).

Columns, in microseconds per trial (best of ``--repeat`` runs, of more while they add up to
less than ``MIN_SECONDS``; every path runs once before its timing, which loads numba's cache
or compiles):

- ``fast``: the fast form as shipped (``engine="auto"`` where the form has the keyword), and
  ``numpy``: its block-ahead path (``engine="numpy"``);
- ``floor``: the perceptron, p-norm, ROMMA and PUMMA primal forms: one ``X @ w`` pass over
  the data (dense: BLAS; CSR: scipy's sparse product); ``pumma primal p=4``: that pass plus
  the Newton solves of the dual (18) its updates need, the run's own problems each solved
  by the compiled solver (``fast._numba.pumma_newton``) from a compiled loop (without numba
  the pass alone); ``ho primal``, ``ho implicit p=2``
  and ``sop primal``: the bare BLAS calls one primal update needs, in place on an n x n
  matrix, times the run's mistakes K (HO: dsymv, dsyr2, dsymv; SOP: dsymv, dsyr, dsymv; so
  fast/floor is the time per mistake over the BLAS calls per mistake); ``alma primal``: one
  ``X @ w`` pass, the rows' p-norms (vectorised numpy) and the calls of one correction on
  th in place times the run's corrections (p = 2: BLAS daxpy, dnrm2, dscal; p != 2:
  daxpy and the link's two powers over n); ``ho implicit p=4``:
  the BLAS calls of one update of B kept explicitly (dgemv B x, dger, dgemv B v, dgemv
  B^T g), times K; every dual form: the T x |S| kernel block ``kernel.matrix(X, X[S])``
  against the run's final support set S, for SOP's and HO's duals plus the packed BLAS
  their bordered matrices need at each mistake k (SOP: dspmv and dspr on the k x k
  inverse; HO: dspmv on D and the two |S| x n products of g's update): their O(k^2) per
  mistake is the form's own, which the kernel block alone leaves out;
- ``sklearn``: scikit-learn's ``Perceptron`` for one epoch with eta0=1, no shuffling, no
  penalty, no intercept (the form's C = 0): it updates on y score <= 0 as the Perceptron
  here does; Perceptron primal forms only;
- ``np loop``: the algorithm as a per-trial numpy loop a user would write (one dot product
  per trial; at a mistake the update in numpy: HO's A_k in the primal representation, B_k
  explicitly for p = 4, SOP's inverse by Sherman-Morrison, ROMMA/PUMMA's closed forms,
  ALMA's correction, projection and link f^-1 (its dual: one kernel row against the support
  set per trial, ||w||^2 by Gentile's recurrence); the kernel Perceptron's loop takes one
  kernel row against the support set per trial; SOP's and HO's duals are compared with their
  dual algorithm as such a loop (one kernel row against the mistakes per trial, the bordered
  matrix in numpy); ROMMA's and PUMMA's duals, run with the linear kernel, with their dual
  algorithm as such a loop (one kernel row against the support set per trial, the closed
  forms on the coefficients); PUMMA p = 4's loop scores one trial at a time and solves each
  update with the fast form's own solver); ``numba loop``: the plain loop compiled by numba
  with scalar dot products (Perceptron, p-norm, ROMMA, PUMMA p = 2, ALMA primal: |x|^p and
  f^-1 by scalar powers); ``primal``: the fast primal form of the same algorithm on the same
  data (HO's implicit and dual rows, SOP's, ROMMA's and PUMMA's dual rows); ``primal np
  loop``: ROMMA's and PUMMA's primal numpy loops on their dual rows' data (with the linear
  kernel the dual's compiled engine is the primal's loop, and its numpy engine does |S|
  times a primal's work per trial: the kernel block, its floor, is itself slower than that
  loop). Every peer's mistakes (ROMMA/PUMMA: updates; ALMA: corrections) are checked against
  the fast form's: a difference stops the run. No outside library's ALMA is a peer: river's
  ``ALMAClassifier`` (the peers extra) runs another rule than Gentile's (x not divided by
  ||x||_p, a correction at y w.x < rather than <= the threshold, no link f^-1 at p != 2, and
  only x's coordinates of w divided by max{1, ||w||_p}), so its corrections cannot match.
- ``peak MiB``: the dual forms' tracemalloc peak during one run (shipped engine / numpy
  engine), beside the kernel cache cap ``kernels.KERNEL_CACHE_BYTES`` printed in the header.
  Numba's own allocations are not traced (the compiled loops allocate their arrays in numpy
  before the call).

Threads: the whole run holds every BLAS library loaded (numpy's, scipy's) to ``--threads``
threads through threadpoolctl (default 1: the loops and numba use one core, and a second
BLAS thread competes with them on a shared machine); the header prints what was set.

Ratios: fast/floor and fast/peer (lower is faster).  ``--compare BASELINE`` fails (exit 1)
when a ratio is worse than the baseline's by more than ``--margin`` (default 1.5: machines are
noisy); a case missing from either side is reported, not failed ("only in the run": a case
added since the baseline was written, as ALMA's rows are for tests/benchmarks/baseline.json;
"only in the baseline": a case left out by ``--only`` or removed).  Needs numba and
scikit-learn for the peer columns (a missing one is printed as "-").
"""

from __future__ import annotations

import inspect
import json
import math
import sys
import time
import tracemalloc
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from .errors import OracleInputError
from .fast import alma as fast_alma
from .interrupts import one_line
from .pnorm_float import link_inverse
from .usage import OneLineParser

MARGIN_RBF = "rbf:gamma=0.5"   # ROMMA's and PUMMA's kernel duals (the linear: the primal loop)
RATES = {"0.1%": 0.0, "3%": 0.013, "25%": 0.14}  # label-noise rates giving those update rates
DEFAULT_MARGIN = 1.5
HO_C = 0.4          # HO_2(c) with rho_k = c / k, the fast forms' default
WARM_ROWS = 2000    # paths other than the shipped one are warmed up on this many rows


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


def noisy_data(T: int, n: int, flip: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian rows scaled by 1/sqrt(n), labels of a random hyperplane, a share flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, n)) / np.sqrt(n)
    y = np.where(X @ rng.normal(size=n) >= 0, 1, -1)
    return X, np.where(rng.random(T) < flip, -y, y)


# -- numpy loops (peers) ----------------------------------------------------------------------
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
    v, w = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    mistakes = []
    for t in range(X.shape[0]):
        if y[t] * (X[t] @ w) <= 0:
            mistakes.append(t)
            v += y[t] * X[t]
            w = link_inverse(v, p)
    return mistakes


def numpy_ho_loop(X: np.ndarray, y: np.ndarray, p: float = 2.0, c: float = HO_C) -> list[int]:
    """HO_p(c), rho_k = c/k: p = 2 keeps A_k = B_k^T B_k (A -= rho (a x^T + x a^T) -
    rho^2 (x.a) x x^T, a = A x); p > 2 keeps B_k (B -= rho (B x) g(x)^T) and
    w = B^T g(B v)."""
    n = X.shape[1]
    M, v, w = np.eye(n), np.zeros(n), np.zeros(n)
    mistakes: list[int] = []
    for t in range(X.shape[0]):
        x = X[t]
        if y[t] * (x @ w) <= 0:
            mistakes.append(t)
            rho = c / len(mistakes)
            v += y[t] * x
            if p == 2.0:
                a = M @ x
                M -= rho * (np.outer(a, x) + np.outer(x, a)) - rho * rho * (x @ a) * np.outer(x, x)
                w = M @ v
            else:
                M -= rho * np.outer(M @ x, link_inverse(x, p))
                w = M.T @ link_inverse(M @ v, p)
    return mistakes


def numpy_sop_loop(X: np.ndarray, y: np.ndarray, a: float = 1.0) -> list[int]:
    """SOP: M = (a I + S S^T)^{-1} by Sherman-Morrison, u = M v, decision sign(x.u)."""
    n = X.shape[1]
    M, v, u = np.eye(n) / a, np.zeros(n), np.zeros(n)
    mistakes = []
    for t in range(X.shape[0]):
        x = X[t]
        if y[t] * (x @ u) <= 0:
            mistakes.append(t)
            z = M @ x
            M -= np.outer(z, z) / (1.0 + x @ z)
            v += y[t] * x
            u = M @ v
    return mistakes



def numpy_sop_dual_loop(X: np.ndarray, y: np.ndarray, a: float = 1.0) -> list[int]:
    """SOP's dual (linear kernel) as a per-trial numpy loop: one kernel row against the
    mistakes per trial, H = (a I + G)^{-1} bordered with numpy at each mistake."""
    S: list[int] = []
    H, coef, out = np.zeros((0, 0)), np.zeros(0), []
    for t in range(X.shape[0]):
        b = X[S] @ X[t] if S else np.zeros(0)
        if y[t] * (coef @ b) <= 0:
            out.append(t)
            h = H @ b
            d = a + X[t] @ X[t] - b @ h
            H = np.block([[H + np.outer(h, h) / d, -h[:, None] / d],
                          [-h[None, :] / d, np.array([[1 / d]])]])
            S.append(t)
            coef = H @ y[S].astype(float)
    return out


def numpy_ho_dual_loop(X: np.ndarray, y: np.ndarray, c: float = HO_C) -> list[int]:
    """HO_2(c)'s dual (linear kernel, rho_k = c/k) as a per-trial numpy loop: the score
    g.k(X_S, x), D and h bordered with numpy at each mistake."""
    S: list[int] = []
    D, h, g, out = np.zeros((0, 0)), np.zeros(0), np.zeros(0), []
    for t in range(X.shape[0]):
        kv = X[S] @ X[t] if S else np.zeros(0)
        if y[t] * (g @ kv) <= 0:
            out.append(t)
            rho, label = c / (len(S) + 1), float(y[t])
            b, kxx = D @ kv, X[t] @ X[t]
            dkk = rho * rho * (kv @ b) - 2 * rho + rho * rho * kxx
            D = np.block([[D, -rho * b[:, None]], [-rho * b[None, :], np.array([[dkk]])]])
            h = np.append(h + label * kv, y[S].astype(float) @ kv + label * kxx)
            S.append(t)
            g = y[S] + D @ h
    return out

def _romma_step(c: float, zz: float, vz: float, vv: float, resid: float
                ) -> tuple[float, float]:
    """(lambda, eta) of ROMMA's closed forms (15)/(19): w' = lambda z + eta w."""
    if vv == 0 or c * vz >= zz * vv:
        return c / zz, 0.0
    D = zz * resid
    return vv * (c - vz) / D, (zz * vv - c * vz) / D


def numpy_romma_loop(X: np.ndarray, y: np.ndarray, delta: float = 0.0) -> list[int]:
    """ROMMA(delta) per trial: update iff y w.x < 1 - delta (not twice in a row on one
    example); D = ||z||^2 ||w - (w.z/||z||^2) z||^2."""
    w = np.zeros(X.shape[1])
    updates, last = [], -1
    for t in range(X.shape[0]):
        vz = y[t] * (X[t] @ w)
        if vz >= 1 - delta or t == last:
            continue
        z = y[t] * X[t]
        zz, vv = float(z @ z), float(w @ w)
        d = w - (vz / zz) * z
        lam, eta = _romma_step(1.0, zz, vz, vv, float(d @ d))
        w = lam * z + eta * w
        updates.append(t)
        last = t
    return updates


def numpy_pumma_loop(X: np.ndarray, y: np.ndarray, delta: float = 0.0, epochs: int = 1
                     ) -> list[int]:
    """PUMMA_2(delta), hard margin: start-up from a first positive and negative example,
    then z = x_pos - x_neg, the closed forms with c = 2 and the bias (20)."""
    T = X.shape[0]
    w = np.zeros(X.shape[1])
    b, pos, neg = -1.0, -1, -1
    updates = []
    for trial in range(epochs * T):
        t = trial % T   # the example
        if pos < 0 or neg < 0:
            if (y[t] > 0 and pos < 0) or (y[t] < 0 and neg < 0):
                pos, neg = (t, neg) if y[t] > 0 else (pos, t)
                b = 1.0 if neg < 0 else -1.0
                if pos >= 0 and neg >= 0:
                    z = X[pos] - X[neg]
                    w = 2.0 * z / (z @ z)
                    b = -0.5 * (w @ X[pos] + w @ X[neg])
                updates.append(trial)
            continue
        if t in (pos, neg) or y[t] * (X[t] @ w + b) >= 1 - delta:
            continue
        pos, neg = (t, neg) if y[t] > 0 else (pos, t)
        z = X[pos] - X[neg]
        zz, vz, vv = float(z @ z), float(w @ z), float(w @ w)
        lam, eta = _romma_step(2.0, zz, vz, vv, float(vv - vz * vz / zz))
        w = lam * z + eta * w
        b = -0.5 * (w @ X[pos] + w @ X[neg])
        updates.append(trial)
    return updates


def numpy_romma_dual_loop(X: np.ndarray, y: np.ndarray, delta: float = 0.0,
                          kern: Any = None) -> list[int]:
    """ROMMA(delta)'s dual (``kern``, default linear) as a per-trial numpy loop: one kernel
    row against the support set per trial; at an update the closed forms with ||w||^2
    carried along and the residual vv - vz^2 / zz, every coefficient scaled by eta and the
    new one appended."""
    k = (kern or _linear()).matrix
    S: list[int] = []
    coef, vv, updates = np.zeros(0), 0.0, []
    for t in range(X.shape[0]):
        vz = y[t] * (coef @ k(X[S], X[t:t + 1])[:, 0]) if S else 0.0
        if vz >= 1 - delta:
            continue
        zz = float(k(X[t:t + 1], X[t:t + 1])[0, 0])
        lam, eta = _romma_step(1.0, zz, vz, vv, vv - vz * vz / zz)
        coef = np.append(eta * coef, lam * y[t])
        vv = lam * lam * zz + 2 * lam * eta * vz + eta * eta * vv
        S.append(t)
        updates.append(t)
    return updates


def numpy_pumma_dual_loop(X: np.ndarray, y: np.ndarray, delta: float = 0.0,
                          kern: Any = None) -> list[int]:
    """PUMMA_2(delta)'s dual (``kern``, default linear; hard margin, one epoch) as a
    per-trial numpy loop: one kernel row against the support set per trial, the start-up and
    the closed forms of ``numpy_pumma_loop`` on coefficients (w = sum_s coef_s phi(x_s)),
    ||w||^2 carried along."""
    kern = kern or _linear()
    k = kern.matrix
    S: list[int] = []
    coef, vv, b, pos, neg, updates = np.zeros(0), 0.0, -1.0, -1, -1, []

    def at(e: int) -> int:   # the support position of example e, appended when new
        if e not in S:
            S.append(e)
        return S.index(e)

    for t in range(X.shape[0]):
        if pos < 0 or neg < 0:
            if (y[t] > 0 and pos < 0) or (y[t] < 0 and neg < 0):
                pos, neg = (t, neg) if y[t] > 0 else (pos, t)
                b = 1.0 if neg < 0 else -1.0
                if pos >= 0 and neg >= 0:
                    zz = _pair_sq(kern, X, pos, neg)
                    coef = np.zeros(2)
                    coef[at(pos)], coef[at(neg)] = 2 / zz, -2 / zz
                    vv = 4 / zz
                    ws = coef @ k(X[S], X[[pos, neg]])
                    b = -0.5 * (ws[0] + ws[1])
                updates.append(t)
            continue
        if t in (pos, neg) or y[t] * (coef @ k(X[S], X[t:t + 1])[:, 0] + b) >= 1 - delta:
            continue
        pos, neg = (t, neg) if y[t] > 0 else (pos, t)
        zz = _pair_sq(kern, X, pos, neg)
        kz = k(X[S], X[[pos, neg]])
        vz = float(coef @ (kz[:, 0] - kz[:, 1]))
        lam, eta = _romma_step(2.0, zz, vz, vv, vv - vz * vz / zz)
        coef = np.append(eta * coef, 0.0) if t not in S else eta * coef
        coef[at(pos)] += lam
        coef[at(neg)] -= lam
        vv = lam * lam * zz + 2 * lam * eta * vz + eta * eta * vv
        ws = coef @ k(X[S], X[[pos, neg]])
        b = -0.5 * (ws[0] + ws[1])
        updates.append(t)
    return updates


def _pair_sq(kern: Any, X: np.ndarray, pos: int, neg: int) -> float:
    """||phi(x_pos) - phi(x_neg)||^2: (x_pos - x_neg)^2 for the linear kernel (no
    cancellation, as the fast dual forms it), else k(p, p) + k(n, n) - 2 k(p, n)."""
    if kern.is_linear:
        z = X[pos] - X[neg]
        return float(z @ z)
    G = kern.matrix(X[[pos, neg]], X[[pos, neg]])
    return float(G[0, 0] + G[1, 1] - 2 * G[0, 1])


def pumma_trial_loop(X: np.ndarray, y: np.ndarray, p: float, delta: float = 0.0
                     ) -> list[int]:
    """PUMMA_p one trial at a time (no block-ahead): the score w.x + b of each trial, and at
    an update the fast form's own solver (``fast.pumma``)."""
    from .fast import pumma
    model, _, X, y, _ = pumma.setup("primal", X, y, 1, "linear", dict(p=p, delta=delta))
    updates = []
    for t in range(X.shape[0]):
        margin = y[t:t + 1] * model.scores(t, t + 1)
        if model.updates_at(t, t + 1, margin)[0]:
            model.update(t)
            updates.append(t)
    return updates



def numpy_alma_loop(X: np.ndarray, y: np.ndarray, p: float, alpha: float) -> list[int]:
    """ALMA_p(alpha; 1/alpha, sqrt 2) per trial in plain numpy: a correction when
    y w.x / ||x||_p <= (1 - alpha) B sqrt(p - 1) / sqrt(k); then th += C / sqrt((p - 1) k)
    y x / ||x||_p, th / max{1, ||th||_p}, w = f^-1(th) = sign(th) |th|^(p-1) / ||th||_p^(p-2)."""
    B, C = 1.0 / alpha, math.sqrt(2.0)
    norms = np.sum(np.abs(X) ** p, axis=1) ** (1.0 / p)
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    theta, w = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    k, corrections = 1, []
    for t in range(X.shape[0]):
        if y[t] * (X[t] @ w) * inv[t] <= (1.0 - alpha) * B * math.sqrt(p - 1.0) / math.sqrt(k):
            theta += C / (math.sqrt(p - 1.0) * math.sqrt(k)) * float(y[t]) * inv[t] * X[t]
            N = float(np.sum(np.abs(theta) ** p)) ** (1.0 / p)
            if N > 1.0:
                theta /= N
                N = 1.0
            w = np.sign(theta) * np.abs(theta) ** (p - 1.0) / N ** (p - 2.0)
            k += 1
            corrections.append(t)
    return corrections


def numpy_alma_dual_loop(X: np.ndarray, y: np.ndarray, kern: Any, alpha: float
                         ) -> list[int]:
    """ALMA_2(alpha; 1/alpha, sqrt 2)'s dual per trial: one kernel row against the support
    set (x^ = phi(x) / sqrt(k(x, x))), ||w||^2 by Gentile's recurrence, reset to 1 after a
    projection."""
    B, C = 1.0 / alpha, math.sqrt(2.0)
    kn = np.sqrt(np.maximum(np.asarray(kern.diagonal(X), dtype=np.float64), 0.0))
    inv = np.divide(1.0, kn, out=np.zeros_like(kn), where=kn > 0)
    S: list[int] = []
    a, ww, k, corrections = np.zeros(0), 0.0, 1, []
    for t in range(X.shape[0]):
        s = float(a @ (kern.matrix(X[S], X[t:t + 1])[:, 0] * inv[S])) * inv[t] if S else 0.0
        if y[t] * s > (1.0 - alpha) * B / math.sqrt(k):
            continue
        eta, label = C / math.sqrt(k), float(y[t])
        if kn[t] > 0:
            S.append(t)
            a = np.append(a, eta * label)
            ww += 2.0 * eta * label * s + eta * eta
        if ww > 1.0:
            a /= math.sqrt(ww)
            ww = 1.0
        k += 1
        corrections.append(t)
    return corrections

# -- numba loops (peers) ----------------------------------------------------------------------
# Plain Python here, compiled by numba.njit (cache=True) at the first numba_loops() call.
def _nb_dense(X: Any, y: Any, flags: Any) -> None:
    w = np.zeros(X.shape[1])
    for t in range(X.shape[0]):
        s = 0.0
        for i in range(X.shape[1]):
            s += X[t, i] * w[i]
        if y[t] * s <= 0:
            flags[t] = 1
            for i in range(X.shape[1]):
                w[i] += y[t] * X[t, i]


def _nb_csr(ptr: Any, idx: Any, val: Any, n: int, y: Any, flags: Any) -> None:
    w = np.zeros(n)
    for t in range(y.shape[0]):
        s = 0.0
        for k in range(ptr[t], ptr[t + 1]):
            s += val[k] * w[idx[k]]
        if y[t] * s <= 0:
            flags[t] = 1
            for k in range(ptr[t], ptr[t + 1]):
                w[idx[k]] += y[t] * val[k]


def _nb_kernel_dual(X: Any, rbf: bool, gamma: float, y: Any, flags: Any) -> None:
    support = np.zeros(X.shape[0], dtype=np.int64)
    S = 0
    for t in range(X.shape[0]):
        score = 0.0
        for s in range(S):
            i = support[s]
            d = 0.0
            for f in range(X.shape[1]):
                d += (X[i, f] - X[t, f]) ** 2 if rbf else X[i, f] * X[t, f]
            score += y[i] * (np.exp(-gamma * d) if rbf else (gamma * d + 1.0) ** 2)
        if y[t] * score <= 0:
            flags[t] = 1
            support[S] = t
            S += 1


def _nb_pnorm(X: Any, p: float, y: Any, flags: Any) -> None:
    n = X.shape[1]
    v, w = np.zeros(n), np.zeros(n)
    for t in range(X.shape[0]):
        s = 0.0
        for i in range(n):
            s += X[t, i] * w[i]
        if y[t] * s <= 0:
            flags[t] = 1
            norm = 0.0
            for i in range(n):
                v[i] += y[t] * X[t, i]
                norm += abs(v[i]) ** p
            norm = norm ** ((p - 2.0) / p)
            for i in range(n):
                w[i] = np.sign(v[i]) * abs(v[i]) ** (p - 1.0) / norm


def _nb_romma(X: Any, threshold: float, y: Any, flags: Any) -> None:
    n = X.shape[1]
    w = np.zeros(n)
    last = -1
    for t in range(X.shape[0]):
        vz = 0.0
        for i in range(n):
            vz += X[t, i] * w[i]
        vz *= y[t]
        if vz >= threshold or t == last:
            continue
        zz, vv, res = 0.0, 0.0, 0.0
        for i in range(n):
            zz += X[t, i] * X[t, i]
            vv += w[i] * w[i]
        lam, eta = 1.0 / zz, 0.0
        if vv != 0 and vz < zz * vv:
            for i in range(n):
                res += (w[i] - vz / zz * y[t] * X[t, i]) ** 2
            lam, eta = vv * (1 - vz) / (zz * res), (zz * vv - vz) / (zz * res)
        for i in range(n):
            w[i] = eta * w[i] + lam * y[t] * X[t, i]
        flags[t] = 1
        last = t


def _nb_pumma(X: Any, threshold: float, y: Any, flags: Any) -> None:
    n = X.shape[1]
    w, z = np.zeros(n), np.zeros(n)
    b, pos, neg = -1.0, -1, -1
    for t in range(X.shape[0]):
        if pos < 0 or neg < 0:
            if (y[t] > 0 and pos < 0) or (y[t] < 0 and neg < 0):
                flags[t] = 1
                pos, neg = (t, neg) if y[t] > 0 else (pos, t)
                b = 1.0 if neg < 0 else -1.0
                if pos < 0 or neg < 0:
                    continue
            else:
                continue
        else:
            s = b
            for i in range(n):
                s += X[t, i] * w[i]
            if t == pos or t == neg or y[t] * s >= threshold:
                continue
            flags[t] = 1
            pos, neg = (t, neg) if y[t] > 0 else (pos, t)
        zz, vz, vv = 0.0, 0.0, 0.0
        for i in range(n):
            z[i] = X[pos, i] - X[neg, i]
            zz += z[i] * z[i]
            vz += w[i] * z[i]
            vv += w[i] * w[i]
        lam, eta = 2.0 / zz, 0.0
        if vv != 0 and 2.0 * vz < zz * vv:
            D = zz * (vv - vz * vz / zz)
            lam, eta = vv * (2.0 - vz) / D, (zz * vv - 2.0 * vz) / D
        b = 0.0
        for i in range(n):
            w[i] = lam * z[i] + eta * w[i]
            b -= 0.5 * w[i] * (X[pos, i] + X[neg, i])



def _nb_alma(X: Any, p: float, alpha: float, y: Any, flags: Any) -> None:
    n = X.shape[1]
    theta, w = np.zeros(n), np.zeros(n)
    B, C, k = 1.0 / alpha, np.sqrt(2.0), 1
    for t in range(X.shape[0]):
        nx, s = 0.0, 0.0
        for i in range(n):
            nx += abs(X[t, i]) ** p
            s += X[t, i] * w[i]
        nx = nx ** (1.0 / p)
        if nx == 0.0 or y[t] * s / nx > (1.0 - alpha) * B * np.sqrt(p - 1.0) / np.sqrt(k):
            continue
        flags[t] = 1
        step = C / (np.sqrt(p - 1.0) * np.sqrt(k)) * y[t] / nx
        N = 0.0
        for i in range(n):
            theta[i] += step * X[t, i]
            N += abs(theta[i]) ** p
        N = N ** (1.0 / p)
        if N > 1.0:
            for i in range(n):
                theta[i] /= N
            N = 1.0
        for i in range(n):
            w[i] = np.sign(theta[i]) * abs(theta[i]) ** (p - 1.0) / N ** (p - 2.0)
        k += 1

_NUMBA: dict[str, Callable[..., Any]] = {}


def numba_loops() -> dict[str, Callable[..., Any]]:
    """The plain numba loops by name, each returning the trials it flagged (mistakes, or
    updates for ROMMA/PUMMA, corrections for ALMA); empty without numba."""
    if _NUMBA:
        return _NUMBA
    try:
        import numba
    except ImportError:
        return _NUMBA
    def compiled(fn: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, error_model="numpy")(fn)
        except RuntimeError:  # no writable cache location: compile in this process only
            return numba.njit(error_model="numpy")(fn)
    jit = {name: compiled(fn) for name, fn in (
        ("dense", _nb_dense), ("csr", _nb_csr), ("dual", _nb_kernel_dual),
        ("pnorm", _nb_pnorm), ("romma", _nb_romma), ("pumma", _nb_pumma),
        ("alma", _nb_alma))}

    def flagged(name: str, y: np.ndarray, *args: Any) -> list[int]:
        flags = np.zeros(len(y), dtype=np.uint8)
        jit[name](*args, y.astype(np.float64), flags)
        out: list[int] = np.flatnonzero(flags).tolist()
        return out

    _NUMBA.update(
        dense=lambda X, y: flagged("dense", y, X),
        csr=lambda X, y: flagged("csr", y, X.indptr, X.indices, X.data, X.shape[1]),
        dual=lambda X, y, kern: flagged("dual", y, X, kern.name == "rbf", float(kern.gamma)),
        pnorm=lambda X, y, p: flagged("pnorm", y, X, p),
        romma=lambda X, y, delta: flagged("romma", y, X, 1.0 - delta),
        pumma=lambda X, y, delta: flagged("pumma", y, X, 1.0 - delta),
        alma=lambda X, y, p, alpha: flagged("alma", y, X, p, alpha),
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


# -- floors -----------------------------------------------------------------------------------
def blas_update_floor(X: np.ndarray, updates: int, kind: str) -> None:
    """The bare BLAS calls of ``updates`` primal updates on an n x n matrix in place
    (scipy.linalg.blas): "ho" dsymv, dsyr2, dsymv; "sop" dsymv, dsyr, dsymv; "ho-b" (B
    explicit) dgemv B x, dger, dgemv B v, dgemv B^T g."""
    from scipy.linalg import blas
    n = X.shape[1]
    M = np.asfortranarray(np.eye(n))
    v = X[0].copy()
    for i in range(updates):
        x = X[i % X.shape[0]]
        if kind == "ho-b":
            a = blas.dgemv(1.0, M, x)
            blas.dger(-1e-3, a, x, a=M, overwrite_a=1)
            blas.dgemv(1.0, M, blas.dgemv(1.0, M, v), trans=1)
            continue
        z = blas.dsymv(1.0, M, x)
        if kind == "ho":
            blas.dsyr2(-1e-3, x, z, a=M, overwrite_a=1)
        else:
            blas.dsyr(-1.0 / (1.0 + float(x @ z)), z, a=M, overwrite_a=1)
        blas.dsymv(1.0, M, v)


def kernel_block_floor(X: Any, kern: Any, trace: Any) -> Callable[[], Any]:
    """The T x |S| kernel block against the run's final support set."""
    support = sorted({u % X.shape[0] for u in trace.updates})
    return lambda: kern.matrix(X, X[support])


def dual_update_floor(X: np.ndarray, trace: Any, kind: str) -> Callable[[], Any]:
    """The T x |S| kernel block (linear kernel) plus the packed BLAS each mistake k of a
    bordered dual needs in place: "sop" dspmv and dspr on the k x k inverse; "ho" dspmv on
    D and the two |S| x n products of g's update (rho_k = c/k is never 0)."""
    from scipy.linalg import blas
    K = len(trace.mistakes)
    support = sorted({u % X.shape[0] for u in trace.updates})
    XS = np.ascontiguousarray(X[support])
    block = kernel_block_floor(X, _linear(), trace)

    def run() -> None:
        block()
        ap, h = np.zeros(K * (K + 1) // 2 + 1), np.ones(K + 1)
        for k in range(1, K):
            blas.dspmv(k, 1.0, ap, h)
            if kind == "sop":
                blas.dspr(k, 1e-9, h, ap, overwrite_ap=1)
            else:
                m = min(k, XS.shape[0])
                h[:m] @ XS[:m] @ X[0]
    return run


def matvec_floor(X: Any) -> Callable[[], Any]:
    """One X @ w pass over the data."""
    w = np.ones(X.shape[1])
    return lambda: X @ w


def alma_floor(X: np.ndarray, p: float, corrections: int) -> Callable[[], Any]:
    """One X @ w pass, the rows' p-norms (vectorised numpy), and the calls of one primal
    correction on th in place times ``corrections``: BLAS daxpy, dnrm2, dscal at p = 2; at
    p != 2 daxpy and the link's two powers over n (|th|^p for ||th||_p, |th|^(p-1) for
    f^-1(th)) with their sums and products."""
    matvec = matvec_floor(X)
    theta = np.full(X.shape[1], 1e-3)

    def run() -> None:
        matvec()
        if p == 2.0:
            np.sqrt(np.einsum("ij,ij->i", X, X))
        else:
            np.sum(np.abs(X) ** p, axis=1) ** (1.0 / p)
        for i in range(corrections):
            x = X[i % X.shape[0]]
            blas.daxpy(x, theta, a=1e-9)
            if p == 2.0:
                blas.dscal(1.0 / max(1.0, blas.dnrm2(theta)), theta)
                continue
            a = np.abs(theta)
            N = float(np.sum(a ** p)) ** (1.0 / p)
            np.sign(theta) * a ** (p - 1.0) / N ** (p - 2.0)
    return run


def newton_problems(X: np.ndarray, y: np.ndarray, p: float
                    ) -> tuple[list[tuple[Any, ...]], list[tuple[float, float]]]:
    """The dual problems (18) that PUMMA_p's case-(ii) updates solve on (X, y), in order, as
    the arguments of ``fast._numba.pumma_newton`` (z, theta, the slack scalars, ||v~||^2,
    case (i)'s alpha, p, the warm start), and the (alpha, beta) each got: recorded from a
    run of the numpy engine."""
    from .fast import pumma
    from .fast.driver import run_blocks
    model, _, X, y, _ = pumma.setup("primal", X, y, 1, "linear", dict(p=p))
    space = model.space
    solve = space._newton
    problems: list[tuple[Any, ...]] = []
    solutions: list[tuple[float, float]] = []

    def recorded(z: np.ndarray, zs: float, vs: float, ss: float, target: float,
                 alpha_i: float) -> Any:
        problems.append((z.copy(), space.theta.copy(), zs, vs, ss, target, alpha_i, p,
                         *space.last))
        out = solve(z, zs, vs, ss, target, alpha_i)
        solutions.append((out[0], out[1]))
        return out
    space._newton = recorded
    run_blocks(model, y, 1)
    return problems, solutions


def newton_floor(X: np.ndarray, y: np.ndarray, p: float) -> Callable[[], Any]:
    """One X @ w pass plus the run's Newton solves of (18) (``newton_problems``), each by
    the compiled solver alone, called from a compiled loop: the work PUMMA_p's updates need
    beyond scoring, by the project's own solver.  Without numba, the pass alone."""
    from .fast import _compiled
    from .fast.maximum_margin import SINGULAR
    from .fast.pumma import NEWTON_MAX_STEPS, NEWTON_STOP
    matvec = matvec_floor(X)
    if not _compiled.available():
        return matvec
    import numba
    newton = _compiled.kernels().pumma_newton
    problems = newton_problems(X, y, p)[0]
    Z = np.array([problem[0] for problem in problems]).reshape(len(problems), X.shape[1])
    theta = np.array([problem[1] for problem in problems]).reshape(Z.shape)
    scalars = np.array([problem[2:] for problem in problems]).reshape(len(problems), 8)

    @numba.njit
    def solves(Z: Any, theta: Any, scalars: Any, phi: Any) -> None:
        for k in range(Z.shape[0]):
            s = scalars[k]
            newton(Z[k], theta[k], s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
                   NEWTON_MAX_STEPS, NEWTON_STOP, SINGULAR, phi)

    phi = np.empty(X.shape[1])

    def run() -> None:
        matvec()
        solves(Z, theta, scalars, phi)
    return run


# -- cases ------------------------------------------------------------------------------------
Maker = Callable[[], tuple[Any, ...]]


def cases(size: float) -> list[tuple[str, str, Maker]]:
    """(case name, rate, data maker); data are (X, y[, kernel or p])."""
    from .kernels import parse_kernel

    def rows(T: int) -> int:
        return max(300, int(T * size))

    out: list[tuple[str, str, Maker]] = []
    for rate, noise in RATES.items():
        out.append(("perceptron primal dense", rate, lambda noise=noise: dense_data(  # type: ignore[misc]
            rows(100_000), 500, noise)))
        out.append(("perceptron primal csr", rate, lambda noise=noise: csr_data(  # type: ignore[misc]
            rows(100_000), 20_000, 0.01, noise)))
        for spec, name in (("poly:degree=2,coef0=1,gamma=1", "perceptron dual poly2"),
                           ("rbf:gamma=1", "perceptron dual rbf")):
            out.append((name, rate, lambda noise=noise, spec=spec: (  # type: ignore[misc]
                *dense_data(rows(5_000), 50, noise * 0.6, margin=0.1, seed=21),
                parse_kernel(spec))))
        out.append(("pnorm primal p=4", rate, lambda noise=noise: (  # type: ignore[misc]
            *dense_data(rows(20_000), 200, noise, seed=31), 4.0)))
    for name, T, n, p in (("ho primal p=2", 20_000, 200, 2.0),
                          ("ho implicit p=2", 20_000, 200, 2.0),
                          ("ho implicit p=4", 5_000, 200, 4.0),
                          ("ho dual p=2", 5_000, 200, 2.0)):
        out.append((name, "23%", lambda T=T, n=n, p=p: (  # type: ignore[misc]
            *noisy_data(rows(T), n, 0.08), p)))
    for name, T, n in (("sop primal n=100", 10_000, 100), ("sop primal n=500", 10_000, 500),
                       ("sop dual n=100", 4_000, 100), ("sop dual n=500", 4_000, 500)):
        out.append((name, "24%", lambda T=T, n=n: noisy_data(rows(T), n, 0.08)))  # type: ignore[misc]
    for name, T, rate, noise, p in (
            ("romma primal", 20_000, "10%", 0.02, 2.0),
            ("pumma primal p=2", 20_000, "13%", 0.02, 2.0),
            ("romma dual", 5_000, "10%", 0.02, 2.0),
            ("pumma dual p=2", 5_000, "13%", 0.02, 2.0),
            ("pumma primal p=4", 10_000, "16%", 0.02, 4.0)):
        out.append((name, rate, lambda T=T, noise=noise, p=p: (  # type: ignore[misc]
            *dense_data(rows(T), 100, noise, margin=0.1, seed=41), p)))
    p_ln = 2.0 * math.log(200)   # ALMA_p's p = 2 ln n (Gentile's choice; n = 200)
    for name, rate, p, noise in (("alma primal p=2 a=1", "0.9%", 2.0, 0.0),
                                 ("alma primal p=2 a=0.1", "69%", 2.0, 0.0),
                                 ("alma primal p=10.6 a=1", "2.4%", p_ln, 0.0),
                                 ("alma primal p=10.6 a=0.1", "96%", p_ln, 0.0)):
        out.append((name, rate, lambda p=p, noise=noise: (  # type: ignore[misc]
            *dense_data(rows(20_000), 200, noise, seed=51), p)))
    out.append(("alma dual p=2 rbf a=0.5", "14%", lambda: (
        *dense_data(rows(5_000), 100, 0.02, margin=0.1, seed=41), 2.0,
        parse_kernel(MARGIN_RBF))))
    for name in ("romma dual rbf", "pumma dual p=2 rbf"):
        out.append((name, "40%", lambda: (
            *dense_data(rows(5_000), 100, 0.02, margin=0.1, seed=41), 2.0,
            parse_kernel(MARGIN_RBF))))
    return out


# -- what each case measures ------------------------------------------------------------------
class Plan:
    """One case's runs: ``run(engine, X, y)`` the fast form (a Trace), ``engines`` the
    extra engines timed beside the shipped one, ``floor(trace)`` the floor's callable,
    ``peers`` name -> fn(X, y) returning mistakes (``key`` "mistakes") or updates."""

    def __init__(self, run: Callable[[str, Any, Any], Any], engines: tuple[str, ...],
                 floor: Callable[[Any], Callable[[], Any]],
                 peers: dict[str, Callable[[Any, Any], Any]], key: str = "mistakes",
                 dual: bool = False):
        self.run, self.engines, self.floor, self.peers = run, engines, floor, peers
        self.key, self.dual = key, dual


def _with_engine(fn: Callable[..., Any], **kw: Any) -> tuple[Callable[[str, Any, Any], Any],
                                                                tuple[str, ...]]:
    """The form with its keywords, and ("numpy",) when it takes ``engine``."""
    if "engine" in inspect.signature(fn).parameters:
        return (lambda engine, X, y: fn(X, y, engine=engine, **kw)), ("numpy",)
    return (lambda engine, X, y: fn(X, y, **kw)), ()


def _perceptron_plan(name: str, data: tuple[Any, ...]) -> Plan:
    from .fast import perceptron as fp
    from .fast import pnorm_perceptron as pn
    X, loops = data[0], numba_loops()
    peers: dict[str, Callable[[Any, Any], Any]] = {}
    if "dual" in name:
        kern = data[2]
        run, engines = _with_engine(fp.dual, kernel=kern)
        peers["np loop"] = lambda X, y: numpy_dual_loop(X, y, kern)
        if loops:
            peers["numba loop"] = lambda X, y: loops["dual"](X, y, kern)
        return Plan(run, engines, lambda tr: kernel_block_floor(X, kern, tr), peers, dual=True)
    if name.startswith("pnorm"):
        p = data[2]
        run, engines = _with_engine(pn.primal, p=p)
        peers["np loop"] = lambda X, y: numpy_pnorm_loop(X, y, p)
        if loops:
            peers["numba loop"] = lambda X, y: loops["pnorm"](X, y, p)
        return Plan(run, engines, lambda tr: matvec_floor(X), peers)
    run, engines = _with_engine(fp.primal)
    peers["np loop"] = numpy_loop
    if loops:
        peers["numba loop"] = loops["csr"] if sp.issparse(X) else loops["dense"]
    if sklearn_perceptron(X[:2], np.array([1, -1])) is not None:
        peers["sklearn"] = lambda X, y: sklearn_perceptron(X, y)()  # type: ignore[misc]
    return Plan(run, engines, lambda tr: matvec_floor(X), peers)


def _blas_floor(X: np.ndarray, kind: str, key: str = "mistakes"
                ) -> Callable[[Any], Callable[[], Any]]:
    return lambda tr: lambda: blas_update_floor(X, len(getattr(tr, key)), kind)


def _ho_sop_plan(name: str, data: tuple[Any, ...]) -> Plan:
    from .fast import higher_order as ho
    from .fast import second_order as sop
    X = data[0]
    if name.startswith("sop"):
        run, engines = _with_engine(sop.primal if "primal" in name else sop.dual)
        if "primal" in name:
            return Plan(run, engines, _blas_floor(X, "sop"), {"np loop": numpy_sop_loop})
        return Plan(run, engines, lambda tr: dual_update_floor(X, tr, "sop"),
                    {"np loop": numpy_sop_dual_loop,
                     "primal": lambda X, y: sop.primal(X, y).mistakes}, dual=True)
    p = data[2]
    forms: dict[str, Callable[..., Any]] = {"primal": ho.primal, "implicit": ho.implicit,
                                            "dual": ho.dual}
    run, engines = _with_engine(forms[name.split()[1]], p=p)
    peers: dict[str, Callable[[Any, Any], Any]] = {
        "np loop": numpy_ho_dual_loop if "dual" in name else lambda X, y: numpy_ho_loop(X, y, p)}
    if p == 2.0 and "primal" not in name:
        peers["primal"] = lambda X, y: ho.primal(X, y).mistakes
    if "dual" in name:
        floor = lambda tr: dual_update_floor(X, tr, "ho")  # noqa: E731
    else:
        floor = _blas_floor(X, "ho" if p == 2.0 else "ho-b")
    return Plan(run, engines, floor, peers, dual="dual" in name)


def _linear() -> Any:
    from .kernels import parse_kernel
    return parse_kernel("linear")


def _margin_plan(name: str, data: tuple[Any, ...]) -> Plan:
    from .fast import pumma, romma
    X, p = data[0], data[2]
    kern = data[3] if len(data) > 3 else _linear()
    loops = numba_loops()
    family = name.split()[0]
    form = getattr(romma if family == "romma" else pumma, name.split()[1])
    run, engines = _with_engine(form, **({} if family == "romma" else {"p": p}),
                                **({} if kern.is_linear else {"kernel": kern}))
    peers: dict[str, Callable[[Any, Any], Any]] = {}
    if p != 2.0:
        peers["np loop"] = lambda X, y: pumma_trial_loop(X, y, p)
    elif "dual" in name:
        loop = numpy_romma_dual_loop if family == "romma" else numpy_pumma_dual_loop
        peers["np loop"] = lambda X, y: loop(X, y, kern=kern)
        if kern.is_linear:
            primal = romma.primal if family == "romma" else pumma.primal
            peers["primal"] = lambda X, y: primal(X, y).updates
            peers["primal np loop"] = numpy_romma_loop if family == "romma" \
                else numpy_pumma_loop
    else:
        peers["np loop"] = numpy_romma_loop if family == "romma" else numpy_pumma_loop
        if loops and "primal" in name:
            peers["numba loop"] = lambda X, y: loops[family](X, y, 0.0)
    floor = ((lambda tr: kernel_block_floor(X, kern, tr)) if "dual" in name
             else (lambda tr: matvec_floor(X)) if p == 2.0
             else (lambda tr: newton_floor(X, data[1], p)))
    return Plan(run, engines, floor, peers, key="updates", dual="dual" in name)


def _alma_plan(name: str, data: tuple[Any, ...]) -> Plan:
    """ALMA_p(alpha; 1/alpha, sqrt 2), alpha from the name's "a=": the primal at p (peers:
    the numpy and numba loops), the dual at p = 2 under the case's kernel (peer: the numpy
    dual loop); the corrections are compared."""
    X, p = data[0], data[2]
    alpha = float(name.split("a=")[1])
    if "dual" in name:
        kern = data[3]
        run, engines = _with_engine(fast_alma.dual, kernel=kern, alpha=alpha)
        peers: dict[str, Callable[[Any, Any], Any]] = {
            "np loop": lambda X, y: numpy_alma_dual_loop(X, y, kern, alpha)}
        return Plan(run, engines, lambda tr: kernel_block_floor(X, kern, tr), peers,
                    key="updates", dual=True)
    run, engines = _with_engine(fast_alma.primal, p=p, alpha=alpha)
    peers = {"np loop": lambda X, y: numpy_alma_loop(X, y, p, alpha)}
    loops = numba_loops()
    if loops:
        peers["numba loop"] = lambda X, y: loops["alma"](X, y, p, alpha)
    return Plan(run, engines, lambda tr: alma_floor(X, p, len(tr.updates)), peers,
                key="updates")


def plan_for(name: str, data: tuple[Any, ...]) -> Plan:
    family = name.split()[0]
    if family == "alma":
        return _alma_plan(name, data)
    if family in ("perceptron", "pnorm"):
        return _perceptron_plan(name, data)
    if family in ("ho", "sop"):
        return _ho_sop_plan(name, data)
    return _margin_plan(name, data)


# -- measuring --------------------------------------------------------------------------------
#: A path whose calls are short is called until its calls add up to this many seconds (at
#: most ``MAX_CALLS`` calls), as ``timeit``'s autorange does: the best of three runs of a few
#: milliseconds moved the p-norm rows' ratios by a quarter between runs.
MIN_SECONDS = 0.25
MAX_CALLS = 50


def best_time(fn: Callable[[], Any], repeat: int, min_seconds: float = 0.0
              ) -> tuple[float, Any]:
    """The best time of at least ``repeat`` calls, more while they add up to less than
    ``min_seconds`` (up to ``MAX_CALLS``), and the last call's output."""
    best, out, spent, calls = np.inf, None, 0.0, 0
    while calls < repeat or (spent < min_seconds and calls < MAX_CALLS):
        out = None   # the previous call's output is freed before the clock starts
        start = time.perf_counter()
        out = fn()
        took = time.perf_counter() - start
        best, spent, calls = min(best, took), spent + took, calls + 1
    return best, out


def peak_mib(fn: Callable[[], Any]) -> float:
    """tracemalloc's peak (MiB) during one call."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


class Disagreement(Exception):
    """An engine or a peer made other mistakes (updates) than the fast form."""


def _check(name: str, peer: str, out: Any, trace: Any, key: str) -> None:
    """A peer must make the fast form's mistakes (scikit-learn: end with its weights)."""
    if isinstance(out, list):
        if out != getattr(trace, key):
            raise Disagreement(f"{name}: {peer} makes other {key}")
    elif not np.allclose(out.coef_.ravel(), trace.final["w"], rtol=1e-9, atol=1e-9):
        raise Disagreement(f"{name}: {peer} ends with other weights")


def _time_paths(name: str, plan: Plan, X: Any, y: np.ndarray, repeat: int,
                min_seconds: float) -> tuple[dict[str, float], Any]:
    """Times (seconds) of the shipped form, its other engines, the floor and the peers,
    each path warmed up first; the shipped form's trace."""
    warm = min(WARM_ROWS, X.shape[0])
    for engine in plan.engines:
        plan.run(engine, X[:warm], y[:warm])
    plan.run("auto", X, y)  # the shipped path on the full data (numba's cache loads here)
    times: dict[str, float] = {}
    times["fast"], trace = best_time(lambda: plan.run("auto", X, y), repeat, min_seconds)
    for engine in plan.engines:
        times[engine], other = best_time(lambda e=engine: plan.run(e, X, y),  # type: ignore[misc]
                                         max(1, repeat - 1), min_seconds)
        if getattr(other, plan.key) != getattr(trace, plan.key):
            raise Disagreement(f"{name}: engine {engine} differs")
    floor = plan.floor(trace)
    floor()
    times["floor"], _ = best_time(floor, repeat + 2, min_seconds)
    for peer, fn in plan.peers.items():
        fn(X[:warm], y[:warm])  # compile / load numba's cache outside the timings
        times[peer], out = best_time(lambda fn=fn: fn(X, y),  # type: ignore[misc]
                                     *((1, 0.0) if peer == "np loop" else (repeat, min_seconds)))
        _check(name, peer, out, trace, plan.key)
    return times, trace


def measure(name: str, data: tuple[Any, ...], repeat: int, min_seconds: float = MIN_SECONDS
            ) -> dict[str, Any]:
    """Times (us per trial), ratios and, for a dual form, peak memory of one case; raises
    Disagreement on an engine or a peer whose mistakes differ from the fast form's."""
    X, y = data[0], data[1]
    T = X.shape[0]
    plan = plan_for(name, data)
    times, trace = _time_paths(name, plan, X, y, repeat, min_seconds)
    ratios = {"fast/floor": times["fast"] / times["floor"]}
    for other in times:
        if other not in ("fast", "floor"):
            ratios[f"fast/{other}"] = times["fast"] / times[other]
    row: dict[str, Any] = {
        "rows": T, "columns": X.shape[1], "update_rate": len(trace.updates) / T,
        "us_per_trial": {k: v / T * 1e6 for k, v in times.items()}, "ratios": ratios}
    if plan.dual:
        row["peak_mib"] = {engine: peak_mib(lambda e=engine: plan.run(e, X, y))  # type: ignore[misc]
                           for engine in ("auto", *plan.engines)}
    return row


def run_all(size: float = 1.0, repeat: int = 3, only: str | None = None,
            out: Any = sys.stdout, min_seconds: float = MIN_SECONDS) -> dict[str, Any]:
    """Every case (or those whose name contains one of the comma-separated texts of
    ``only``), each printed as it finishes."""
    wanted = [w.strip() for w in only.split(",") if w.strip()] if only else []
    results: dict[str, Any] = {}
    for name, rate, make in cases(size):
        if wanted and not any(w in name for w in wanted):
            continue
        row = measure(name, make(), repeat, min_seconds)
        results[f"{name} @ {rate}"] = row
        if out is not None:
            print(format_row(f"{name} @ {rate}", row), file=out, flush=True)
    return results


# -- threads ----------------------------------------------------------------------------------
def limit_threads(threads: int) -> tuple[AbstractContextManager[Any], str]:
    """Every BLAS library loaded (numpy's, scipy's; loaded here first) held to ``threads``
    threads for the run, and a line saying what was set."""
    import scipy.linalg  # noqa: F401  (loads scipy's BLAS, so that the limit reaches it)
    try:
        import sklearn.linear_model  # noqa: F401  (its OpenMP runtime, likewise)
    except ImportError:
        pass
    try:
        from threadpoolctl import (  # type: ignore[import-untyped]
            threadpool_info,
            threadpool_limits,
        )
    except ImportError:
        return nullcontext(), "threads: not set (threadpoolctl is not installed)"
    limits = threadpool_limits(limits=threads)
    libs = ", ".join(f"{i['internal_api']} {i['num_threads']} ({i['filepath'].split('/')[-1]})"
                     for i in threadpool_info())
    return limits, f"threads: {threads} per library (threadpoolctl): {libs}"


COLUMNS = ("fast", "numpy", "floor", "sklearn", "np loop", "numba loop", "primal",
           "primal np loop")
RATIOS = ("floor", "sklearn", "np loop", "numba loop", "primal", "primal np loop")


def header() -> str:
    return (f"{'case':<30}{'rows':>7}{'cols':>6}{'upd':>7} | "
            + "".join(f"{c[:9]:>10}" for c in COLUMNS)
            + " | fast/" + "".join(f"{r[:8]:>9}" for r in RATIOS) + " | peak MiB")


def format_row(key: str, row: dict[str, Any]) -> str:
    us, r = row["us_per_trial"], row["ratios"]

    def cell(value: float | None, width: int, digits: int) -> str:
        return f"{value:>{width}.{digits}f}" if value is not None else f"{'-':>{width}}"
    peak = row.get("peak_mib")
    memory = " / ".join(f"{v:.1f}" for v in peak.values()) if peak else "-"
    return (f"{key:<30}{row['rows']:>7}{row.get('columns', 0):>6}{row['update_rate']:>7.2%} | "
            + "".join(cell(us.get(c), 10, 3) for c in COLUMNS)
            + " |      " + "".join(cell(r.get(f"fast/{c}"), 9, 3) for c in RATIOS)
            + f" | {memory}")


def legend(results: dict[str, Any]) -> list[str]:
    """What the table's floor and peak columns are, for the cases run."""
    from .kernels import KERNEL_CACHE_BYTES
    lines = ["floor: X @ w pass (perceptron, pnorm, romma/pumma primal; pumma p > 2: plus "
             "its updates' Newton solves by the compiled solver alone); BLAS calls of one "
             "update x mistakes (ho primal/implicit, sop primal: fast/floor is per mistake); "
             "X @ w pass + row p-norms + one correction's calls x corrections (alma primal); "
             "T x |S| kernel block (every dual; SOP, HO: plus the packed BLAS per mistake)"]
    if any("peak_mib" in row for row in results.values()):
        lines.append(f"peak MiB: tracemalloc peak of one run, engine auto / numpy; kernel "
                     f"cache cap KERNEL_CACHE_BYTES = {KERNEL_CACHE_BYTES / 2**20:.0f} MiB")
    return lines


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


def _parser() -> OneLineParser:
    parser = OneLineParser(prog="python -m perceptron_oracle.benchmarks",
                           description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=1.0,
                        help="fraction of the full row counts (default 1)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="best of this many runs at least")
    parser.add_argument("--min-seconds", type=float, default=MIN_SECONDS,
                        help="call a path until its calls add up to this many seconds (at "
                             f"most {MAX_CALLS} calls; default {MIN_SECONDS})")
    parser.add_argument("--only", help="only the cases whose name contains one of these "
                        "comma-separated texts")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads per library during the run (default 1)")
    parser.add_argument("--json", help="write the results (times and ratios) to this file")
    parser.add_argument("--compare", metavar="BASELINE",
                        help="fail when a ratio is worse than this baseline's by --margin")
    parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                        help=f"allowed worsening factor (default {DEFAULT_MARGIN})")
    return parser


@one_line("python -m perceptron_oracle.benchmarks")
def main(argv: list[str] | None = None) -> int:
    try:  # a usage error is one line, as the command line's are
        args = _parser().parse_args(argv)
    except OracleInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if (args.size <= 0 or args.repeat < 1 or args.margin < 1 or args.threads < 1
            or not 0 <= args.min_seconds < math.inf):
        print("error: --size must be > 0, --repeat >= 1, --margin >= 1, --threads >= 1, "
              "--min-seconds a finite number >= 0", file=sys.stderr)
        return 2
    if args.only and not any(w.strip() in name for name, _, _ in cases(1.0)
                             for w in args.only.split(",") if w.strip()):
        print(f"error: --only {args.only!r} names no case", file=sys.stderr)
        return 2
    baseline = None
    if args.compare:
        try:
            with open(args.compare, encoding="utf-8") as handle:
                baseline = json.load(handle)["results"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"error: {args.compare}: not a benchmark baseline ({exc})", file=sys.stderr)
            return 2
    limits, threads = limit_threads(args.threads)
    print(f"size {args.size}, best of {args.repeat} or more calls (short calls: until "
          f"{args.min_seconds} s); {threads}", flush=True)
    print(header(), flush=True)
    start = time.perf_counter()
    with limits:
        try:
            results = run_all(args.size, args.repeat, args.only, out=sys.stdout,
                              min_seconds=args.min_seconds)
        except Disagreement as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    for line in legend(results):
        print(line)
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"size": args.size, "repeat": args.repeat,
                       "min_seconds": args.min_seconds, "threads": args.threads,
                       "results": results}, handle, indent=1)
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
