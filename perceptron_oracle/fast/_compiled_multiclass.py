"""Compiled per-trial loops (numba, optional) for the Perceptron's K one-vs-rest learners
(``fast.multiclass.PerceptronOvR``, engine "numba").

All K learners at once:

- primal, one trial at a time: the K scores W x_t + b by one matrix-vector product (BLAS
  ``dgemv`` on the K x n weights: one pass over x_t for every learner; a CSR row: one
  gather per learner over its stored entries), then each learner's test and update in
  place;
- dual, by blocks of examples (``fast.multiclass.PerceptronOvR._dual_block``): the block's
  kernel values against the union of the support examples of all learners at its start
  and their products with the S x K coefficient matrix, two BLAS products, then
  ``ovr_dual_block`` walks the block trial by trial; an update by any learner on an
  example that is not yet a support appends it to the store and adds its kernel values to
  the rest of the block.

The K learners' scores of trial t are all computed before any of them updates on it, so each
learner sees exactly its own updates, as in K separate binary runs.  With K = 1 (two
classes) the run is the binary one's own compiled run instead (the primal's loop
``perceptron_primal``, the dual's walk ``fast.perceptron.compiled_dual_walk``), to the last
bit.  With K >= 2 the scores are the same sums in another order (BLAS's): SPEC.md section
3, they may part from the binary runs on fragile trials only.

Each loop writes per learner and trial the flags of ``fast._compiled`` (mistake, update,
blocked), keeps alpha per (example, learner) and b per learner, and stops at the first
score that is not finite (the caller raises the driver's ``FloatRangeError``).  The dual
loop also returns when its support store is full (the caller doubles it and resumes at the
trial it names).  The loops are ``fast._numba_multiclass``'s ``ovr_primal``, ``block_scores`` and
``ovr_dual_block`` (with the jitted helpers they call), compiled and cached as
``fast._compiled`` says, at the first compiled run.
"""

from __future__ import annotations

import functools
from types import ModuleType

from ._flags import DONE as DONE  # the return codes, re-exported for fast.multiclass
from ._flags import FULL_BASE as FULL_BASE


@functools.cache
def loops() -> ModuleType:
    """The module holding the compiled loops, imported at its first call."""
    from . import _numba_multiclass
    return _numba_multiclass
