"""ALMA_p(alpha; B, C), C. Gentile, "A New Approximate Maximal Margin Classification
Algorithm" (JMLR 2 (2001) 213-242), in mpmath at a stated precision.  SPEC.md section 15.

The algorithm (Gentile's Figure of ALMA_p; f as in Lemma 3 of Ishibashi, Hatano & Takeda
2008), p >= 2, q = p/(p-1), alpha in (0, 1], B, C > 0:

    w_1 = 0, k = 1                                     (k - 1 corrections so far)
    trial t:  x^_t = x_t / ||x_t||_p                   (normalised instance; 0 stays 0)
              score = w_k . x^_t;  mistake iff y_t score <= 0
              gamma_k = B sqrt(p-1) / sqrt(k)
              update iff y_t score <= (1 - alpha) gamma_k:
                  eta_k  = C / (sqrt(p-1) sqrt(k))     (||x^_t||_p = 1)
                  w'_k   = f^-1( f(w_k) + eta_k y_t x^_t )
                  w_k+1  = w'_k / max{1, ||w'_k||_q};   k <- k + 1
    f(w)_i = sign(w_i)|w_i|^(q-1) / ||w||_q^(q-2) = grad (1/2)||w||_q^2
    f^-1(th)_i = sign(th_i)|th_i|^(p-1) / ||th||_p^(p-2) = grad (1/2)||th||_p^2
    defaults (Gentile's Theorem 3): B = 1/alpha, C = sqrt(2)

f is homogeneous of degree 1 and ||f^-1(th)||_q = ||th||_p (Lemma 3), so the state is kept as
th = f(w): th' = th + eta y x^, th <- th' / max{1, ||th'||_p}, w = f^-1(th).  p = 2: f is the
identity; with a kernel, x^ = phi(x) / sqrt(k(x, x)) and w = sum_j alpha_j x^_j (dual).

Every square root makes the run irrational: the state is kept in mpmath at the scoped
precision (``numbers.precision``, default 256 bits).  A decision whose margin to its
threshold is within the reference's own error bound is taken as a tie (a score 0 is a
mistake; y score equal to the threshold updates) and flagged fragile.  The fragile rule and
``final_error_bounds`` are in SPEC.md 15.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import ParamError
from ..kernels import parse_kernel
from ..numbers import number_context
from ..params import Param, ParamSchema
from ..pnorm import link as link  # re-exported, as are link_inverse, to_mpf and pnorm
from ..pnorm import link_inverse as link_inverse  # (below): properties/alma.py calls them
from ..pnorm import norm
from ..pnorm import to_mpf as to_mpf
from ..rounding import (
    ANY_STATE,
    SMALLEST_SUBNORMAL,
    UNIT_ROUNDOFF,
    float_or_inf,
    fsum_dot,
    largest_eigenvalue,
    magnitude_float,
    matmul,
    power,
    score_error_bound,
)
from ..rounding import pnorm as float_pnorm
from ..trace import Trace
from .common import Gram, OptionalRational, TrialRecord, check_epochs, exact_data, norm_param


@dataclass(frozen=True)
class AlmaParams:
    """ALMA_p(alpha; B, C)'s parameters (Gentile), read and checked by ``PARAMS``.

    ``p``: the norm of the margin, p >= 2 (instances in the p-norm, w in the dual q-norm;
    p = 2 ln n approximates the max-norm margin); ``alpha``: the margin reached is
    (1 - alpha) times the best p-norm margin, 0 < alpha <= 1; ``B``: gamma_k =
    B sqrt(p-1)/sqrt(k), None for 1/alpha; ``C``: eta_k = C/(sqrt(p-1) sqrt(k)), None for
    sqrt(2).
    """

    p: Fraction
    alpha: Fraction
    B: Fraction | None
    C: Fraction | None


PARAMS = ParamSchema(
    norm_param("the norm of the margin (instances in the p-norm, w in the dual q-norm); "
               "p = 2 ln n approximates the max-norm margin"),
    Param("alpha", "rational", Fraction(1, 10), "the margin reached is (1 - alpha) times the "
          "best p-norm margin (Gentile's alpha)", check=lambda v: 0 < v <= 1,
          requirement="in (0, 1]"),
    OptionalRational("B", "rational", None, "gamma_k = B sqrt(p-1)/sqrt(k); none: 1/alpha",
                      check=lambda v: v > 0, requirement="> 0 or none"),
    OptionalRational("C", "rational", None, "eta_k = C/(sqrt(p-1) sqrt(k)); none: sqrt(2)",
                      check=lambda v: v > 0, requirement="> 0 or none"),
    dataclass_type=AlmaParams,
)

#: The carried state error beyond which the state counts as lost (relative to ||th||_2).
LOST = 2.0 ** -20
u = UNIT_ROUNDOFF


# -- the paper's building blocks (module functions: tests/wrong_alma.py patches them) ------
# ``pnorm``, ``link_inverse``, ``link`` and ``to_mpf`` are ``perceptron_oracle.pnorm``'s (the
# p-norm link written once; ``pnorm`` is its ``norm``), bound here as this module's names.
pnorm = norm


def normalized(x: list[Any], p: Fraction, ctx: Any) -> list[Any]:
    """x^ = x / ||x||_p; a zero instance stays zero."""
    norm = pnorm(x, p, ctx)
    return [to_mpf(v, ctx) / norm for v in x] if norm else [ctx.mpf(0)] * len(x)


def margin_threshold(k: int, p: Fraction, alpha: Fraction, B: Any, ctx: Any) -> Any:
    """(1 - alpha) gamma_k, gamma_k = B sqrt(p - 1) / sqrt(k)."""
    return to_mpf(1 - alpha, ctx) * B * ctx.sqrt(to_mpf(p - 1, ctx)) / ctx.sqrt(k)


def learning_rate(k: int, p: Fraction, C: Any, ctx: Any) -> Any:
    """eta_k = C / (sqrt(p - 1) sqrt(k))."""
    return C / (ctx.sqrt(to_mpf(p - 1, ctx)) * ctx.sqrt(k))


def project(theta: list[Any], p: Fraction, ctx: Any) -> tuple[list[Any], Any]:
    """w'/max{1, ||w'||_q} on th' = f(w'): th'/max{1, ||th'||_p} (||w'||_q = ||th'||_p)."""
    N = pnorm(theta, p, ctx)
    if N <= 1:
        return list(theta), ctx.mpf(1)
    return [t / N for t in theta], N


def linear_score(w: list[Any], xhat: list[Any]) -> Any:
    """w . x^ (the whole instance, every coordinate)."""
    return sum((a * b for a, b in zip(w, xhat) if a and b), 0 * w[0] if w else 0)


def plus_ball(Q: np.ndarray, r: float) -> np.ndarray:
    """An ellipsoid holding E(Q) + B(r), E(Q) = {e : (a.e)^2 <= a^T Q a for all a}:
    (1 + 1/c) Q + (1 + c) r^2 I with c = s / r, s = sqrt(tr Q / n), the c minimising the
    trace (a ball of radius D plus B(r) gives the ball of radius D + r)."""
    if r <= 0:
        return Q
    s = math.sqrt(max(math.fsum(np.diagonal(Q).tolist()), 0.0) / Q.shape[0])
    if s == 0:
        return r * r * np.eye(Q.shape[0])
    return (1 + r / s) * Q + (r * r + r * s) * np.eye(Q.shape[0])


# -- the run --------------------------------------------------------------------------------
def alma(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
         alpha: Any = Fraction(1, 10), B: Any = None, C: Any = None,
         record_scores: bool = False) -> Trace:
    """Run ALMA_p(alpha; B, C) over ``epochs`` passes of (X, y); returns the reference trace."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(p=p, alpha=alpha, B=B, C=C))
    if par.p != 2 and not kern.is_linear:
        raise ParamError("parameter p > 2 needs the linear kernel (kernels work for p = 2)")
    ctx = number_context()
    run = (PrimalState if kern.is_linear else DualState)(rows, labels, par, ctx, kern)
    record = TrialRecord(labels, epochs, record_scores)
    for t, j, label in record.trials():
        score, err, own, thr, thr_err = run.trial(j)
        margin = label * score
        tie_zero = bool(own) and abs(margin) <= own        # own = 0: computed exactly
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
    trace = record.trace("alma", kern, PARAMS.as_dict(par), run.final())
    trace.final_bounds = run.bounds()
    return trace


