"""The fast exact engine of ALMA_p(alpha; B, C) (Gentile 2001; SPEC.md section 15): the
reference's trace (``reference/alma.py``), trial for trial and bit for bit.

The reference keeps th = f(w) in mpmath at the scoped precision (256 bits by default), and
its trace holds that state's mpf values (``final.w``, the scores), so the state cannot be
replaced by anything cheaper: every correction's roundings are the reference's.  Here they
are done on exact dyadics (M, E), M 2^E with M a Python int, rounded to the precision as
mpmath rounds (to nearest, ties to even): a correctly rounded operation has one result, so
th' = th + (eta y) x^, sum_i th'_i^2 from 0, its square root and th'/N (one reciprocal for
the n quotients) give the reference's values without its mpf objects.  That work, about
5n roundings a correction, is what remains of the reference's cost.  What is saved:

- each trial's tests (mistake iff y w.x^ <= 0, update iff y w.x^ <= (1 - alpha) gamma_k,
  the ties within the reference's own allowance ``own``, the fragile rule of SPEC.md 15.5)
  are filtered: one float64 product of x^ and |x^| with the state's doubles gives the
  score, with a rigorous bound on its distance to the reference's mpf score, and bounds on
  ``own`` and on the rule's ``err`` from above; a trial is settled only when every test
  is, otherwise the reference's ``trial`` runs on the synced mpf state and its loop's
  decisions are taken (``_reference_trial``);
- the exact score is formed only where a trace records it (``record_scores``); a
  correction's float bookkeeping (the reference's ``_carry_euclidean``) needs float(score)
  only through quantities nondecreasing in it, so it runs at both ends of the settled
  score's interval and takes the exact double (one integer dot product) only where they
  differ;
- x^ of each example, eta_k and the threshold are computed once (the threshold in float64:
  ``decide`` allows its rounding).

p > 2 and the kernel (dual) forms run the reference itself.
"""

from __future__ import annotations

import math
import operator
from fractions import Fraction
from typing import Any

import numpy as np
from mpmath.libmp import (
    from_man_exp,
    mpf_add,
    round_nearest,
    to_float,
)

from ..kernels import parse_kernel
from ..numbers import number_context
from ..reference import alma as reference
from ..reference.alma import PARAMS, PrimalState, normalized, to_mpf
from ..reference.common import TrialRecord, check_epochs, exact_data
from ..rounding import UNIT_ROUNDOFF, float_or_inf, magnitude_float, score_error_bound
from ..trace import Trace

u = UNIT_ROUNDOFF
RND = round_nearest
#: Relative slack on float64 sums of at most n nonnegative terms (n u, n < 10^9) and an
#: absolute one for their underflow: both far below what a decision is settled by.
SLACK = 1e-6
TINY = 1e-300
MIN_NORMAL = 2.0 ** -1022
#: Operands of a sum further apart than this many bits are added by mpmath (which rounds
#: them without writing out the gap).
FAR = 4096


def alma(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
         alpha: Any = Fraction(1, 10), B: Any = None, C: Any = None,
         record_scores: bool = False) -> Trace:
    """Run ALMA_p(alpha; B, C) over ``epochs`` passes of (X, y); the reference's trace."""
    rows, labels = checked_data(X, y)
    check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(p=p, alpha=alpha, B=B, C=C))
    if par.p != 2 or not kern.is_linear:
        return reference.alma(X, y, epochs=epochs, kernel=kernel, p=p, alpha=alpha, B=B, C=C,
                              record_scores=record_scores)
    run = _Euclidean(rows, labels, par, number_context(), kern)
    record = TrialRecord(labels, check_epochs(epochs), record_scores)
    for t, j, label in record.trials():
        decided = run.decide(j, label)
        if decided is None:
            _reference_trial(run, record, t, j, label)
            continue
        mistake, update, fragile = decided
        score: Any = None
        if record_scores:
            score = run.make_mpf(run.exact_score(j))
            record.score(score)
        if fragile:
            record.fragile.append(t)
        if mistake:
            record.mistakes.append(t)
        if record.decide(t, update):
            record.updates.append(t)
            run.update(j, score)
    run.sync()
    trace = record.trace("alma", kern, PARAMS.as_dict(par), run.final())
    trace.final_bounds = run.bounds()
    return trace


