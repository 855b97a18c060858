"""PUMMA's exact state holders: problem (3) and the bias (20) for a pair (SPEC.md 14.4).

Ishibashi, Hatano & Takeda, "Online Learning of Approximate Maximum p-Norm Margin
Classifiers with Bias" (COLT 2008).  ``State2`` (p = 2, any kernel): w~ = sum_i alpha_i x~_i
in dual coordinates (``reference.maximum_margin.DualWeights``), the soft margin's x~_j =
(x_j, y_j e_j / sqrt(C)) folded into the kernel, problem (3) by the closed forms (15)/(19)
(``solve_2norm`` with r = 2).  ``StateP`` (p > 2, linear kernel): the primal w in mpmath,
case (i) by (15), case (ii) by Newton on the dual (18) (``reference.pumma_newton``), with
the soft margin's slacks xi by example index.  Both return the new bias (20) (``pair_bias``),
the condition kappa of the 2 x 2 system and the case, and tell the error model
(``reference.pumma_errors``) where a float64 form may decide the problem otherwise.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from ..kernels import Kernel
from ..rounding import score_error_bound
from .common import Gram
from .maximum_margin import DualWeights, Numbers, Rows, dual_final, near_singular, solve_2norm
from .maximum_margin_errors import ErrorModel, StepError
from .pumma_errors import hoelder_share, norm2
from .pumma_newton import FloatOps, MpOps, newton_dual


def pair_bias(wpos: Any, wneg: Any) -> Any:
    """(20): b = -(w.x_pos + w.x_neg) / 2, given w.x~_pos and w.x~_neg (with the slacks)."""
    return -(wpos + wneg) / 2


# -- p = 2: the dual coordinates, with the soft margin's x~ -----------------------------------

class State2(DualWeights):
    """p = 2: w~ = sum_i alpha_i x~_i in dual coordinates, with the soft margin's x~."""

    def __init__(self, gram: Gram, num: Numbers, C: Any, T: int):
        super().__init__(Rows(gram, num, T), num)
        self.invC = None if C is None else 1 / num(C)
        self.doubt = False                  # the last problem (3) was nearly infeasible
        self.ill_conditioned = False        # the last problem (3) was near_singular
        self.rho_lam = 0.0

    @property
    def terms(self) -> int:
        """How many terms a score's dot product has beyond the kernel's: alpha's support."""
        return self.support

    def ka(self, i: int, j: int) -> Any:
        """The soft margin's kernel k(x_i, x_j) + [i = j] / C (for i = j: y_i^2 = 1)."""
        k = self.K(j)[i]
        return k + self.invC if i == j and self.invC is not None else k

    def xi(self, j: int, label: int) -> Any:
        if self.invC is None:
            return self.zero
        return self.alpha[j] * label * self.invC

    def slacks(self, labels: list[int]) -> list[Any]:
        """xi_i for every example index i."""
        return [self.xi(i, labels[i]) for i in range(self.T)]

    def weights(self, rows: list[list[Fraction]], kern: Kernel) -> dict[str, Any]:
        """``final``'s weights: w (linear kernel) or alpha."""
        return dual_final(self, rows, kern)

    def aug_error(self, e: int, model: ErrorModel, m: int) -> float:
        """How far a float64 v~.x~_e (the augmented score: w.x_e + a_e / C) may be off."""
        if not self.support:
            return 0.0
        extra = 0.0 if self.invC is None else float(self.invC)
        mag = self.magnitude(e) + self.size[e] * extra
        return (model.score_error(m, mag) + self.slack_error(e)
                + 2 * self.slack[e] * extra)

    def pair_magnitude(self, pos: int, neg: int) -> float:
        """The magnitude of b's terms: (M(x_pos) + M(x_neg)) / 2 plus the slacks'."""
        out = (self.magnitude(pos) + self.magnitude(neg)) / 2
        if self.invC is not None:
            out += (self.size[pos] + self.size[neg]) * float(self.invC) / 2
        return out

    def update(self, pos: int, neg: int, model: ErrorModel, m: int
               ) -> tuple[Any, float, bool] | None:
        """Problem (3) for the pair, with v~ = w~ and z~ = x~_pos - x~_neg: (the new b by
        (20), kappa, case_ii), or None if infeasible.  Sets ``doubt`` and ``rho_lam``
        (``step_errors``) and ``ill_conditioned`` for the error model."""
        ka = self.ka
        zz = ka(pos, pos) + ka(neg, neg) - 2 * ka(pos, neg)
        fpos = self.dot(pos) + self.xi(pos, 1)      # v~.x~_pos
        fneg = self.dot(neg) - self.xi(neg, -1)     # v~.x~_neg (x~_neg = (x_neg, -e/sqrt C))
        sens = self._sensitivity(pos, neg, zz, fpos - fneg, model, m)
        solution = solve_2norm(self.vv, zz, fpos - fneg, 2, self.num.exact)
        if solution is None:
            return None
        if sens.fragile:
            model.lost = True       # a near-singular update taken: anything from here on
        lam, eta, kappa = solution
        self.step(lam, eta, {pos: 1, neg: -1}, 2, sens, model.rho)   # w~ = lam z~ + eta v~
        # w'.x~_pos and w'.x~_neg for the bias (20): w' = lam z~ + eta v~
        cross = ka(pos, neg)
        wpos = eta * fpos + lam * (ka(pos, pos) - cross)
        wneg = eta * fneg + lam * (cross - ka(neg, neg))
        return pair_bias(wpos, wneg), kappa, eta != 0

    def _sensitivity(self, pos: int, neg: int, zz: Any, vz: Any, model: ErrorModel,
                     m: int) -> StepError:
        """``step_errors`` of problem (3) given the errors of ||v~||^2, ||z~||^2 and v~.z~;
        sets ``doubt``, ``rho_lam`` and ``ill_conditioned``."""
        mag = self.K.magnitude
        scale = mag(pos)[pos] + mag(neg)[neg] + 2 * mag(neg)[pos]
        if self.invC is not None:
            scale += 2 * float(self.invC)
        dvz = self.aug_error(pos, model, m) + self.aug_error(neg, model, m)
        dvv = self.norm_error(model.rho, m + self.support,
                              0.0 if self.invC is None else float(self.invC))
        sens = model.step(self.vv, zz, vz, 2, dvv, score_error_bound(m, scale), dvz, scale)
        self.doubt, self.rho_lam = sens.fragile, sens.rho_lam
        self.ill_conditioned = near_singular(self.vv, zz, vz, scale)
        return sens


