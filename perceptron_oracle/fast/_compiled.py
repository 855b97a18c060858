"""Compiled loops (numba, optional) for the fast Perceptron and p-norm Perceptron.

The block-ahead driver (``driver``) pays a Python round trip and a few small numpy calls per
update; it is near its floor only when updates are rarer than about 1 in 300 trials.  These
loops do one trial at a time in machine code: a dot product per trial (BLAS ``ddot`` on a
dense row, a gather over the stored entries of a CSR row), the update in place, so their cost
hardly depends on the update rate.  Measured on a 2-core machine (``perceptron_oracle.
benchmarks``): on 100,000 x 500 dense data the loop costs 0.27-0.30 us per trial at 0.2%,
3% and 33% updates, against 0.46 / 2.0 / 10.8 us for the block-ahead driver and 0.13 us for
one ``X @ w`` pass (which uses both cores; 0.26 us on one).  The loop wins at every rate
measured, so ``engine="auto"`` takes it whenever numba is installed; the block-ahead driver
stays for the numpy engine.  (Figures from when the loop was introduced;
BENCHMARKS.md has the current ones.)  The kernel Perceptron's dual is not a per-trial loop
but a walk over blocks of kernel values (``fast.perceptron._compiled_dual``, SPEC.md 11.7).

Semantics are the numpy forms' (``fast.perceptron``, ``fast.pnorm_perceptron``), trial for
trial: the score is (row . w) + b, plus the lambda term; an update as in SPEC.md section 11;
a blocked trial (alpha-bound) is flagged so that the votes are counted as by the driver.  A
score that is not finite stops the loop and the caller raises the driver's
``FloatRangeError`` naming the trial (or the DataError naming a NaN or infinity in X).
Float64 rounding may differ from the numpy engine (another summation order), never the
decisions outside the reference's fragile trials.

What is not compiled, and takes the numpy path under ``engine="auto"`` (``engine="numba"``
too: these are documented fallbacks, not errors): a run under ``driver.forced_updates``
(shadow runs), the Perceptron's dual and ROMMA's kernel dual on CSR input, and PUMMA's
kernel dual (with the linear kernel both duals run their primal's loop).

This module is the numba-free front that every compiled family shares (engine choice, the
flags, the CSR parts, the overflow report); the loops themselves are module-level functions
of one module per family (``fast._numba_perceptron`` and ``fast._numba_pnorm`` here,
``perceptron_loops`` and ``pnorm_loops``; ``fast._compiled_romma``, ``fast._compiled_pumma``
and ``fast._compiled_multiclass`` front theirs) on the shared base ``fast._numba``
(``kernels``), which import numba and are imported at the first compiled run only.  The slots
of the state arrays they share with their callers are named in ``fast._slots``.  Every function is
compiled for one signature (float64 data, int64 counts, scipy's int32 CSR indices), with IEEE
arithmetic (``error_model="numpy"``: a division by zero gives inf or NaN as in numpy, and the
overflow report follows).  ``cache=True`` is used when numba can write a cache (next to
the loops' modules, or its user-wide cache directory): a new process loads the loops from it
(``fast._numba`` says why they must call each other as globals for that).  A read-only
install without either compiles at each process start, without error.
"""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..data import check_finite_rows
from ..errors import ParamError
from ..kernels import COMPILED_GAUSSIAN, Kernel
from ._flags import BLOCKED as BLOCKED  # re-exported: fast.multiclass
from ._flags import MISTAKE as MISTAKE  # re-exported: fast.multiclass
from ._flags import TINY_SQUARES as TINY_SQUARES  # re-exported: fast.romma, fast.pumma
from ._flags import UPDATE as UPDATE  # re-exported: fast.multiclass, fast.romma
from .driver import float_range_error, in_forced_run

ENGINES = ("auto", "numpy", "numba")


def available() -> bool:
    """True iff numba can be imported."""
    return importlib.util.find_spec("numba") is not None


def choose(engine: str, *, compiled_serves: bool = True, kernel: Kernel | None = None) -> str:
    """The engine a run takes: "numpy" or "numba".

    ``engine`` is "auto" (numba when installed), "numpy" or "numba" (a ParamError when numba
    is absent, or when ``kernel`` has no compiled evaluation: ``Kernel.compiled`` None).
    Runs under ``forced_updates``, runs the compiled loops do not serve (``compiled_serves``
    false) and runs with such a kernel take the numpy path whatever was asked.
    """
    if engine not in ENGINES:
        raise ParamError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "numba" and not available():
        raise ParamError("engine 'numba' needs numba, which is not installed "
                         "(python -m pip install numba)")
    if kernel is not None and kernel.compiled is None:
        if engine == "numba":
            raise ParamError(f"engine 'numba': kernel {kernel.spec} has no compiled "
                             "evaluation (use engine 'numpy' or 'auto')")
        return "numpy"
    if engine == "numpy" or in_forced_run() or not compiled_serves:
        return "numpy"
    return "numba" if available() else "numpy"


@functools.cache
def kernels() -> ModuleType:
    """The shared base of the compiled loops, ``fast._numba`` (the kernel duals' blocks,
    ``link_inverse``, ``weighted_rows``, ...): imported (and numba with it) at the first
    compiled run; each function is compiled, or loaded from numba's cache, at its first
    call.  Kept after the first call: an import statement costs about 3 us, and the kernel
    duals' block walks ask for the module once per block.  Imported here, not at the top:
    numba is the optional extra ``fast``.  The families' loops are in their own modules
    (``perceptron_loops``, ``pnorm_loops`` and the other fronts' ``loops``)."""
    from . import _numba
    return _numba


