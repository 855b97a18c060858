"""The Second-Order Perceptron's filtered run (linear kernel, scores not returned): every
decision of the exact run certified with Arb balls, or ``Undecided``.

The state is M^{-1} for the integer matrix M = L (a_k I + C) (``second_order.IntegerPrimal``'s
M), held as an ``arb_mat`` at ``BALL_PRECISION`` bits and updated by Sherman-Morrison
(M' = M + f z z^T: M'^{-1} = M^{-1} - f h h^T / (1 + f z^T h), h = M^{-1} z); the adaptive
form inverts M afresh.  With u = M^{-1} V, s = f z.u and q = f z^T M^{-1} z are balls that
contain the exact values, so a decision is taken only where the ball settles it:

- the mistake test y s <= 0: the sign of s (an exact zero stays an exact zero in Arb:
  0 times a ball is 0);
- the stated fragile rule: |s| against the rule's bound (``FilteredFragileRule``);
- the a-posteriori rule (``sharpen_filtered``): the shadow runs' errors |fl(score) - score|
  and ``common.sharpen``'s test, evaluated on float intervals around the score's ball.

Where a ball does not settle a decision the run raises ``Undecided`` and the caller runs the
exact engine instead, so the trace is the reference's either way.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from flint import arb, arb_mat, ctx, fmpz_mat

from ..reference.common import SHADOW_FACTOR, ShadowRuns
from ..reference.second_order import SecondOrderParams
from ..reference.second_order_engines import a_k
from ..rounding import SMALLEST_SUBNORMAL, UNIT_ROUNDOFF

#: Arb's working precision for M^{-1} (bits); where it does not suffice a decision is
#: ``Undecided`` and the exact engine runs.
BALL_PRECISION = 256
#: The precision of the scores' balls (bits): the a-posteriori rule's test needs a score's
#: first few dozen bits only (``FLOAT_SLACK``).
SCORE_PRECISION = 96
#: The largest relative radius of u = M^{-1} V before M^{-1} is inverted afresh (each
#: Sherman-Morrison update widens the balls by about the condition of M).
REFRESH_RADIUS = 2.0 ** -(BALL_PRECISION // 2)
#: A relative widening that covers the conversion of a ball's midpoint and radius to float64
#: (one rounding each) and of every float operation on the intervals below.
FLOAT_SLACK = 2.0 ** -40
#: The float intervals are used only for magnitudes well inside float64's normal range.
FLOAT_SAFE = (1e-280, 1e280)


class Undecided(Exception):
    """A ball did not settle a decision: the exact engine decides."""


class BallPrimal:
    """M^{-1} (M = L (a_k I + C), integer) as an ``arb_mat``; u = M^{-1} V."""

    def __init__(self, z: list[list[int]], f: int, L: int, par: SecondOrderParams):
        self.z, self.f, self.L, self.par = z, f, L, par
        self.n = n = len(z[0])
        self.a = a_k(par, 1)
        aL = int(self.a * L)
        self.M = _scalar(n, aL)
        self.Minv = arb_mat(n, n, [arb(1) / aL if r == c else 0
                                   for r in range(n) for c in range(n)])
        self.V = [0] * n
        self.u = arb_mat(n, 1)
        self.rows = [arb_mat(1, n, row) for row in z]
        self.support: list[int] = []
        self.Minv_low: Any = None   # M^{-1} rounded to SCORE_PRECISION, made when needed

    def s(self, j: int) -> Any:
        """The ball of z_j . u (s = f z.u / ... with f > 0: its sign is s's)."""
        return (self.rows[j] * self.u)[0, 0]

    def score(self, j: int, zu: Any) -> tuple[float, float]:
        """(mid, rad) of score_t = s / (1 + q), s = f z.u, q = f z^T M^{-1} z, as floats
        (``ball_floats``), computed at ``SCORE_PRECISION`` from M^{-1} rounded to it."""
        if self.Minv_low is None:
            ctx.prec = SCORE_PRECISION
            self.Minv_low = self.Minv * 1
            ctx.prec = BALL_PRECISION
        row = self.rows[j]
        ctx.prec = SCORE_PRECISION
        try:
            q = (row * self.Minv_low * row.transpose())[0, 0] * self.f
            return ball_floats(zu * self.f / (1 + q))
        finally:
            ctx.prec = BALL_PRECISION

    def mistake(self, j: int, label: int) -> None:
        z, f, n = self.z[j], self.f, self.n
        self.V = [v + label * zi for v, zi in zip(self.V, z)]
        self.support.append(j)
        zcol = fmpz_mat(n, 1, z)
        self.M += zcol * zcol.transpose() * f
        new_a = a_k(self.par, len(self.support) + 1)
        if new_a != self.a:   # adaptive: M = L (a_k I + C) inverted afresh
            self.M += _scalar(n, int((new_a - self.a) * self.L))
            self.a = new_a
            self.Minv = _inverse(self.M)
        else:
            h = self.Minv * self.rows[j].transpose()
            delta = 1 + (self.rows[j] * h)[0, 0] * f
            self.Minv = self.Minv - h * h.transpose() * (f / delta)
        self.Minv_low = None
        Vcol = arb_mat(n, 1, self.V)
        self.u = self.Minv * Vcol
        if _relative_radius(self.u) > REFRESH_RADIUS:  # the balls widen with each update
            self.Minv = _inverse(self.M)
            self.u = self.Minv * Vcol


def _relative_radius(column: Any) -> float:
    """max rad / max |mid| over a column's balls (0 for an exact zero column)."""
    mids = [abs(float(v.mid())) for v in column.entries()]
    rads = [float(v.rad()) for v in column.entries()]
    top = max(mids)
    if not top:
        return 0.0 if not max(rads) else math.inf
    return max(rads) / top


def _inverse(M: fmpz_mat) -> Any:
    """M^{-1} in balls; ``Undecided`` where Arb cannot certify M invertible at its precision
    (M is positive definite: a tiny a against large data)."""
    try:
        return arb_mat(M).inv()
    except ZeroDivisionError:
        raise Undecided from None


def _scalar(n: int, value: int) -> fmpz_mat:
    return fmpz_mat(n, n, [value if r == c else 0 for r in range(n) for c in range(n)])


def abs_at_most(ball: Any, bound: float) -> bool | None:
    """|ball| <= bound if certified, False if |ball| > bound is, else None."""
    b = abs(ball)
    e = arb(bound)
    if b <= e:
        return True
    if b > e:
        return False
    return None


def ball_floats(ball: Any) -> tuple[float, float]:
    """(mid, rad) of a ball as floats, rad widened to cover both conversions; ``Undecided``
    outside ``FLOAT_SAFE`` (and for a nonzero ball containing 0 the caller decides)."""
    mid, rad = float(ball.mid()), float(ball.rad())
    if not (mid == 0 or FLOAT_SAFE[0] < abs(mid) < FLOAT_SAFE[1]) or not rad < FLOAT_SAFE[1]:
        raise Undecided
    return mid, rad * (1 + FLOAT_SLACK) + abs(mid) * FLOAT_SLACK + SMALLEST_SUBNORMAL


def run_shadows(shadows: ShadowRuns, X: Any, y: Any, epochs: int, kernel: str,
                params: dict[str, Any], updates: list[int], trials: int
                ) -> list[tuple[list[float], set[int]]] | None:
    """Each fast form's scores and the update trials it parts from, run along the exact
    run's updates (``common.shadow_errors``' runs); None where that rule has no shadow (no
    form takes these parameters, a form raises, a form's scores are missing)."""
    try:
        forms = shadows.forms_for(kernel, params)
    except Exception:  # noqa: BLE001 - as common._shadows: the stated rule decides
        return None
    if not forms:
        return None
    Xa = np.asarray(X, dtype=np.float64) if not hasattr(X, "toarray") else X
    ya = np.asarray(y)
    out = []
    for form in forms:
        try:
            shadow = shadows.forced(form, Xa, ya, epochs, kernel, params, updates)
        except Exception:  # noqa: BLE001 - as common._shadows
            return None
        if shadow.scores is None or len(shadow.scores) != trials:
            return None
        out.append((shadow.scores, set(updates) - set(shadow.updates)))
    return out


def sharpen_filtered(candidates: list[int], balls: dict[int, tuple[float, float, bool]],
                     runs: list[tuple[list[float], set[int]]]) -> list[int]:
    """``common.sharpen`` with the shadow errors of ``common._largest``, decided on float
    intervals: ``balls[t]`` = (mid, rad, exact zero) of score_t (|margin| = |score_t|).
    Trial t stays fragile iff the margin is 0 or |margin| <= SHADOW_FACTOR max(e_t,
    2u |margin|), e_t the largest float(|fl(score_t) - score_t|) over the forms (inf: not
    finite or parted);
    ``Undecided`` where an interval straddles that test."""
    kept = []
    for t in candidates:
        mid, rad, zero = balls[t]
        if zero:
            kept.append(t)
            continue
        g_lo = (abs(mid) - rad) * (1 - FLOAT_SLACK)
        g_hi = (abs(mid) + rad) * (1 + FLOAT_SLACK)
        if g_lo <= 0:
            raise Undecided
        e_lo = e_hi = 0.0
        for scores, parted in runs:
            sf = scores[t]
            if t in parted or not math.isfinite(sf):
                e_lo = e_hi = math.inf
                break
            d_mid = abs(sf - mid)
            low = (d_mid * (1 - FLOAT_SLACK) - rad * (1 + FLOAT_SLACK)) * (1 - FLOAT_SLACK)
            high = (d_mid + rad) * (1 + FLOAT_SLACK) ** 2 + SMALLEST_SUBNORMAL
            e_lo, e_hi = max(e_lo, low), max(e_hi, high)
        if e_lo == math.inf:
            kept.append(t)
            continue
        if not e_hi < 2.0 ** 999 or not g_hi < 2.0 ** 999:
            raise Undecided
        floor_lo = 2 * UNIT_ROUNDOFF * g_lo * (1 - FLOAT_SLACK)
        floor_hi = 2 * UNIT_ROUNDOFF * g_hi * (1 + FLOAT_SLACK)
        band_lo = SHADOW_FACTOR * max(e_lo, floor_lo) * (1 - FLOAT_SLACK)
        band_hi = SHADOW_FACTOR * max(e_hi, floor_hi) * (1 + FLOAT_SLACK)
        if g_hi <= band_lo:
            kept.append(t)
        elif not g_lo > band_hi:
            raise Undecided
    return kept