def checked_data(X: Any, y: Any) -> tuple[list[list[Any]], list[int]]:
    """``exact_data``'s rows and labels: a 2-d float64 array of finite values with an
    integer label vector of -1 and +1 is read as it is (rows of floats, each float64 the
    dyadic rational ``to_mpf`` makes exactly), anything else by ``exact_data`` (its checks
    and its errors)."""
    if (isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2
            and X.shape[0] and X.shape[1] and isinstance(y, np.ndarray) and y.ndim == 1
            and y.shape[0] == X.shape[0] and y.dtype.kind in "iu"
            and bool(np.isin(y, (-1, 1)).all()) and bool(np.isfinite(X).all())):
        return X.tolist(), [int(v) for v in y.tolist()]
    return exact_data(X, y)


def _reference_trial(run: _Euclidean, record: TrialRecord, t: int, j: int,
                     label: int) -> None:
    """Trial t as the reference's run loop takes it (``reference.alma.alma``), on the synced
    mpf state: its score, ties, fragile rule, mistake and update."""
    run.sync()
    score, err, own, thr, thr_err = run.trial(j)
    margin = label * score
    tie_zero = bool(own) and abs(margin) <= own
    tie_thr = bool(own) and abs(margin - thr) <= own
    if tie_zero:
        score, margin = 0 * score, 0 * score
    record.score(score)
    if not run.lost:
        gap0, gap1 = abs(float(margin)), abs(float(margin - thr))
        if tie_zero or tie_thr or (err and (gap0 <= err or gap1 <= err + thr_err)):
            record.fragile.append(t)
    else:
        record.fragile.append(t)
    if margin <= 0:
        record.mistakes.append(t)
    if record.decide(t, margin <= thr or tie_thr):
        record.updates.append(t)
        run.update(j, score)


Dyadic = tuple[int, int]   # (M, E): the value M 2^E, M a signed int (trailing zeros allowed)
#: ``_carry_euclidean``'s arguments before the score: the doubles of th', N, ||th||_2 after,
#: the correction's rounding, eta, ||x^||_2, ||th||_2 before, the score's rounding.
Carried = tuple[list[float], float, float, float, float, float, float, float]


def rounded(M: int, E: int, prec: int) -> Dyadic:
    """M 2^E rounded to ``prec`` significant bits, to nearest with ties to even: mpmath's
    ``round_nearest``, so the value of every correctly rounded mpmath operation."""
    sh = M.bit_length() - prec
    if sh <= 0:
        return M, E
    q = M >> (sh - 1)   # the kept bits and the rounding bit; the rest is sticky
    if q & 1 and (q & 2 or M & ((1 << (sh - 1)) - 1)):
        q += 1
    return q >> 1, E + sh


def added(a: Dyadic, b: Dyadic, prec: int) -> Dyadic:
    """a + b rounded (mpmath's ``mpf_add``); far apart operands go through mpmath."""
    (Ma, Ea), (Mb, Eb) = a, b
    if not Ma:
        return b
    if not Mb:
        return a
    d = Ea - Eb
    if d > FAR or -d > FAR:
        return from_raw(mpf_add(to_raw(a), to_raw(b), prec, RND))
    if d >= 0:
        return rounded((Ma << d) + Mb, Eb, prec)
    return rounded(Ma + (Mb << -d), Ea, prec)


def divided(a: Dyadic, N: Dyadic, prec: int) -> Dyadic:
    """a / N rounded (mpmath's ``mpf_div``), N > 0: prec + 2 quotient bits and a sticky
    bit for the remainder decide the rounding."""
    (Ma, Ea), (Mn, En) = a, N
    if not Ma:
        return 0, 0
    extra = max(prec + 3 - Ma.bit_length() + Mn.bit_length(), 0)
    q, r = divmod(abs(Ma) << extra, Mn)
    q, e = rounded((q << 1) | (1 if r else 0), Ea - En - extra - 1, prec)
    return (-q if Ma < 0 else q), e