class RunState:
    """What both state forms share: k, the parameters in mpmath, the error bookkeeping."""

    def __init__(self, rows: list[list[Fraction]], labels: list[int], par: AlmaParams,
                 ctx: Any, kern: Any):
        self.rows, self.labels, self.ctx, self.kern = rows, labels, ctx, kern
        self.p, self.alpha = par.p, par.alpha
        self.B = to_mpf(1 / self.alpha if par.B is None else par.B, ctx)
        self.C = ctx.sqrt(2) if par.C is None else to_mpf(par.C, ctx)
        self.n = len(rows[0])
        self.k = 1
        self.lost = False
        self.D = 0.0        # ||th_float - th||_2 (in the kernel's feature space for the dual)
        self.E = 0.0        # a dual form's drift of its ||w||^2 recurrence
        self.R = 0.0        # |lambda - 1|: th_float = lambda z with ||z - th||_2 <= D
        self.rho = 0.0      # the dual form's coefficient-wise relative error
        self.asum = 0.0     # sum_i |alpha_i| (each alpha_i is a sum of same-signed terms)
        self.K = 0

    def state_error(self) -> float:
        """A bound on |th_float . v - th . v| / ||v||_2 for ||th||_2 <= 1 (SPEC 15.5): the
        shadow's distance D plus the scale error R of th_float = lambda z."""
        return self.D + self.R * (1 + self.D)

    def may_project(self, norm: float, D1: float, E1: float) -> bool:
        """Whether the exact run (||th'||_2 = ``norm``) or a float form may project at this
        correction: a float form divides when the squared norm it holds, within E1 of
        ||th_float'||^2 <= ((1 + R)(||th'|| + D1))^2, exceeds 1 (SPEC 15.5)."""
        grown = (1 + self.R) * (norm + D1)  # products: ** raises OverflowError, * gives inf
        return grown * grown + E1 > 1

    def scale_error(self, E1: float) -> float:
        """R after a correction: a form that divides by sqrt of a squared norm off by at
        most E1 from its vector's leaves lambda within max(R, E1/2 + E1^2) of 1 (SPEC 15.5),
        plus the square root's and the division's roundings."""
        return max(self.R, E1 / 2 + E1 * E1) + 3 * u

    def threshold(self) -> tuple[Any, float]:
        thr = margin_threshold(self.k, self.p, self.alpha, self.B, self.ctx)
        return thr, 32 * u * abs(float(thr))

    def own_error(self, magnitude: Any) -> Any:
        """The reference's own rounding allowance at its precision, for a score whose terms'
        magnitudes sum to ``magnitude`` (the state carries K updates' roundings)."""
        ops = (self.K + 1) * (self.n + 16) * (int(self.p) + 3)
        return self.ctx.ldexp(magnitude, -(self.ctx.prec - 8)) * ops


