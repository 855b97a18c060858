"""The benchmark command's cases, declared as data: one :class:`Benchmark` per case, one tuple
of them per family (``PERCEPTRON``, ``PNORM_PERCEPTRON``, ``HIGHER_ORDER``, ``SECOND_ORDER``,
``ROMMA``, ``PUMMA``, ``ALMA``; each family's declaration says ``benchmarks=<its tuple>``),
and what the cases are made of: the data makers, the floors and the peers (numpy loops, numba
loops, scikit-learn).  ``python -m perceptron_oracle.benchmarks`` (``benchmarks``) reads the
cases from the registry, times them and checks the peers; this module sits below the
families and imports neither the registry nor any command.  numba and scikit-learn are
optional extras, imported where they are used (a peer that needs one is an :class:`Extra`).

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

Floors (``Benchmark.floor``):

- the perceptron, p-norm, ROMMA and PUMMA primal forms: one ``X @ w`` pass over the data
  (dense: BLAS; CSR: scipy's sparse product); ``pumma primal p=4``: that pass plus the
  Newton solves of the dual (18) its updates need, the run's own problems each solved by the
  compiled solver (``fast._numba_pumma.pumma_newton``) from a compiled loop (without numba the pass
  alone);
- ``ho primal``, ``ho implicit p=2`` and ``sop primal``: the bare BLAS calls one primal
  update needs, in place on an n x n matrix, times the run's mistakes K (HO: dsymv, dsyr2,
  dsymv; SOP: dsymv, dsyr, dsymv; so fast/floor is the time per mistake over the BLAS calls
  per mistake); ``ho implicit p=4``: the BLAS calls of one update of B kept explicitly (dgemv
  B x, dger, dgemv B v, dgemv B^T g), times K;
- ``alma primal``: one ``X @ w`` pass, the rows' p-norms (vectorised numpy) and the calls of
  one correction on th in place times the run's corrections (p = 2: BLAS daxpy, dnrm2,
  dscal; p != 2: daxpy and the link's two powers over n);
- every dual form: the T x |S| kernel block ``kernel.matrix(X, X[S])`` against the run's
  final support set S, for SOP's and HO's duals plus the packed BLAS their bordered matrices
  need at each mistake k (SOP: dspmv and dspr on the k x k inverse; HO: dspmv on D and the
  two |S| x n products of g's update): their O(k^2) per mistake is the form's own, which the
  kernel block alone leaves out.

Peers (``Benchmark.peers``):

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
  update with the fast form's own solver);
- ``numba loop``: the plain loop compiled by numba with scalar dot products (Perceptron,
  p-norm, ROMMA, PUMMA p = 2, ALMA primal: |x|^p and f^-1 by scalar powers);
- ``primal``: the fast primal form of the same algorithm on the same data (HO's implicit and
  dual rows, SOP's, ROMMA's and PUMMA's dual rows);
- ``primal np loop``: ROMMA's and PUMMA's primal numpy loops on their dual rows' data (with
  the linear kernel the dual's compiled engine is the primal's loop, and its numpy engine
  does |S| times a primal's work per trial: the kernel block, its floor, is itself slower
  than that loop).

Every peer's mistakes (ROMMA/PUMMA: updates; ALMA: corrections; ``Benchmark.key``) are
checked against the fast form's.  No outside library's ALMA is a peer: river's
``ALMAClassifier`` (the peers extra) runs another rule than Gentile's (x not divided by
||x||_p, a correction at y w.x < rather than <= the threshold, no link f^-1 at p != 2, and
only x's coordinates of w divided by max{1, ||w||_p}), so its corrections cannot match.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from .datasets import separable, with_label_noise
from .fast import _compiled, _compiled_pumma, pumma
from .fast import higher_order as fast_ho
from .fast import romma as fast_romma
from .fast import second_order as fast_sop
from .fast.driver import run_blocks
from .fast.maximum_margin import SINGULAR
from .fast.pumma import NEWTON_MAX_STEPS, NEWTON_STOP
from .kernels import GaussianKernel, Kernel, PolynomialKernel, parse_kernel
from .pnorm_float import link_inverse

__all__ = ["Benchmark", "Extra", "PERCEPTRON", "PNORM_PERCEPTRON", "HIGHER_ORDER",
           "SECOND_ORDER", "ROMMA", "PUMMA", "ALMA"]

MARGIN_RBF = "rbf:gamma=0.5"   # ROMMA's and PUMMA's kernel duals (the linear: the primal loop)
POLY2 = "poly:degree=2,coef0=1,gamma=1"   # the kernel Perceptron's cases
RBF = "rbf:gamma=1"
RATES = {"0.1%": 0.0, "3%": 0.013, "25%": 0.14}  # label-noise rates giving those update rates
HO_C = 0.4          # HO_2(c) with rho_k = c / k, the fast forms' default


# -- data -------------------------------------------------------------------------------------
def dense_data(T: int, n: int, noise: float, margin: float = 0.05, seed: int = 11
               ) -> tuple[np.ndarray, np.ndarray]:
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


def _nb_dual_kernel(kern: Kernel) -> tuple[bool, float]:
    """``_nb_kernel_dual``'s two kernels, (rbf, gamma): the Gaussian, or (gamma x.z + 1)^2."""
    if isinstance(kern, GaussianKernel):
        return True, float(kern.gamma)
    assert isinstance(kern, PolynomialKernel) and kern.degree == 2 and kern.coef0 == 1
    return False, float(kern.gamma)


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
        dual=lambda X, y, kern: flagged("dual", y, X, *_nb_dual_kernel(kern)),
        pnorm=lambda X, y, p: flagged("pnorm", y, X, p),
        romma=lambda X, y, delta: flagged("romma", y, X, 1.0 - delta),
        pumma=lambda X, y, delta: flagged("pumma", y, X, 1.0 - delta),
        alma=lambda X, y, p, alpha: flagged("alma", y, X, p, alpha),
    )
    return _NUMBA