@functools.cache
def perceptron_loops() -> ModuleType:
    """The Perceptron's compiled loops, ``fast._numba_perceptron`` (``perceptron_primal``,
    ``perceptron_dual_block``), imported at the first call (``kernels``)."""
    from . import _numba_perceptron
    return _numba_perceptron


@functools.cache
def pnorm_loops() -> ModuleType:
    """The p-norm Perceptron's compiled loop, ``fast._numba_pnorm`` (``pnorm_primal``),
    imported at the first call (``kernels``)."""
    from . import _numba_pnorm
    return _numba_pnorm


def kernel_code(kern: Kernel) -> tuple[int, int, float, float]:
    """A kernel as the compiled loops take it (``Kernel.compiled``): (kind: ``COMPILED_DOT``,
    ``COMPILED_POLYNOMIAL`` or ``COMPILED_GAUSSIAN``; degree, gamma, coef0), a plain tuple.
    The runs ask only for a kernel ``choose`` gave the compiled engine."""
    code = kern.compiled
    if code is None:
        raise ParamError(f"kernel {kern.spec} has no compiled evaluation")
    return (code.kind, code.degree, code.gamma, code.coef0)


def kernel_norms(X: np.ndarray, kern: Kernel) -> np.ndarray:
    """The rows' squared norms as ``kernel_block`` and the dual walks take them: a kernel
    that reads them (``Kernel.needs_sqnorms``: the Gaussian) alone; zeros under the others
    (a pass over X saved)."""
    return np.einsum("ij,ij->i", X, X) if kern.needs_sqnorms else np.zeros(X.shape[0])


def kernel_block(A: np.ndarray, sq_a: np.ndarray, B: np.ndarray, lo: int, hi: int,
                 sq_b: np.ndarray, kind: int, degree: int, gamma: float,
                 coef0: float) -> np.ndarray:
    """k(a, b) for the rows a of A (squared norms sq_a) against the rows lo .. hi-1 of B
    (squared norms sq_b, indexed as B), as (len(A), hi - lo): the dot products by one numpy
    product (BLAS ``dgemm``), then ``fast._numba.kernel_value``'s formula
    (``dual_block_kernel``; ``kind`` a ``kernels.COMPILED_*`` code, the Gaussian's exp
    numpy's vectorised exp).  The compiled kernel duals' blocks (Perceptron, ROMMA)."""
    Kt: np.ndarray = np.matmul(A, B[lo:hi].T)
    kernels().dual_block_kernel(sq_b, lo, hi, sq_a, A.shape[0], kind, degree, gamma, coef0,
                                Kt)
    if kind == COMPILED_GAUSSIAN:
        np.exp(Kt, out=Kt)
    return Kt


def raise_if_bad(bad: int, T: int, score: float, X: Any = None, offset: int = 0) -> None:
    """A loop's report of a score that is not finite at trial ``bad`` (-1: none), as the
    block-ahead driver makes it: the DataError naming a NaN or infinity in X (dense, or the
    stored entries of CSR) when X is given (a loop that scores every row is the finiteness
    check of X), else the driver's ``FloatRangeError`` for trial ``offset + bad`` (example
    ``bad % T``)."""
    if bad < 0:
        return
    if X is not None:
        check_finite_rows(X.data if sp.issparse(X) else X)
    raise float_range_error(offset + int(bad), int(bad) % T, float(score))


def split_flags(flags: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mistake trials, update trials, and per hypothesis h_k the trials the bound blocked
    (the flag tests made boolean first: numpy finds the nonzero entries of a boolean array
    about 4 times faster than those of a uint8 one)."""
    mistakes = np.flatnonzero((flags & MISTAKE) != 0)
    updates = np.flatnonzero((flags & UPDATE) != 0)
    blocked_at = np.flatnonzero((flags & BLOCKED) != 0)
    blocked = np.bincount(np.searchsorted(updates, blocked_at), minlength=updates.size + 1)
    return mistakes, updates, blocked


def csr_parts(X: Any) -> tuple[Any, Any, Any, Any, bool]:
    """(dense X or a 1 x 1 dummy, indptr, indices, data, sparse) for the primal loops."""
    if sp.issparse(X):  # scipy's own index arrays (int32 unless the matrix is huge): no copy
        return np.zeros((1, 1)), X.indptr, X.indices, X.data, True
    empty_i, empty_f = np.zeros(1, dtype=np.int32), np.zeros(1)
    return X, empty_i, empty_i, empty_f, False


def hypothesis_tally(n: int) -> np.ndarray:
    """The 2 x n x 2 array in which the compiled Perceptron primal loop builds the averaged
    and the longest survivor's w during the run
    (``fast._numba_perceptron.perceptron_primal``): [0] per coordinate the averaged w_i and
    the vote count at its last fold (``fold_and_add``), [1] the longest survivor's w_i
    (column 0) and the examples of the updates since it was saved (column 1, the first of
    them; ``save_survivor``)."""
    return np.zeros((2, n, 2))


#: The compiled Perceptron primal builds the averaged w during the run once this many
#: updates have come at one trial in 8 or more; before, and in runs with rarer updates, from
#: the update history (``fast._numba_perceptron.catch_up``).  Measured on 100,000 x 20,000
#: CSR rows: at 3% updates a fold in the loop costs about 2 us per update (the tally's lines
#: fall out of cache between updates), a pass over the updated rows afterwards 0.6.
FOLD_FROM = 64


def update_history(trials: int) -> np.ndarray:
    """Room for the compiled Perceptron primal's update history (example, votes before): it
    records an update only before its switch, so fewer than FOLD_FROM or one trial in 8."""
    return np.zeros((trials // 8 + FOLD_FROM + 1, 2), dtype=np.int64)
