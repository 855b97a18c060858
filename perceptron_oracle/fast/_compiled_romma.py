"""The compiled per-trial loop (numba, optional) of ROMMA's primal form (``fast.romma``), and
the compiled blocks of its kernel dual (below).

One trial at a time in machine code: a dot product per trial (a vectorised loop over a dense
row, its sum reassociated; a gather over the stored entries of a CSR row) and, at an update,
problem (2) solved by the closed forms (15)/(19) exactly as ``fast.maximum_margin.step2`` does
(the residual form of D; the forms themselves compiled without reassociation), w rescaled and
moved in place.  The block-ahead driver pays a Python round trip and a dozen small numpy calls
per update (about 5 us at 100 features); the loop pays three passes over the row and w at an
update (||z||^2, the residual, the new w with its norm), written out in one function for dense
X (``romma_dense_update``), so its cost hardly depends on the update rate.
``python -m perceptron_oracle.benchmarks --only "romma primal"`` measures it against one
``X @ w`` pass and the plain numba loop.

Semantics are ``fast.romma``'s numpy path trial for trial (SPEC.md 14.7): score w.x; a
mistake iff y score <= 0; an update iff y score < 1 - delta, the example is not the last
updated one (Lemma 4: its margin is exactly 1), and problem (2) is feasible.  v.z is the
trial's margin y (w.x) (the same number in exact arithmetic; the numpy path forms w.z
anew).  A score that is not finite stops the loop and the caller raises the driver's
``FloatRangeError`` naming the trial, or the DataError naming a NaN or infinity in X: a
row holding one scores NaN or infinity whatever w is, so the loop is the finiteness check
of dense X.  Float64 rounding may differ from the numpy engine (another summation order),
never the decisions outside the reference's fragile trials.

The loop is ``fast._numba_romma.romma_primal`` (with the jitted helpers it calls), compiled and
cached as ``fast._compiled`` says, at the first compiled run.

The dual form with a non-linear kernel on dense X is not a per-trial loop but a walk over
blocks of kernel values (``fast.romma._dual_compiled``, ``fast._numba_romma.romma_dual_block``;
SPEC.md 14.7): one product gives a block's kernel values against the support of its start,
the walk scores its trials in turn, solves an update by the dual's closed forms (``v.z`` the
margin, ``||v||^2`` carried, D by ``||z||^2 ||v||^2 - (v.z)^2`` against ``SINGULAR``), and
folds the update into the block's later scores.  It makes the windows' decisions, with its
own rounding.  ``python -m perceptron_oracle.benchmarks --only "romma dual rbf"`` measures it
against the T x |S| kernel block.
"""

from __future__ import annotations

import functools
from types import ModuleType


@functools.cache
def loops() -> ModuleType:
    """The module holding the compiled loops (``romma_primal``, ``romma_dual_block``),
    imported at its first call."""
    from . import _numba_romma
    return _numba_romma