def sklearn_perceptron(X: Any, y: np.ndarray) -> Callable[[], Any] | None:
    try:
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
    the arguments of ``fast._numba_pumma.pumma_newton`` (z, theta, the slack scalars, ||v~||^2,
    case (i)'s alpha, p, the warm start), and the (alpha, beta) each got: recorded from a
    run of the numpy engine."""
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
    matvec = matvec_floor(X)
    if not _compiled.available():
        return matvec
    import numba
    newton = _compiled_pumma.loops().pumma_newton
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




def _linear() -> Any:
    return parse_kernel("linear")


# -- the declaration --------------------------------------------------------------------------
Data = tuple[Any, np.ndarray]
"""A case's data: X (dense or CSR) and the labels y."""
PeerRun = Callable[[Any, np.ndarray], Any]
"""A peer's run on (X, y): the trials it flagged (mistakes or updates), or an estimator with
``coef_`` (scikit-learn's, compared on its final weights)."""
Floor = Callable[[Any, np.ndarray, Any], Callable[[], Any]]
"""A floor: from (X, y, the fast run's trace), the callable timed as the floor."""


@dataclass(frozen=True)
class Extra:
    """A peer that needs an optional extra (numba, scikit-learn): ``make()`` returns its
    run, or None when the extra is not installed (its column is then printed as absent)."""

    make: Callable[[], PeerRun | None]


@dataclass(frozen=True)
class Benchmark:
    """One case of the benchmark command, declared as data.

    ``name``: the row's name; ``"<name> @ <rate>"`` keys the row in the output, in --json and
    in tests/benchmarks/baseline.json.  ``rate``: the update rate the data are made for, as
    printed.  ``data(size)``: (X, y) at ``size`` times the full row count.  The fast form
    timed is the declaring family's form ``form``, run with ``kernel`` (spec text) and the
    keywords ``params`` (and ``engine``, "auto" and "numpy", when the form takes it).
    ``floor(X, y, trace)``: the floor's callable, built from the fast run's trace (None: no
    floor; the floor and ratio columns are printed as absent).  ``peers``: name -> run(X, y)
    (a :data:`PeerRun`) or an :class:`Extra` for a peer that needs an optional extra; each
    peer's result is checked against the trace's ``key`` ("mistakes" or "updates").
    ``dual``: the case's memory is measured (tracemalloc peak of one run per engine).
    """

    name: str
    rate: str
    data: Callable[[float], Data]
    form: str
    params: Mapping[str, Any] = field(default_factory=dict)
    kernel: str = "linear"
    floor: Floor | None = None
    peers: Mapping[str, PeerRun | Extra] = field(default_factory=dict)
    key: Literal["mistakes", "updates"] = "mistakes"
    dual: bool = False

    def __post_init__(self) -> None:
        if not self.name or " @ " in self.name:
            raise ValueError(f"a benchmark's name is non-empty text without ' @ ', "
                             f"not {self.name!r}")
        if self.key not in ("mistakes", "updates"):
            raise ValueError(f"benchmark {self.name}: key is 'mistakes' or 'updates', "
                             f"not {self.key!r}")

    @property
    def label(self) -> str:
        """The row's key: ``"<name> @ <rate>"``."""
        return f"{self.name} @ {self.rate}"

    def peer_runs(self) -> dict[str, PeerRun]:
        """The peers that can run here, in their declared order (an :class:`Extra` whose
        extra is missing left out)."""
        runs: dict[str, PeerRun] = {}
        for name, peer in self.peers.items():
            run = peer.make() if isinstance(peer, Extra) else peer
            if run is not None:
                runs[name] = run
        return runs


# -- the pieces the cases are made of ---------------------------------------------------------
def rows(T: int, size: float) -> int:
    """A case's row count at ``size`` (``T`` at size 1; at least 300)."""
    return max(300, int(T * size))


def sized_dense(T: int, n: int, noise: float, size: float, margin: float = 0.05,
                seed: int = 11) -> Data:
    return dense_data(rows(T, size), n, noise, margin=margin, seed=seed)


def sized_csr(T: int, n: int, density: float, noise: float, size: float) -> Data:
    return csr_data(rows(T, size), n, density, noise)


def sized_noisy(T: int, n: int, flip: float, size: float) -> Data:
    return noisy_data(rows(T, size), n, flip)


def floor_matvec(X: Any, y: np.ndarray, trace: Any) -> Callable[[], Any]:
    return matvec_floor(X)


def floor_blas(kind: str, X: np.ndarray, y: np.ndarray, trace: Any) -> Callable[[], Any]:
    """``blas_update_floor`` of ``kind`` times the run's mistakes."""
    return lambda: blas_update_floor(X, len(trace.mistakes), kind)


def floor_dual_update(kind: str, X: np.ndarray, y: np.ndarray, trace: Any
                      ) -> Callable[[], Any]:
    return dual_update_floor(X, trace, kind)


def floor_kernel_block(spec: str, X: Any, y: np.ndarray, trace: Any) -> Callable[[], Any]:
    return kernel_block_floor(X, parse_kernel(spec), trace)


def floor_alma(p: float, X: np.ndarray, y: np.ndarray, trace: Any) -> Callable[[], Any]:
    return alma_floor(X, p, len(trace.updates))


def floor_newton(p: float, X: np.ndarray, y: np.ndarray, trace: Any) -> Callable[[], Any]:
    return newton_floor(X, y, p)


def numba_peer(name: str, *args: Any) -> Extra:
    """The plain numba loop ``name`` of ``numba_loops`` as a peer, given ``args`` after
    (X, y); absent without numba."""
    def make() -> PeerRun | None:
        loops = numba_loops()
        if not loops:
            return None
        loop = loops[name]
        return lambda X, y: loop(X, y, *args)
    return Extra(make)


def sklearn_fit(X: Any, y: np.ndarray) -> Any:
    """scikit-learn's Perceptron fitted for one epoch (``sklearn_perceptron``)."""
    fit = sklearn_perceptron(X, y)
    if fit is None:
        raise ImportError("scikit-learn is not installed")
    return fit()


def _sklearn_peer() -> PeerRun | None:
    return sklearn_fit if sklearn_perceptron(np.eye(2), np.array([1, -1])) is not None \
        else None


SKLEARN = Extra(_sklearn_peer)


def ho_primal_mistakes(X: np.ndarray, y: np.ndarray) -> list[int]:
    mistakes: list[int] = fast_ho.primal(X, y).mistakes
    return mistakes


def sop_primal_mistakes(X: np.ndarray, y: np.ndarray) -> list[int]:
    mistakes: list[int] = fast_sop.primal(X, y).mistakes
    return mistakes


def romma_primal_updates(X: np.ndarray, y: np.ndarray) -> list[int]:
    updates: list[int] = fast_romma.primal(X, y).updates
    return updates


def pumma_primal_updates(X: np.ndarray, y: np.ndarray) -> list[int]:
    updates: list[int] = pumma.primal(X, y).updates
    return updates


# -- the cases, one tuple per family ----------------------------------------------------------
def _perceptron() -> tuple[Benchmark, ...]:
    out: list[Benchmark] = []
    for rate, noise in RATES.items():
        out.append(Benchmark(
            "perceptron primal dense", rate, partial(sized_dense, 100_000, 500, noise),
            "primal", floor=floor_matvec,
            peers={"np loop": numpy_loop, "numba loop": numba_peer("dense"),
                   "sklearn": SKLEARN}))
        out.append(Benchmark(
            "perceptron primal csr", rate, partial(sized_csr, 100_000, 20_000, 0.01, noise),
            "primal", floor=floor_matvec,
            peers={"np loop": numpy_loop, "numba loop": numba_peer("csr"),
                   "sklearn": SKLEARN}))
        for spec, name in ((POLY2, "perceptron dual poly2"), (RBF, "perceptron dual rbf")):
            kern = parse_kernel(spec)
            out.append(Benchmark(
                name, rate, partial(sized_dense, 5_000, 50, noise * 0.6, margin=0.1, seed=21),
                "dual", kernel=spec, floor=partial(floor_kernel_block, spec),
                peers={"np loop": partial(numpy_dual_loop, kernel=kern),
                       "numba loop": numba_peer("dual", kern)},
                dual=True))
    return tuple(out)


PERCEPTRON = _perceptron()

PNORM_PERCEPTRON = tuple(
    Benchmark("pnorm primal p=4", rate, partial(sized_dense, 20_000, 200, noise, seed=31),
              "primal", params={"p": 4.0}, floor=floor_matvec,
              peers={"np loop": partial(numpy_pnorm_loop, p=4.0),
                     "numba loop": numba_peer("pnorm", 4.0)})
    for rate, noise in RATES.items())

HIGHER_ORDER = (
    Benchmark("ho primal p=2", "23%", partial(sized_noisy, 20_000, 200, 0.08), "primal",
              params={"p": 2.0}, floor=partial(floor_blas, "ho"),
              peers={"np loop": partial(numpy_ho_loop, p=2.0)}),
    Benchmark("ho implicit p=2", "23%", partial(sized_noisy, 20_000, 200, 0.08), "implicit",
              params={"p": 2.0}, floor=partial(floor_blas, "ho"),
              peers={"np loop": partial(numpy_ho_loop, p=2.0), "primal": ho_primal_mistakes}),
    Benchmark("ho implicit p=4", "23%", partial(sized_noisy, 5_000, 200, 0.08), "implicit",
              params={"p": 4.0}, floor=partial(floor_blas, "ho-b"),
              peers={"np loop": partial(numpy_ho_loop, p=4.0)}),
    Benchmark("ho dual p=2", "23%", partial(sized_noisy, 5_000, 200, 0.08), "dual",
              params={"p": 2.0}, floor=partial(floor_dual_update, "ho"),
              peers={"np loop": numpy_ho_dual_loop, "primal": ho_primal_mistakes},
              dual=True),
)

SECOND_ORDER = (
    *(Benchmark(f"sop primal n={n}", "24%", partial(sized_noisy, 10_000, n, 0.08), "primal",
                floor=partial(floor_blas, "sop"), peers={"np loop": numpy_sop_loop})
      for n in (100, 500)),
    *(Benchmark(f"sop dual n={n}", "24%", partial(sized_noisy, 4_000, n, 0.08), "dual",
                floor=partial(floor_dual_update, "sop"),
                peers={"np loop": numpy_sop_dual_loop, "primal": sop_primal_mistakes},
                dual=True)
      for n in (100, 500)),
)

_MARGIN_20K = partial(sized_dense, 20_000, 100, 0.02, margin=0.1, seed=41)
_MARGIN_10K = partial(sized_dense, 10_000, 100, 0.02, margin=0.1, seed=41)
_MARGIN_5K = partial(sized_dense, 5_000, 100, 0.02, margin=0.1, seed=41)

ROMMA = (
    Benchmark("romma primal", "10%", _MARGIN_20K, "primal", floor=floor_matvec,
              peers={"np loop": numpy_romma_loop, "numba loop": numba_peer("romma", 0.0)},
              key="updates"),
    Benchmark("romma dual", "10%", _MARGIN_5K, "dual",
              floor=partial(floor_kernel_block, "linear"),
              peers={"np loop": partial(numpy_romma_dual_loop, kern=_linear()),
                     "primal": romma_primal_updates, "primal np loop": numpy_romma_loop},
              key="updates", dual=True),
    Benchmark("romma dual rbf", "40%", _MARGIN_5K, "dual", kernel=MARGIN_RBF,
              floor=partial(floor_kernel_block, MARGIN_RBF),
              peers={"np loop": partial(numpy_romma_dual_loop,
                                        kern=parse_kernel(MARGIN_RBF))},
              key="updates", dual=True),
)

PUMMA = (
    Benchmark("pumma primal p=2", "13%", _MARGIN_20K, "primal", params={"p": 2.0},
              floor=floor_matvec,
              peers={"np loop": numpy_pumma_loop, "numba loop": numba_peer("pumma", 0.0)},
              key="updates"),
    Benchmark("pumma dual p=2", "13%", _MARGIN_5K, "dual", params={"p": 2.0},
              floor=partial(floor_kernel_block, "linear"),
              peers={"np loop": partial(numpy_pumma_dual_loop, kern=_linear()),
                     "primal": pumma_primal_updates, "primal np loop": numpy_pumma_loop},
              key="updates", dual=True),
    Benchmark("pumma primal p=4", "16%", _MARGIN_10K, "primal", params={"p": 4.0},
              floor=partial(floor_newton, 4.0),
              peers={"np loop": partial(pumma_trial_loop, p=4.0)}, key="updates"),
    Benchmark("pumma dual p=2 rbf", "40%", _MARGIN_5K, "dual", params={"p": 2.0},
              kernel=MARGIN_RBF, floor=partial(floor_kernel_block, MARGIN_RBF),
              peers={"np loop": partial(numpy_pumma_dual_loop,
                                        kern=parse_kernel(MARGIN_RBF))},
              key="updates", dual=True),
)

_P_LN = 2.0 * math.log(200)   # ALMA_p's p = 2 ln n (Gentile's choice; n = 200)

ALMA = (
    *(Benchmark(name, rate, partial(sized_dense, 20_000, 200, 0.0, seed=51), "primal",
                params={"p": p, "alpha": alpha}, floor=partial(floor_alma, p),
                peers={"np loop": partial(numpy_alma_loop, p=p, alpha=alpha),
                       "numba loop": numba_peer("alma", p, alpha)},
                key="updates")
      for name, rate, p, alpha in (("alma primal p=2 a=1", "0.9%", 2.0, 1.0),
                                   ("alma primal p=2 a=0.1", "69%", 2.0, 0.1),
                                   ("alma primal p=10.6 a=1", "2.4%", _P_LN, 1.0),
                                   ("alma primal p=10.6 a=0.1", "96%", _P_LN, 0.1))),
    Benchmark("alma dual p=2 rbf a=0.5", "14%", _MARGIN_5K, "dual", kernel=MARGIN_RBF,
              params={"alpha": 0.5}, floor=partial(floor_kernel_block, MARGIN_RBF),
              peers={"np loop": partial(numpy_alma_dual_loop, kern=parse_kernel(MARGIN_RBF),
                                        alpha=0.5)},
              key="updates", dual=True),
)
