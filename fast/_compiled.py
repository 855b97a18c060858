"""Compiled per-trial loops (numba, optional) for the fast Perceptron and p-norm Perceptron.

The block-ahead driver (``driver``) pays a Python round trip and a few small numpy calls per
update; it is near its floor only when updates are rarer than about 1 in 300 trials.  These
loops do one trial at a time in machine code: a dot product per trial (BLAS ``ddot`` on a
dense row, a gather over the stored entries of a CSR row), the update in place, so their cost
hardly depends on the update rate.  Measured on a 2-core machine (``perceptron_oracle.
benchmarks``): on 100,000 x 500 dense data the loop costs 0.27-0.30 us per trial at 0.2%,
3% and 33% updates, against 0.46 / 2.0 / 10.8 us for the block-ahead driver and 0.13 us for
one ``X @ w`` pass (which uses both cores; 0.26 us on one).  The loop wins at every rate
measured, so ``engine="auto"`` takes it whenever numba is installed; the block-ahead driver
stays for the numpy engine.

Semantics are the numpy forms' (``fast.perceptron``, ``fast.pnorm_perceptron``), trial for
trial: the score is (row . w) + b, plus the lambda term; an update as in SPEC.md section 7;
a blocked trial (alpha-bound) is flagged so that the votes are counted as by the driver.  A
score that is not finite stops the loop and the caller raises the driver's
``FloatRangeError`` naming the trial (or the DataError naming a NaN or infinity in X).
Float64 rounding may differ from the numpy engine (another summation order), never the
decisions outside the reference's fragile trials.

What is not compiled, and takes the numpy path under ``engine="auto"`` (``engine="numba"``
too: these are documented fallbacks, not errors): a run under ``driver.forced_updates``
(shadow runs) and the dual form on CSR input.

numba is imported at the first compiled run only.  Every function is compiled for one
signature (float64 data, int64 counts, scipy's int32 CSR indices), with IEEE arithmetic
(``error_model="numpy"``: a division by zero gives inf or NaN as in numpy, and the overflow
report follows).  ``cache=True`` is used when numba can write a cache (next to this file, or
its user-wide cache directory); a read-only install without either compiles at each process
start (about 2 s for the three loops), which was checked with a read-only copy of the package
and a read-only home directory.
"""

from __future__ import annotations

import importlib.util
import math
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..errors import ParamError
from .driver import in_forced_run

ENGINES = ("auto", "numpy", "numba")

#: Per-trial flags written by the loops.
MISTAKE, UPDATE, BLOCKED = 1, 2, 4

_KERNELS: Any = None


def available() -> bool:
    """True iff numba can be imported."""
    return importlib.util.find_spec("numba") is not None


def choose(engine: str, *, compiled_serves: bool = True) -> str:
    """The engine a run takes: "numpy" or "numba".

    ``engine`` is "auto" (numba when installed), "numpy" or "numba" (a ParamError when numba
    is absent).  Runs under ``forced_updates`` and runs the compiled loops do not serve
    (``compiled_serves`` false) take the numpy path whatever was asked.
    """
    if engine not in ENGINES:
        raise ParamError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "numba" and not available():
        raise ParamError("engine 'numba' needs numba, which is not installed "
                         "(python -m pip install numba)")
    if engine == "numpy" or in_forced_run() or not compiled_serves:
        return "numpy"
    return "numba" if available() else "numpy"