def square_root(a: Dyadic, prec: int) -> Dyadic:
    """sqrt(a) rounded (mpmath's ``mpf_sqrt``), a >= 0: an integer square root of at least
    prec + 2 bits and a sticky bit for its remainder decide the rounding."""
    M, E = a
    if not M:
        return 0, 0
    shift = max(2 * prec + 6 - M.bit_length(), 0)
    if (E - shift) & 1:
        shift += 1
    X = M << shift
    r = math.isqrt(X)
    return rounded((r << 1) | (1 if r * r != X else 0), (E - shift) // 2 - 1, prec)


def at_most_one(a: Dyadic) -> bool:
    """a <= 1 for a >= 0."""
    M, E = a
    if E >= 0:
        return M == 0 or (M == 1 and E == 0)
    return M <= 1 << -E


def aligned(values: list[Dyadic]) -> tuple[list[int], list[int], int]:
    """The values as integers over their lowest exponent L (v_i = V_i 2^L), the |V_i|, L."""
    low = min((E for M, E in values if M), default=0)
    out = [M << (E - low) if M else 0 for M, E in values]
    return out, [abs(v) for v in out], low


def to_raw(a: Dyadic) -> Any:
    """The raw mpf (sign, man, exp, bc) of an exact dyadic."""
    return from_man_exp(a[0], a[1])


def from_raw(value: Any) -> Dyadic:
    sign, man, exp, _ = value
    return (-man if sign else man), exp


def to_double(a: Dyadic) -> float:
    """float() of the mpf a, as mpmath's ``to_float`` rounds it (to nearest): a Python int
    converts to the nearest double, and ldexp is exact while the result stays normal."""
    M, E = a
    b = M.bit_length()
    if b < 1000 and -1000 < E + b < 1000:
        return math.ldexp(float(M), E)
    return float(to_float(to_raw(a), rnd=RND)) if M else 0.0


def corrected(theta: list[Dyadic], xhat: list[Dyadic], Ms: int, Es: int, prec: int
              ) -> list[Dyadic]:
    """th'_i = th_i + s x^_i (s = Ms 2^Es = eta y), the product and the sum each rounded as
    ``rounded`` rounds (written out here: this is the hot loop)."""
    prime: list[Dyadic] = []
    for (M, E), (P, Ep) in zip(theta, xhat):
        P *= Ms
        Ep += Es
        sh = P.bit_length() - prec
        if sh > 0:
            q = P >> (sh - 1)
            if q & 1 and (q & 2 or P & ((1 << (sh - 1)) - 1)):
                q += 1
            P, Ep = q >> 1, Ep + sh
        if P and M:
            d = E - Ep
            if d > FAR or -d > FAR:
                M, E = added((M, E), (P, Ep), prec)
            else:
                if d >= 0:
                    M, E = (M << d) + P, Ep
                else:
                    M += P << -d
                sh = M.bit_length() - prec
                if sh > 0:
                    q = M >> (sh - 1)
                    if q & 1 and (q & 2 or M & ((1 << (sh - 1)) - 1)):
                        q += 1
                    M, E = q >> 1, E + sh
        elif P:
            M, E = P, Ep
        prime.append((M, E))
    return prime


def squared_norm(values: list[Dyadic], prec: int) -> Dyadic:
    """sum_i v_i^2 from 0, each square and each partial sum rounded as ``rounded`` rounds
    (the reference's ``pnorm`` at p = 2 before its square root; written out)."""
    tM, tE = 0, 0
    for M, E in values:
        if not M:
            continue
        M *= M
        E += E
        sh = M.bit_length() - prec
        if sh > 0:
            q = M >> (sh - 1)
            if q & 1 and (q & 2 or M & ((1 << (sh - 1)) - 1)):
                q += 1
            M, E = q >> 1, E + sh
        d = tE - E
        if not tM:
            tM, tE = M, E
            continue
        if d > FAR or -d > FAR:
            tM, tE = added((tM, tE), (M, E), prec)
            continue
        if d >= 0:
            tM, tE = (tM << d) + M, E
        else:
            tM += M << -d
        sh = tM.bit_length() - prec
        if sh > 0:
            q = tM >> (sh - 1)
            if q & 1 and (q & 2 or tM & ((1 << (sh - 1)) - 1)):
                q += 1
            tM, tE = q >> 1, tE + sh
    return tM, tE


def doubles(values: list[Dyadic]) -> list[float]:
    """``to_double`` of each value: ldexp of the int's nearest double where every result is
    normal (then exact), ``to_double`` otherwise."""
    try:
        out = [math.ldexp(float(M), E) for M, E in values]
    except OverflowError:
        return [to_double(v) for v in values]
    smallest = min(map(abs, out), default=MIN_NORMAL)
    if smallest >= MIN_NORMAL or not smallest and all(not f or abs(f) >= MIN_NORMAL
                                                      for f in out):
        return out
    return [to_double(v) for v in values]


def quotients(values: list[Dyadic], N: Dyadic, prec: int) -> list[Dyadic]:
    """``divided(v, N)`` for every v, by one reciprocal: with R = 2^K // M_N, |M_v| R lies
    within |M_v| below |M_v| 2^K / M_N, so where no rounding boundary (nor a power of 2)
    lies in that gap its rounding is the quotient's; ``divided`` otherwise."""
    Mn, En = N
    K = prec + 64 + Mn.bit_length()
    R = (1 << K) // Mn
    out: list[Dyadic] = []
    for v in values:
        M, E = v
        if not M:
            out.append((0, 0))
            continue
        a = -M if M < 0 else M
        X = a * R
        bits = X.bit_length()
        sh = bits - prec
        q = X >> sh
        r = X - (q << sh)
        half = 1 << (sh - 1)
        if r + a <= half:
            pass
        elif r > half:
            q += 1
        else:
            out.append(divided(v, N, prec))
            continue
        if (X + a).bit_length() != bits:
            out.append(divided(v, N, prec))
            continue
        out.append((-q if M < 0 else q, E - En - K + sh))
    return out


def normalized_row(row: list[Any], prec: int) -> list[Dyadic] | None:
    """The reference's ``normalized`` (x / ||x||_2 rounded as it rounds) for a row of
    dyadic rationals of at most ``prec`` bits (to_mpf exact); None for any other row."""
    exact: list[Dyadic] = []
    for v in row:
        num, den = v.as_integer_ratio()
        if den & (den - 1) or num.bit_length() > prec:
            return None
        exact.append((num, 1 - den.bit_length()))
    # The squares' exact sum: when it has at most prec bits, so has every partial sum of
    # these nonnegative terms (each a multiple of 2^low), and no rounding changes them.
    low = min((E + E for M, E in exact if M), default=0)
    total: Dyadic = (sum(M * M << (E + E - low) for M, E in exact if M), low)
    if total[0].bit_length() > prec:
        total = squared_norm(exact, prec)
    if not total[0]:
        return [(0, 0)] * len(row)
    norm = square_root(total, prec)
    return quotients(exact, norm, prec)


class _Euclidean(PrimalState):
    """The reference's primal state for p = 2 (th = w), its corrections on exact dyadics
    rounded as mpmath rounds and its trials filtered in float64; ``sync`` hands the
    reference's methods the mpf objects they read."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        ctx = self.ctx
        self.prec = prec = int(ctx.prec)
        self.xh = [normalized_row(row, prec) or
                   [from_raw(v._mpf_) for v in normalized(row, self.p, ctx)]
                   for row in self.rows]
        self.xa = [[abs(to_double(v)) for v in row] for row in self.xh]
        self.x2 = [math.sqrt(sum(b * b for b in xa)) for xa in self.xa]
        Xf = np.array([[to_double(v) for v in row] for row in self.xh], dtype=float)
        Xf.shape = (len(self.rows), self.n)
        self.XX = np.stack((Xf, np.abs(Xf)), axis=1)   # rows x^ and |x^| of each example
        self.xh_aligned = [aligned(row) for row in self.xh]
        self.aligned: tuple[list[int], list[int], int] | None = None
        self.theta_d: list[Dyadic] = [(0, 0)] * self.n
        self.w_float = [0.0] * self.n
        self.state = np.zeros((self.n, 3))   # columns w_i, |w_i| and size_i (doubles)
        self.settled = (0.0, 0.0)   # the last settled trial's float score and its bound
        self.th2 = 0.0
        self.synced = True
        one_minus_alpha = from_raw(to_mpf(1 - self.alpha, ctx)._mpf_)
        B = from_raw(self.B._mpf_)
        self.aB_f = to_double(rounded(one_minus_alpha[0] * B[0], one_minus_alpha[1] + B[1],
                                      prec))
        self.C_d = from_raw(self.C._mpf_)
        self._set_k(self.k)

    def _set_k(self, k: int) -> None:
        """eta_k = C/(sqrt(p-1) sqrt(k)) as the reference rounds it (sqrt(p - 1) = 1
        exactly), and the threshold (1 - alpha) B/sqrt(k) in float64, within 3 units of
        2^-53 of the reference's (``decide`` allows 8), with 32 u of it, its fragile
        allowance (``threshold``), from above."""
        self.eta = divided(self.C_d, square_root((k, 0), self.prec), self.prec)
        self.thr_f = self.aB_f / math.sqrt(k)
        self.thr_err = 32 * u * self.thr_f * (1 + SLACK)

    def make_mpf(self, value: Dyadic) -> Any:
        return self.ctx.make_mpf(to_raw(value))

    def sync(self) -> None:
        """th and w as the reference's mpf lists (w = th at p = 2)."""
        if not self.synced:
            self.theta = [self.make_mpf(v) for v in self.theta_d]
            self.w = list(self.theta)
            self.synced = True

    def xhat(self, j: int) -> list[Any]:
        if j not in self.xhat_cache:
            self.xhat_cache[j] = [self.make_mpf(v) for v in self.xh[j]]
        return self.xhat_cache[j]

    def _rounding(self, xa: list[float]) -> float:
        """The reference's ``_rounding`` on the held doubles of w (the same sums)."""
        mag_w = sum(abs(a) * b for a, b in zip(self.w_float, xa))
        out = score_error_bound(self.m, magnitude_float(mag_w) if mag_w else 0.0)
        mag_a = sum(s * b for s, b in zip(self.size, xa))
        return out + score_error_bound(self.m + len(self.support), mag_a)

    def exact_score(self, j: int) -> Dyadic:
        """The reference's ``linear_score``: sum_i w_i x^_i over the nonzero terms, rounded
        term by term at the context's precision, from 0."""
        prec, acc = self.prec, (0, 0)
        for (Mw, Ew), (Mx, Ex) in zip(self.theta_d, self.xh[j]):
            if Mw and Mx:
                acc = added(acc, rounded(Mw * Mx, Ew + Ex, prec), prec)
        return acc

    def score_double(self, j: int) -> float:
        """float() of the reference's score: the exact w.x^ as one integer (both vectors on
        their lowest exponent), whose rounding to a double is that of the reference's score
        when every value within the reference's own rounding of it (n + 2 units of 2^-prec
        of sum |w_i x^_i|) rounds to the same double; the reference's sum otherwise."""
        if self.aligned is None:
            self.aligned = aligned(self.theta_d)
        (T, AT, low), (X, AX, low_x) = self.aligned, self.xh_aligned[j]
        spread = sum(map(operator.mul, AT, AX))
        if not spread:
            return 0.0
        total = sum(map(operator.mul, T, X))
        slack = (spread * (self.n + 2) >> self.prec) + 1
        below = to_double((total - slack, low + low_x))
        if below == to_double((total + slack, low + low_x)):
            return below
        return to_double(self.exact_score(j))

    def decide(self, j: int, label: int) -> tuple[bool, bool, bool] | None:
        """(mistake, update, fragile) of trial j when a float64 evaluation with a rigorous
        error bound settles every test of the reference's trial; None otherwise."""
        if not self.K or self.overflows[j] or self.support_overflows:
            return None
        (s, _, _), (_, magw, maga) = (self.XX[j] @ self.state).tolist()
        A, Bm = magw * (1 + SLACK) + TINY, maga * (1 + SLACK) + TINY
        if not (A < math.inf and Bm < math.inf and abs(s) < math.inf):
            return None
        n, prec = self.n, self.prec
        # |s - P| (P the exact w.x^ of the mpf state) and |score - P| (the reference's
        # rounding at prec bits), then its own allowance ``own`` (own_error) from above.
        near = 2 * (n + 4) * u * A + math.ldexp(2 * (n + 2) * A, -prec)
        ops = (self.K + 1) * (n + 16) * (int(self.p) + 3)
        tie = near + math.ldexp(ops * (A + Bm) * (1 + SLACK), 8 - prec)
        margin = label * s
        if abs(margin) <= tie:
            return None
        gap = margin - self.thr_f
        tie_thr = tie + 8 * u * (abs(margin) + self.thr_f) + TINY \
            + math.ldexp(abs(margin) + self.thr_f + tie, 2 - prec)
        if abs(gap) <= tie_thr:
            return None
        fragile = bool(self.lost)
        if not fragile:
            err = (score_error_bound(self.m, A)
                   + score_error_bound(self.m + len(self.support), Bm)
                   + 2 * self.state_error() * self.x2[j]) * (1 + SLACK) + TINY
            if not (abs(margin) - near > err
                    and abs(gap) - tie_thr > (err + self.thr_err) * (1 + SLACK)):
                return None
        self.settled = (s, near)
        return margin < 0, gap < 0, fragile

    def update(self, j: int, score: Any) -> None:
        """The reference's correction (``PrimalState.update`` at p = 2) rounded as it rounds:
        th' = th + (eta y) x^ term by term, N = sqrt(sum th'_i^2) from 0, th = th'/N if
        N > 1; then its float bookkeeping on the doubles of th' and th (``score``: the
        reference's score, or None for the trial ``decide`` settled last)."""
        prec, xa, x2 = self.prec, self.xa[j], self.x2[j]
        eta_f = to_double(self.eta)
        th2 = self.th2
        rs = self._rounding(xa) if self.K else 0.0
        prime = corrected(self.theta_d, self.xh[j], self.labels[j] * self.eta[0],
                          self.eta[1], prec)
        total = squared_norm(prime, prec)
        N = square_root(total, prec)
        if at_most_one(N):
            theta, Nf = prime, 1.0
        else:
            theta, Nf = quotients(prime, N, prec), to_double(N)
        w_float = doubles(theta)
        new2 = math.sqrt(sum(t * t for t in w_float))
        added_error = (self.n + 26) * u * eta_f * x2 + u * (th2 + eta_f * x2)
        carried: Carried = (doubles(prime), Nf, new2, added_error, eta_f, x2, th2, rs)
        self._carry_settled(j, carried, score)
        self.theta_d, self.w_float = theta, w_float
        self.size = [(s + eta_f * b) / Nf for s, b in zip(self.size, xa)]
        self.asum = (self.asum + eta_f) / Nf
        self.support.add(j)
        self.support_overflows = self.support_overflows or self.overflows[j]
        self.k += 1
        self.K += 1
        if new2 and not (self.state_error() <= reference.LOST * new2):
            self.lost = True
        self.th2 = new2
        self.synced = False
        self.aligned = None
        state = self.state
        state[:, 0] = w_float
        np.abs(state[:, 0], out=state[:, 1])
        state[:, 2] = self.size
        self._set_k(self.k)

    def _carry_settled(self, j: int, carried: Carried, score: Any) -> None:
        """The reference's ``_carry_euclidean`` with float(score) (``score`` None: the
        trial ``decide`` settled, whose |float(score)| lies in [|s| - near, |s| + near]).
        D, R and E after it are nondecreasing in |float(score)|, so where both ends of
        that interval give the same ones, so does the score; ``score_double`` otherwise."""
        if score is not None:
            self._carry_euclidean(*carried, float_or_inf(score))
            return
        s, near = self.settled
        before = (self.D, self.R, self.E)
        self._carry_euclidean(*carried, abs(s) + near)
        after = (self.D, self.R, self.E)
        self.D, self.R, self.E = before
        self._carry_euclidean(*carried, abs(s) - near)
        if (self.D, self.R, self.E) != after:
            self.D, self.R, self.E = before
            self._carry_euclidean(*carried, self.score_double(j))