class PrimalState(RunState):
    """Linear kernel, any p: th = f(w) in R^n, w = f^-1(th)."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        ctx = self.ctx
        self.theta = [ctx.mpf(0)] * self.n
        self.w = [ctx.mpf(0)] * self.n
        self.size = [0.0] * self.n           # magnitude of each th_i's terms (dual form)
        self.support: set[int] = set()       # the dual form's support (rows corrected on)
        self.Q = np.zeros((self.n, self.n))  # p > 2: the error ellipsoid (SPEC 15.5)
        self.xhat_cache: dict[int, list[Any]] = {}
        self.m = int(math.ceil((float(self.p) + 2) * (self.n + 8))) + 8
        # p = 2: a dual form normalises by sqrt(k(x, x)), x.x in float64, which overflows for
        # a row beyond float64's squared range (its x^.x^ is then inf/inf); SPEC 15.5
        self.overflows = [self.p == 2 and not sum(float(v) * float(v) for v in row) < math.inf
                          for row in self.rows]
        self.support_overflows = False

    def xhat(self, j: int) -> list[Any]:
        if j not in self.xhat_cache:
            self.xhat_cache[j] = normalized(self.rows[j], self.p, self.ctx)
        return self.xhat_cache[j]

    def lipschitz_w(self) -> float:
        """A bound on ||J||_2 of f^-1 over the ball of radius D around th (SPEC 15.5)."""
        if self.p == 2 or self.D == 0:
            return 1.0
        th = [abs(float(t)) for t in self.theta]
        norm = float(pnorm(self.theta, self.p, self.ctx))
        if norm <= self.D:
            return math.inf
        r = min(1.0, (max(th) + self.D) / (norm - self.D))
        return (float(self.p) - 1) * power(r, float(self.p) - 2)

    def trial(self, j: int) -> tuple[Any, float, Any, Any, float]:
        xh = self.xhat(j)
        score = linear_score(self.w, xh)
        err = 0.0
        if self.K:
            xa = [abs(float(v)) for v in xh]
            x2 = math.sqrt(sum(b * b for b in xa))
            err = self._rounding(xa) + 2 * self.lipschitz_w() * self.state_error() * x2
            if not err and score:
                err = score_error_bound(self.m, SMALLEST_SUBNORMAL)
            if self.support_overflows or self.overflows[j]:
                err = math.inf  # a dual form's x^_i.x^_j is not a number: undecidable
        own = self.own_error(sum((abs(a * b) for a, b in zip(self.w, xh)), self.ctx.mpf(0))
                             + self._state_magnitude(xh))
        thr, thr_err = self.threshold()
        return score, err, own, thr, thr_err

    def _state_magnitude(self, xh: list[Any]) -> Any:
        """What the reference's own state error adds to a score's magnitude: th_i carries
        roundings relative to its terms' magnitudes (``size``), not to |th_i| (terms that
        cancel leave th_i near 0 with their roundings), and w = f^-1(th) passes them on
        with ||J||_2 <= p - 1: sum_i size_i |x^_i| (p = 2), (p - 1) ||size||_2 ||x^||_2."""
        ctx = self.ctx
        if self.p == 2:
            return sum((ctx.mpf(s) * abs(v) for s, v in zip(self.size, xh)), ctx.mpf(0))
        size2 = ctx.sqrt(sum((ctx.mpf(s) ** 2 for s in self.size), ctx.mpf(0)))
        return (float(self.p) - 1) * size2 * ctx.sqrt(sum((v * v for v in xh), ctx.mpf(0)))

    def _rounding(self, xa: list[float]) -> float:
        """The rounding of one score from the float state: the primal form's w.x^, and for
        p = 2 also the dual form's sum_i alpha_i x^_i.x^ (magnitudes ``size``)."""
        mag_w = sum(abs(float(a)) * b for a, b in zip(self.w, xa))
        out = score_error_bound(self.m, magnitude_float(mag_w) if mag_w else 0.0)
        if self.p == 2:
            mag_a = sum(s * b for s, b in zip(self.size, xa))
            out += score_error_bound(self.m + len(self.support), mag_a)
        return out

    def update(self, j: int, score: Any) -> None:
        ctx, p = self.ctx, self.p
        xh = self.xhat(j)
        eta = learning_rate(self.k, p, self.C, ctx)
        eta_f = float(eta)
        xa = [abs(float(v)) for v in xh]
        x2 = math.sqrt(sum(b * b for b in xa))
        th2 = math.sqrt(sum(float(t) * float(t) for t in self.theta))
        rs = self._rounding(xa) if self.K else 0.0
        prime = [t + eta * self.labels[j] * v for t, v in zip(self.theta, xh)]
        added = (self.n + 26) * u * eta_f * x2 + u * (th2 + eta_f * x2)   # x^'s, eta's
        self.theta, N = project(prime, p, ctx)
        Nf = float(N)
        new2 = math.sqrt(sum(float(t) * float(t) for t in self.theta))
        if p == 2:
            self._carry_euclidean(prime, Nf, new2, added, eta_f, x2, th2, rs, score)
        else:
            self._carry_ellipsoid(prime, Nf, added, new2)
        self.size = [(s + eta_f * b) / Nf for s, b in zip(self.size, xa)]
        self.asum = (self.asum + eta_f) / Nf
        self.w = link_inverse(self.theta, p, ctx)
        self.support.add(j)
        self.support_overflows = self.support_overflows or self.overflows[j]
        self.k += 1
        self.K += 1
        # Lost: the error no longer small against the state.  A state that is exactly 0 (a
        # zero instance, or a duplicate with the other label) carries its error on to the
        # next correction's test instead: every form holds that 0 up to the error D.
        if new2 and not (self.state_error() <= LOST * new2):
            self.lost = True

    def _carry_euclidean(self, prime: list[Any], Nf: float, new2: float, added: float,
                         eta_f: float, x2: float, th2: float, rs: float, score: Any) -> None:
        """p = 2 (SPEC 15.5): th_float = lambda z with ||z - th||_2 <= D; the projection onto
        the ball is 1-Lipschitz, so D adds this correction's roundings and the step's share
        of the scale error; R follows the squared norm each form divides by (the dual's
        recurrence, drift E; the primal's sum of squares)."""
        D1 = self.D + added + self.R / (1 - self.R) * eta_f * x2 + 2 * u * (self.asum + eta_f)
        E1 = (self.E + 2 * eta_f * rs
              + 8 * u * (th2 * th2 + 2 * eta_f * abs(float_or_inf(score)) + eta_f * eta_f)
              + (self.n + 8) * u * (th2 + eta_f * x2) * (th2 + eta_f * x2))
        self.D = D1 + 2 * D1 * D1 + (self.n + 10) * u * new2 + 2 * u
        if self.may_project(math.sqrt(sum(float(t) * float(t) for t in prime)), D1, E1):
            self.R = self.scale_error(E1)
        self.E = E1 / (max(Nf, 1.0) * max(Nf, 1.0)) + 3 * u

    def _carry_ellipsoid(self, prime: list[Any], Nf: float, added: float,
                         new2: float) -> None:
        """p > 2 (SPEC 15.5, a stated rule): the error th_float - th lies in the ellipsoid
        {e : (a.e)^2 <= a^T Q a for all a}; a correction adds a ball for its roundings, the
        projection maps Q by its Jacobian J = (I - th^ g^T)/N (radial errors vanish, and
        successive, nearly equal oblique projectors do not multiply their norms), then a
        ball for the division and the second-order term p D1^2; D = sqrt(lambda_max(Q))."""
        pf, D1 = float(self.p), self.D + added
        Q = plus_ball(self.Q, added)
        # Every float below comes from deterministic operations (rounding.py: correctly
        # rounded norms, fsum dot products, mpmath powers and eigenvalues; elementwise IEEE
        # arithmetic), never BLAS/LAPACK or numpy's SIMD power: the bounds, written to the
        # golden files, are the same doubles on every machine (SPEC.md, "Portable golden
        # files").
        normp = float_pnorm([float(t) for t in prime], pf)   # ||th'||_p, correctly rounded
        near = D1 + 4 * (self.n + 8) * u * normp        # |N_float - N| at most
        if abs(normp - 1) > near:                       # both runs project, or neither
            if Nf > 1:
                hat = np.array([float(t) for t in self.theta])      # th'/N
                g = np.sign(hat) * np.array([power(abs(h), pf - 1)  # grad ||.||_p at th^
                                             for h in hat.tolist()])
                Qg = np.array(matmul(Q, g))                         # J Q J^T, J = (I - th^ g^T)/N
                Q = (Q - np.outer(hat, Qg) - np.outer(Qg, hat)
                     + fsum_dot(g.tolist(), Qg.tolist()) * np.outer(hat, hat)) / (Nf * Nf)
            Q = plus_ball(Q, pf * D1 * D1 + (self.n + 10) * u * new2)
        else:   # either may project or not: v / ||v||_p is within (N - 1) ||v||_2 of v
            v2 = math.sqrt(sum(float(t) * float(t) for t in prime))
            Q = plus_ball(Q, 2 * (v2 + D1) * near + (self.n + 10) * u * new2)
        self.Q = Q
        top = math.sqrt(max(largest_eigenvalue(Q), 0.0))   # an upper bound, rounded up
        self.D = math.nextafter(top, math.inf) if top else 0.0

    def final(self) -> dict[str, Any]:
        return {"w": list(self.w), "k": self.k}

    def bounds(self) -> dict[str, Any]:
        if self.lost:
            return {"final.w": [ANY_STATE] * self.n}
        L = self.lipschitz_w() if self.K else 0.0
        out = []
        for wi, s in zip(self.w, self.size):
            b = score_error_bound(self.m, magnitude_float(abs(float(wi))) if wi else 0.0)
            b += 2 * L * self.D + 2 * self.R * (abs(float(wi)) + self.D)
            if self.p == 2:   # the dual form reads w = sum_i alpha_i x^_i off at the end
                b += score_error_bound(self.m + len(self.support), s)
            out.append(b)
        return {"final.w": out}