def kernels() -> Any:
    """The compiled loops (compiled at their first call)."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = _build()
    return _KERNELS


def split_flags(flags: np.ndarray) -> tuple[list[int], list[int], np.ndarray]:
    """Mistake trials, update trials, and per hypothesis h_k the trials the bound blocked."""
    mistakes = np.flatnonzero(flags & MISTAKE)
    updates = np.flatnonzero(flags & UPDATE)
    blocked_at = np.flatnonzero(flags & BLOCKED)
    blocked = np.bincount(np.searchsorted(updates, blocked_at), minlength=updates.size + 1)
    return mistakes.tolist(), updates.tolist(), blocked


def _jit(numba: Any, fn: Any) -> Any:
    try:
        return numba.njit(cache=True, nogil=True, error_model="numpy")(fn)
    except RuntimeError:  # no writable cache location: compile at each process start
        return numba.njit(nogil=True, error_model="numpy")(fn)


def _build() -> Any:
    """Compile the loops, each with the jitted helpers it calls as closure variables (numba
    compiles them into the loop and keys its cache on them).  numba is imported here, at the
    first compiled run."""
    import numba

    def jit(fn: Any) -> Any:
        return _jit(numba, fn)

    sparse_dot, dense_dot, kernel_value = _products(jit)
    pnorm_gradient = _pnorm_gradient(jit)
    return SimpleNamespace(
        perceptron_primal=_perceptron_primal(jit, sparse_dot),
        perceptron_dual=_perceptron_dual(jit, dense_dot, kernel_value),
        pnorm_primal=_pnorm_primal(jit, sparse_dot, pnorm_gradient),
        pnorm_gradient=pnorm_gradient)


def _products(jit: Any) -> tuple[Any, Any, Any]:
    """The compiled products: a CSR row against w, two dense rows, and a kernel value."""
    @jit
    def sparse_dot(data: Any, indices: Any, lo: int, hi: int, w: Any) -> float:
        s = 0.0
        for k in range(lo, hi):
            s += data[k] * w[indices[k]]
        return s

    @jit
    def dense_dot(a: Any, b: Any, n: int) -> float:
        a0 = a1 = a2 = a3 = 0.0
        k = 0
        while k + 4 <= n:
            a0 += a[k] * b[k]
            a1 += a[k + 1] * b[k + 1]
            a2 += a[k + 2] * b[k + 2]
            a3 += a[k + 3] * b[k + 3]
            k += 4
        s = (a0 + a1) + (a2 + a3)
        while k < n:
            s += a[k] * b[k]
            k += 1
        return s

    @jit
    def kernel_value(kind: int, degree: int, gamma: float, coef0: float, dot: float,
                     sq_a: float, sq_b: float) -> float:
        if kind == 0:
            return dot
        if kind == 1:
            base = gamma * dot + coef0
            out = base
            for _ in range(degree - 1):
                out *= base
            return out
        sq = sq_a + sq_b - 2.0 * dot
        if sq < 0.0:
            sq = 0.0
        return math.exp(-gamma * sq)

    return sparse_dot, dense_dot, kernel_value


def _perceptron_primal(jit: Any, sparse_dot: Any) -> Any:
    """The Perceptron's primal loop (``fast.perceptron``'s primal form)."""
    @jit
    def perceptron_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool,
                          y: Any, epochs: int, eta: float, C: float, tau: float,
                          lam_terms: Any, use_lam: bool, bound: int, w: Any, alpha: Any,
                          state: Any, flags: Any, scores: Any, record: bool) -> int:
        """state = [b, bad score]; returns the first trial with a non-finite score, or -1."""
        T = y.shape[0]
        b = state[0]
        etaC = eta * C
        for e in range(epochs):
            base = e * T
            for j in range(T):
                t = base + j
                if sparse:
                    s = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
                else:
                    s = np.dot(X[j], w)
                s += b
                if use_lam:
                    if alpha[j] > 0:
                        s += lam_terms[j]
                    else:
                        s += 0.0
                if not math.isfinite(s):
                    state[0] = b
                    state[1] = s
                    return t
                if record:
                    scores[t] = s
                label = y[j]
                margin = label * s
                f = MISTAKE if margin <= 0 else 0
                if margin <= tau:
                    if bound < 0 or alpha[j] < bound:
                        f |= UPDATE
                        step = eta * label
                        if sparse:
                            for k in range(indptr[j], indptr[j + 1]):
                                w[indices[k]] += step * data[k]
                        else:
                            row = X[j]
                            for i in range(w.shape[0]):
                                w[i] += step * row[i]
                        alpha[j] += 1
                        b += etaC * label
                    else:
                        f |= BLOCKED
                flags[t] = f
        state[0] = b
        return -1

    return perceptron_primal


def _perceptron_dual(jit: Any, dense_dot: Any, kernel_value: Any) -> Any:
    """The Perceptron's dual loop (``fast.perceptron``'s dual form, dense X)."""
    @jit
    def perceptron_dual(X: Any, sq: Any, y: Any, epochs: int, kind: int, degree: int,
                        gamma: float, coef0: float, eta: float, C: float, tau: float,
                        lam_terms: Any, use_lam: bool, bound: int, alpha: Any, slot: Any,
                        support: Any, coef: Any, state: Any, flags: Any, scores: Any,
                        record: bool) -> int:
        """The score of trial t is sum_s coef_s k(x_s, x_t) over the support examples
        (kernel values computed on the fly) + b (+ the lambda term).  state = [b, bad
        score, support size]; returns the first trial with a non-finite score, or -1."""
        T, n = X.shape
        b = state[0]
        etaC = eta * C
        S = int(state[2])
        for t in range(epochs * T):
            j = t % T
            x = X[j]
            acc = 0.0
            for s in range(S):
                i = support[s]
                d = dense_dot(X[i], x, n)
                acc += coef[s] * kernel_value(kind, degree, gamma, coef0, d, sq[i], sq[j])
            score = acc + b
            if use_lam:
                if alpha[j] > 0:
                    score += lam_terms[j]
                else:
                    score += 0.0
            if not math.isfinite(score):
                state[0] = b
                state[1] = score
                state[2] = S
                return t
            if record:
                scores[t] = score
            label = y[j]
            margin = label * score
            f = MISTAKE if margin <= 0 else 0
            if margin <= tau:
                if bound < 0 or alpha[j] < bound:
                    if slot[j] < 0:
                        slot[j] = S
                        support[S] = j
                        S += 1
                    f |= UPDATE
                    alpha[j] += 1
                    b += etaC * label
                    coef[slot[j]] = eta * alpha[j] * label
                else:
                    f |= BLOCKED
            flags[t] = f
        state[0] = b
        state[2] = S
        return -1

    return perceptron_dual


def _pnorm_gradient(jit: Any) -> Any:
    """w = g(v), the gradient of ||v||_p^2 / 2 (``fast.pnorm_perceptron``), in place."""
    @jit
    def pnorm_gradient(v: Any, p: float, w: Any) -> None:
        n = v.shape[0]
        if p == 2.0:
            for i in range(n):
                w[i] = v[i]
            return
        largest = 0.0
        for i in range(n):
            a = abs(v[i])
            if a > largest:
                largest = a
        if largest == 0.0:
            for i in range(n):
                w[i] = 0.0
            return
        scale = math.ldexp(1.0, math.frexp(largest)[1])
        total = 0.0
        for i in range(n):
            ti = abs(v[i]) / scale
            pw = ti ** (p - 1.0)
            w[i] = pw
            total += pw * ti
        factor = scale / total ** ((p - 2.0) / p)
        for i in range(n):
            w[i] = math.copysign(w[i], v[i]) * factor

    return pnorm_gradient


def _pnorm_primal(jit: Any, sparse_dot: Any, pnorm_gradient: Any) -> Any:
    """The p-norm Perceptron's loop (``fast.pnorm_perceptron``)."""
    @jit
    def pnorm_primal(X: Any, indptr: Any, indices: Any, data: Any, sparse: bool, y: Any,
                     epochs: int, p: float, v: Any, w: Any, state: Any, flags: Any,
                     scores: Any, record: bool) -> int:
        T = y.shape[0]
        for e in range(epochs):
            base = e * T
            for j in range(T):
                t = base + j
                if sparse:
                    s = sparse_dot(data, indices, indptr[j], indptr[j + 1], w)
                else:
                    s = np.dot(X[j], w)
                if not math.isfinite(s):
                    state[1] = s
                    return t
                if record:
                    scores[t] = s
                label = y[j]
                if label * s <= 0:
                    flags[t] = MISTAKE | UPDATE
                    if sparse:
                        for k in range(indptr[j], indptr[j + 1]):
                            v[indices[k]] += label * data[k]
                    else:
                        row = X[j]
                        for i in range(v.shape[0]):
                            v[i] += label * row[i]
                    pnorm_gradient(v, p, w)
        return -1

    return pnorm_primal


def csr_parts(X: Any) -> tuple[Any, Any, Any, Any, bool]:
    """(dense X or a 1 x 1 dummy, indptr, indices, data, sparse) for the primal loops."""
    import scipy.sparse as sp

    if sp.issparse(X):  # scipy's own index arrays (int32 unless the matrix is huge): no copy
        return np.zeros((1, 1)), X.indptr, X.indices, X.data, True
    empty_i, empty_f = np.zeros(1, dtype=np.int32), np.zeros(1)
    return X, empty_i, empty_i, empty_f, False
