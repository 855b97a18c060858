"""The slots of the small float64 arrays a compiled loop and its caller share: each loop's
``state`` (filled by the caller, read and written by the loop, read back by the caller) and
the arrays of constants some loops read (``consts``, ``limits``, ``kernel``).  Part of the
fixed protocol between the loops (``fast._numba`` and the ``fast._numba_*`` family modules)
and their fronts, as the flags of ``fast._flags``: a module of constants only, without numba,
imported by both sides, so that a caller need not import numba for them.  The loops read the
slots as compile-time constants.  ``*_SIZE`` is an array's length.

numba does not see a change here in the loops it cached (``fast._numba`` says why):
``fast._numba.purge_stale_cache`` deletes them when this file changes.
"""

from __future__ import annotations

# -- the Perceptron (``fast._numba_perceptron``; fast.perceptron, fast.multiclass) ------------
# perceptron_primal's state, and perceptron_dual_block's (slots 0 .. 2).
PERCEPTRON_B = 0             # the bias b: the start's in, the end's out
PERCEPTRON_BAD_SCORE = 1     # out: the score that was not finite (when the loop stops at one)
PERCEPTRON_VOTES = 2         # primal, out: the votes cast (trials neither updated nor blocked)
PERCEPTRON_LONGEST = 3       # primal, out: the index k of the longest survivor h_k
PERCEPTRON_SUPPORTS = 2      # dual block walk, in and out: the support examples so far (S)
PERCEPTRON_STATE_SIZE = 4

# -- the p-norm Perceptron (``fast._numba_pnorm``; fast.pnorm_perceptron) ---------------------
# pnorm_primal's state.
PNORM_MISTAKES = 0           # out: the mistakes made (their trials at the front of mistakes)
PNORM_BAD_SCORE = 1          # out: the score that was not finite
PNORM_STATE_SIZE = 2

# -- ROMMA (``fast._numba_romma``; fast.romma) -------------------------------------------------
# romma_primal's state.
ROMMA_LAST = 0               # in and out: the last updated example (-1: none)
ROMMA_BAD_SCORE = 1          # out: the score that was not finite
ROMMA_MISTAKES = 2           # out: the mistakes made (their trials at the front of mistakes)
ROMMA_UPDATES = 3            # out: the updates made (their trials at the front of updates)
ROMMA_STATE_SIZE = 4

# romma_dual_block's state.
ROMMA_DUAL_LAST = 0          # in and out: the last updated example (-1: none)
ROMMA_DUAL_BAD_SCORE = 1     # out: the score that was not finite
ROMMA_DUAL_SUPPORTS = 2      # in and out: the support's size S
ROMMA_DUAL_VV = 3            # in and out: ||w||^2, carried from update to update
ROMMA_DUAL_NEXT = 4          # out: the example after the walk's last (where the next starts)
ROMMA_DUAL_STALE = 5         # in and out: updates since ||w||^2 was last computed afresh
ROMMA_DUAL_STATE_SIZE = 6

# romma_dual_block's limits (an int64 array).
ROMMA_DUAL_MAX_FOLDS = 0     # the walk stops after this many updates in its block
ROMMA_DUAL_REFRESH = 1       # ... or after max(this, S) updates since ||w||^2 was fresh
ROMMA_DUAL_LIMITS_SIZE = 2

# -- a kernel as the kernel duals' loops take it (``fast._compiled.kernel_code``) --------------
KERNEL_KIND = 0              # 0 linear, 1 polynomial, 2 Gaussian (``kernels.COMPILED_*``)
KERNEL_DEGREE = 1            # the polynomial's degree
KERNEL_GAMMA = 2             # gamma
KERNEL_COEF0 = 3             # the polynomial's coef0
KERNEL_SIZE = 4

# -- PUMMA (``fast._numba_pumma``; fast.pumma) -------------------------------------------------
# pumma_primal's state (slots 0 .. 6), and pumma_pnorm_primal's (all).
PUMMA_POS = 0                # in and out: the stored positive example (-1: none yet)
PUMMA_NEG = 1                # in and out: the stored negative example (-1: none yet)
PUMMA_B = 2                  # in and out: the bias b
PUMMA_BAD_SCORE = 3          # out: the score (start-up: the row product) that was not finite
PUMMA_MISTAKES = 4           # out (p > 2: in and out): the mistakes made so far
PUMMA_UPDATES = 5            # out (p > 2: in and out): the updates made so far
PUMMA_HELD = 6               # in and out: how many examples are held (soft margin's a)
PUMMA_STATE_SIZE = 7
PUMMA_TT = 7                 # p > 2, in and out: tt = w.theta = ||theta||_p^2
PUMMA_LAST0 = 8              # p > 2, in and out: the Newton's warm start, alpha
PUMMA_LAST1 = 9              # p > 2, in and out: the Newton's warm start, beta
PUMMA_PENDING_TRIAL = 10     # p > 2, out: the trial of an unfinished Newton (-1: none)
PUMMA_PENDING_POS = 11       # p > 2, out: that update's positive example
PUMMA_PENDING_NEG = 12       # p > 2, out: that update's negative example
PUMMA_ALPHA = 13             # p > 2, out: the last solve's alpha (x0)
PUMMA_BETA = 14              # p > 2, out: the last solve's beta (x1)
PUMMA_ZS = 15                # p > 2, out: the last solve's ||E||^2 / C (0: hard margin)
PUMMA_VS = 16                # p > 2, out: the last solve's xi'_pos + xi'_neg
PUMMA_SS = 17                # p > 2, out: the last solve's C ||xi'||^2
PUMMA_TARGET = 18            # p > 2, out: the last solve's ||v~||^2
PUMMA_PNORM_STATE_SIZE = 19

# pumma_pnorm_primal's consts: the tunable constants of fast.maximum_margin and fast.pumma.
PUMMA_CONST_RESIDUAL_SINGULAR = 0   # fast.maximum_margin.RESIDUAL_SINGULAR
PUMMA_CONST_CASE_TIE = 1            # fast.pumma.CASE_TIE
PUMMA_CONST_NEWTON_TOLERANCE = 2    # fast.pumma.NEWTON_TOLERANCE
PUMMA_CONST_NEWTON_MAX_STEPS = 3    # fast.pumma.NEWTON_MAX_STEPS
PUMMA_CONST_NEWTON_STOP = 4         # fast.pumma.NEWTON_STOP
PUMMA_CONST_SINGULAR = 5            # fast.maximum_margin.SINGULAR
PUMMA_CONSTS_SIZE = 6

# -- the Perceptron's one-vs-rest learners (``fast._numba_multiclass``; fast.multiclass) -------
# ovr_primal's and ovr_dual_block's state.
OVR_BAD_SCORE = 0            # out: the score that was not finite
OVR_STATE_SIZE = 1
