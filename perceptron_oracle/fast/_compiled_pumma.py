"""The compiled per-trial loops (numba, optional) of PUMMA's primal form (``fast.pumma``),
p = 2 and p > 2, hard and soft margin.

One trial at a time in machine code: a dot product per trial (a vectorised loop over a dense
row, a gather over the stored entries of a CSR row) and, at an update, problem (3) (with the
soft margin, (24)) solved and w moved in place, then the bias (20) recomputed.

p = 2: the closed forms (15)/(19) exactly as ``fast.pumma``'s numpy path does through
``fast.maximum_margin.step2`` with z = x_pos - x_neg and c = 2 (the residual form of D; the
forms themselves compiled without reassociation).  An update makes two or three passes over w
(z formed with ||z||^2 and w.z; the residual in case (ii); the move with the new ||w||^2 and
the pair's two scores); for dense X and the hard margin the loop calls one helper per pass
(``dense_pair``, ``hard_step``, ``dense_move``), each a single loop, so that numba prunes its
reference counts on the arrays (a function looping over them several times keeps them: six
locked operations per update; ``fast._numba_pumma.pumma_primal``); with the soft margin or CSR rows
``pumma_pair_update`` makes the same passes.

p > 2 (``fast._numba_pumma.pumma_pnorm_primal``): ``fast.pumma.PNormSpace``'s pair_solve and
pair_apply (z, f^{-1}(z) by ``link_inverse``, case (i) with CASE_TIE, the infeasibility
test, case (ii) by the compiled Newton ``pumma_newton`` warm-started from the last case-(ii)
solution; theta = phi, w = f^{-1}(phi), tt = w.phi) in one helper per update
(``pnorm_update``: its reference counts cost little beside the Newton's microseconds).  When
the Newton's KKT residual exceeds NEWTON_TOLERANCE the loop stops before that update with
the pending solve in its state; ``fast.pumma._finish_pending`` runs the finishing pass in
Python (``PNormSpace._finish``, the reference's float64 Newton), applies the update with the
loop's own ``pnorm_pair_apply`` and the loop resumes at the next trial (rare: small-integer
data, p = 5/2 or 3).  Measured (``python -m perceptron_oracle.benchmarks --only "pumma
primal p=4"``, 10,000 x 100, 18% updates): about 1.05 us per trial against 6.8 for the
block-ahead driver with the compiled Newton, of which the Newton solves alone take about
1.0.

With the soft margin (both p) the coefficients a_e = y_e C xi_e are kept for the examples
that have been a pair member (``held``), so ||a||^2 and the slack part of the residual cost
O(held), not O(T).  The block-ahead driver pays a Python round trip and about a dozen small
numpy calls per update.  ``python -m perceptron_oracle.benchmarks --only "pumma primal"``
measures the loops against one ``X @ w`` pass, the plain numba loop (p = 2) and a per-trial
numpy loop.

Semantics are ``fast.pumma``'s numpy path trial for trial (SPEC.md, "romma / pumma"):
start-up from the first positive and the first negative example (score b = -1, then +1;
storing either is an update; the trial that completes the pair solves (3) with v = 0 and is
not an update when that is infeasible), then score w.x + b, a mistake iff y score <= 0, an
update iff y score + xi_j < 1 - delta, the example is not a pair member (Lemma 4: its test
is exactly 1) and the problem is feasible.  A score that is not finite stops the loop and the
caller raises the driver's ``FloatRangeError`` naming the trial, or the DataError naming a
NaN or infinity in dense X (at start-up the loop forms the row's product with w = 0 too, so
every row is checked).  Float64 rounding may differ from the numpy path (another summation
order), never the decisions outside the reference's fragile trials.

Not compiled (the numpy path runs, whatever ``engine`` asked; documented fallbacks, not
errors): the dual form with another kernel, and every shadow run: a run under
``fast.driver.forced_updates`` (``fast._compiled.choose``) and ``fast.pumma.forced_run``,
which records the update test's left side y score + xi_j beside each score (the
reference's soft-margin fragile rule reads both) and is the block-ahead driver's only.

The loops are ``fast._numba_pumma.pumma_primal`` and ``pumma_pnorm_primal`` (with the jitted
helpers they call), compiled and cached as ``fast._compiled`` says, at the first compiled
run.
"""

from __future__ import annotations

import functools
from types import ModuleType


@functools.cache
def loops() -> ModuleType:
    """The module holding the compiled loops (``pumma_primal``, ``pumma_pnorm_primal``) and
    their helpers, imported at its first call."""
    from . import _numba_pumma
    return _numba_pumma