# -- p > 2: the primal w and Newton on the dual (18) ------------------------------------------

class StateP:
    """p > 2: the primal w (mpmath), the slacks xi by example index."""

    def __init__(self, rows: list[list[Fraction]], num: Numbers, p: Fraction, C: Any):
        self.num = num
        ctx = num.ctx
        assert ctx is not None      # p > 2 runs in mpmath only
        self.ctx = ctx
        self.rows = [[num(v) for v in row] for row in rows]
        self.p = num(p)
        self.q = self.p / (self.p - 1)
        self.C = None if C is None else num(C)
        self.w = [num(0)] * len(rows[0])
        self.xis: dict[int, Any] = {}   # xi_j by example index (0 where absent)
        self.newton_steps = 0
        self.doubt = False   # the last problem (3) was nearly infeasible (SPEC.md 14.5)
        #: the last case-(ii) update's (z, th, v, xi', lam, eta, phi'), for the error
        #: model's Jacobian of the update map (``pumma_errors.ThetaError``); None in case (i)
        self.solved: tuple[Any, ...] | None = None

    def dot(self, j: int) -> Any:
        return self.ctx.fsum(a * b for a, b in zip(self.w, self.rows[j]))

    #: Problem (3) is never ``near_singular``'s case here (p > 2: ``doubt`` says it).
    ill_conditioned = False

    @property
    def terms(self) -> int:
        """How many terms a score's dot product has beyond the kernel's: n."""
        return len(self.w)

    def xi(self, j: int, label: int = 0) -> Any:
        """xi_j (``label``: unused, as ``State2.xi`` takes it)."""
        return self.xis.get(j, self.num(0))

    def slacks(self, labels: list[int]) -> list[Any]:
        """xi_i for every example index i."""
        return [self.xi(i) for i in range(len(self.rows))]

    def weights(self, rows: list[list[Fraction]], kern: Kernel) -> dict[str, Any]:
        """``final``'s weights: the primal w."""
        return {"w": list(self.w)}

    def pair_magnitude(self, pos: int, neg: int) -> float:
        """The magnitude of b's terms: (M(x_pos) + M(x_neg)) / 2 plus the slacks'."""
        return ((self.magnitude(pos) + self.magnitude(neg)) / 2
                + (abs(float(self.xi(pos))) + abs(float(self.xi(neg)))) / 2)

    def magnitude(self, j: int) -> float:
        return sum(abs(float(a)) * abs(float(b)) for a, b in zip(self.w, self.rows[j]))

    def scale(self) -> float:
        """||w~||_2 = ||(w, sqrt(C) xi)||_2: a float64 Newton's residual moves every
        coordinate of w by about its tolerance times this (the final bounds' scale)."""
        parts = [float(v) for v in self.w]
        if self.C is not None:
            root_c = math.sqrt(float(self.C))
            parts += [root_c * float(v) for v in self.xis.values()]
        return norm2(parts)

    def norm(self, v: list[Any], r: Any) -> Any:
        ctx = self.ctx
        return ctx.power(ctx.fsum(ctx.power(abs(a), r) for a in v), 1 / r) if any(v) else 0 * r

    def link(self, v: list[Any], r: Any) -> list[Any]:
        """f^-1 (r = p) or f (r = q): sign(v_i) |v_i|^(r-1) / ||v||_r^(r-2).  The map of
        ``pnorm.link_inverse`` rounded its own way (``norm`` by fsum, times ||v||_r^(2-r)):
        kept, since ``pnorm``'s rounding would move this reference's mpf results."""
        ctx = self.ctx
        n = self.norm(v, r)
        if n == 0:
            return [self.num(0)] * len(v)
        scale = ctx.power(n, 2 - r)
        return [ctx.sign(a) * ctx.power(abs(a), r - 1) * scale for a in v]

    def update(self, pos: int, neg: int, model: ErrorModel | None = None, m: int = 0
               ) -> tuple[Any, float, bool] | None:
        """Problem (3) for the pair: (the new b, kappa, case_ii), or None if infeasible.
        Sets ``self.doubt`` when the problem is nearly infeasible; solving it then loses
        ``model``'s state (SPEC.md 14.5; ``m`` is State2's, unused here).  Keeps case
        (ii)'s inputs and solution in ``solved``."""
        ctx, num, p, C = self.ctx, self.num, self.p, self.C
        self.doubt, self.solved = False, None
        z = [a - b for a, b in zip(self.rows[pos], self.rows[neg])]
        v = self.w
        th = self.link(v, self.q)                               # f(v)
        vv = self.norm(v, self.q) ** 2                          # ||v||_q^2
        xp, xn = self.xi(pos), self.xi(neg)
        xi2 = ctx.fsum(s * s for s in self.xis.values())
        if C is not None:
            vv += C * xi2
        zp = self.norm(z, p)
        if zp == 0 and C is None:
            return None
        if C is None and ctx.fsum(a * a for a in z) < 1e-290:
            # ||z||^2 below float64's normal range (14.5's singular rule for p = 2): a
            # float64 form may call z = 0, the problem infeasible
            self.doubt = True
            if model is not None:
                model.lost = True
        # case (i): eta = 0
        lam = 2 / (zp ** 2 + (2 / C if C is not None else 0))
        fz = self.link(z, p)
        w_i = [lam * a for a in fz]
        dot_i = ctx.fsum(a * b for a, b in zip(w_i, th)) + (lam * (xp + xn) if C else 0)
        kappa = 1.0
        if vv == 0 or dot_i >= vv:
            w, eta, case_ii = w_i, num(0), False
        else:
            # infeasible iff (z, E) is a nonpositive multiple of (th, C xi'): 2-norm Gram test
            zz2 = ctx.fsum(a * a for a in z) + (2 if C is not None else 0)
            tt2 = ctx.fsum(a * a for a in th) + (C * C * xi2 if C is not None else 0)
            zt = ctx.fsum(a * b for a, b in zip(z, th)) + (C * (xp + xn) if C else 0)
            D = zz2 * tt2 - zt * zt
            # a float64 th may be off by the Hoelder share in every coordinate: where
            # sin^2(z, th) is within it, a float form may decide feasibility the other way
            # (compared at the context's precision: with a soft margin's tiny C, tt2 is of
            # C^2's size and zz2 tt2 below float64's range, where 0 <= 0 doubted every update)
            self.doubt = self.doubt or D <= 4 * hoelder_share(p) * hoelder_share(p) * (zz2 * tt2)
            if D <= zz2 * tt2 * ctx.ldexp(1, -(ctx.prec // 2)):
                return None
            if self.doubt and model is not None:
                model.lost = True   # a nearly infeasible problem (3) solved
            kappa = float((zz2 * tt2 + zt * zt) / D)
            lam, eta = self._newton(z, th, vv, xp, xn, xi2)
            phi = [lam * a + eta * b for a, b in zip(z, th)]
            w, case_ii = self.link(phi, p), True
            self.solved = (z, th, v, self.xis, lam, eta, phi)
        if C is not None:
            new_xi = {i: eta * s for i, s in self.xis.items() if eta != 0}
            new_xi[pos] = new_xi.get(pos, num(0)) + lam / C
            new_xi[neg] = new_xi.get(neg, num(0)) + lam / C
            self.xis = new_xi
        self.w = w
        return (pair_bias(self.dot(pos) + self.xi(pos), self.dot(neg) - self.xi(neg)),
                kappa, case_ii)

    def _newton(self, z: list[Any], th: list[Any], vv: Any, xp: Any, xn: Any,
                xi2: Any) -> tuple[Any, Any]:
        """Maximise the dual (18) (with the soft margin's terms): a float64 Newton from
        (0, 1) gives the start, mpmath's refines it to residual 2^-(bits/2) (newton_dual)."""
        ctx, p, C = self.ctx, self.p, self.C
        soft = None if C is None else (xp + xn, xi2, C)
        start = (ctx.mpf(0), ctx.mpf(1))
        try:
            fl = FloatOps()
            lam, eta = newton_dual(fl, [float(a) for a in z], [float(a) for a in th],
                                   float(vv), float(p), None if soft is None else
                                   tuple(float(v) for v in soft), (0.0, 1.0), 2.0 ** -40)
            if lam > 0 and eta > 0:
                start = (ctx.mpf(lam), ctx.mpf(eta))
        except (ArithmeticError, ValueError):
            pass
        mp = MpOps(ctx)
        out = newton_dual(mp, z, th, vv, p, soft, start, ctx.ldexp(1, -(ctx.prec // 2)))
        self.newton_steps += mp.steps
        return out