class DualState(RunState):
    """p = 2, a non-linear kernel: w = sum_j alpha_j x^_j, x^ = phi(x)/sqrt(k(x, x))."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.gram = Gram(self.kern, self.rows)
        self.alpha_c: dict[int, Any] = {}
        self.kn: dict[int, Any] = {}
        self.ww = self.ctx.mpf(0)        # ||w||^2
        self.m = (self.n + 8) * self.kern.depth + 16

    def knorm(self, j: int) -> Any:
        if j not in self.kn:
            v = self.gram(j, j)
            self.kn[j] = self.ctx.sqrt(to_mpf(v, self.ctx)) if v > 0 else self.ctx.mpf(0)
        return self.kn[j]

    def khat(self, i: int, j: int) -> Any:
        d = self.knorm(i) * self.knorm(j)
        return to_mpf(self.gram(i, j), self.ctx) / d if d else self.ctx.mpf(0)

    def kmag(self, i: int, j: int) -> float:
        d = float(self.knorm(i) * self.knorm(j))
        return self.gram.magnitude(i, j) / d if d else 0.0

    def trial(self, j: int) -> tuple[Any, float, Any, Any, float]:
        ctx = self.ctx
        score = sum((a * self.khat(i, j) for i, a in self.alpha_c.items()), ctx.mpf(0))
        err = 0.0
        if self.K:
            err = self._rounding(j, score) + (2 * self.state_error() if self.knorm(j) else 0.0)
        own = self.own_error(sum((abs(a * self.khat(i, j)) for i, a in self.alpha_c.items()),
                                 ctx.mpf(0)))
        thr, thr_err = self.threshold()
        return score, err, own, thr, thr_err

    def _rounding(self, j: int, score: Any) -> float:
        mag = sum(abs(float(a)) * self.kmag(i, j) for i, a in self.alpha_c.items())
        ops = self.m + len(self.alpha_c)
        return score_error_bound(ops, magnitude_float(mag) if mag else
                                 (SMALLEST_SUBNORMAL if score else 0.0))

    def update(self, j: int, score: Any) -> None:
        ctx = self.ctx
        label = self.labels[j]
        eta = learning_rate(self.k, self.p, self.C, ctx)
        eta_f = float(eta)
        has = 1 if self.knorm(j) else 0
        rs = self._rounding(j, score) if self.K else 0.0
        ww_prime = self.ww + 2 * eta * label * score + eta * eta * has
        N = ctx.sqrt(ww_prime) if ww_prime > 1 else ctx.mpf(1)
        Nf = float(N)
        if has:
            self.alpha_c[j] = self.alpha_c.get(j, ctx.mpf(0)) + eta * label
        if N > 1:
            self.alpha_c = {i: a / N for i, a in self.alpha_c.items()}
        self.ww = ww_prime / (N * N)
        D1 = self.D + 20 * u * eta_f + 2 * u * self.asum + self.R / (1 - self.R) * eta_f * has
        E1 = (self.E + 2 * eta_f * rs + self.m * u * eta_f * eta_f
              + 8 * u * (float(self.ww) * Nf * Nf + 2 * eta_f * abs(float_or_inf(score))))
        self.D = D1 + 2 * u
        if self.may_project(math.sqrt(max(float(ww_prime), 0.0)), D1, E1):
            self.rho += D1 / max(Nf, 1.0) + 3 * u
            self.R = self.scale_error(E1)
        self.rho += 20 * u
        self.E = E1 / (max(Nf, 1.0) * max(Nf, 1.0)) + 3 * u
        self.asum = (self.asum + eta_f * has) / Nf
        self.k += 1
        self.K += 1
        if not (self.state_error() <= LOST):
            self.lost = True

    def final(self) -> dict[str, Any]:
        T = len(self.rows)
        return {"alpha": [self.alpha_c.get(i, Fraction(0)) for i in range(T)], "k": self.k}

    def bounds(self) -> dict[str, Any]:
        T = len(self.rows)
        if self.lost:
            return {"final.alpha": [ANY_STATE] * T}
        out = []
        for i in range(T):
            a = abs(float(self.alpha_c.get(i, 0)))
            out.append(2 * (self.rho + 2 * self.R + 8 * u) * a
                       + (SMALLEST_SUBNORMAL if a else 0.0))
        return {"final.alpha": out}


# -- final-state bounds ---------------------------------------------------------------------
def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """Bounds on |float - exact| for ``final.w`` (linear kernel) or ``final.alpha``, derived
    during the run that produced ``trace`` (``trace.final_bounds``, SPEC.md 15.5).  For a
    trace without them (read from a file), FALLBACK_RHO relative to the largest coordinate."""
    if trace.final_bounds is not None:
        return trace.final_bounds
    key = "w" if "w" in trace.final else "alpha"
    values = [abs(float(v)) for v in trace.final[key]]
    scale = max(values, default=0.0)
    return {f"final.{key}": [FALLBACK_RHO * (v + scale) for v in values]}


#: The relative error assumed for a trace without final_bounds (read from a file).
FALLBACK_RHO = 2.0 ** -20
