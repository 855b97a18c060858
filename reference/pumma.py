"""PUMMA_p(delta) (Ishibashi, Hatano, Takeda, "Online Learning of Approximate
Maximum p-Norm Margin Classifiers with Bias", COLT 2008), exact.  SPEC.md, "romma and pumma".

Notation: q = p / (p - 1); f(w)_i = sign(w_i) |w_i|^(q-1) / ||w||_q^(q-2) (so f(w).w =
||w||_q^2, ||f(w)||_p = ||w||_q) and f^-1(th)_i = sign(th_i) |th_i|^(p-1) / ||th||_p^(p-2)
(Lemma 3).  For p = 2 both are the identity.

State: the pair (x_pos, x_neg) (the last positive and negative examples that caused an
update; stored as example indices ``pos``, ``neg``), the weight w, the bias b, and with the
soft margin (C not none) one slack xi_j per example index.

**Start-up** (section 3, "Initialization"; w = 0 throughout):
  - no positive stored yet: the hypothesis is (w, b) = (0, -1): score -1;
  - a positive stored, no negative yet: (0, +1): score +1.
  Mistake iff y score <= 0, as always.  The trial that first presents a positive example
  (resp. a negative one) stores it, and that is an **update** (the state changed) even when
  it is not a mistake (the first negative example when no positive has come yet: score -1,
  correct, stored).  The trial that completes the pair computes (w_1, b_1) from problem (3)
  with v = 0 (case (i)).  If that problem is infeasible (x_pos = x_neg without soft margin)
  the example is not stored and the trial is not an update.  Once both are stored, start-up
  is over for good.

**Trial t on example j** after start-up (x = x_j, y = y_j):

    score = w.x + b                                  (mistake iff y score <= 0)
    update iff y score + xi_j < 1 - delta            (xi_j = 0 without soft margin)
    update: replace x_pos by x (y = +1) or x_neg by x (y = -1), then with v = w,
            z = x_pos - x_neg, th = f(v):
        w <- argmin 1/2 ||w'||_q^2  s.t.  w'.z >= 2,  w'.th >= ||v||_q^2        (3)
        b <- -(w.x_pos + w.x_neg) / 2                                           (20)

(the two constraints of (3), w'.x_pos + b' >= 1 and w'.x_neg + b' <= -1, have equal
multipliers by (6), which leaves w'.z >= 2 and fixes b' by (20)).  Lagrangian (4):
1/2||w||_q^2 + lam (2 - w.z) + eta (||v||_q^2 - w.th), so f(w) = lam z + eta th, i.e.
w = f^-1(lam z + eta th), with lam > 0 (section 3.1) and eta >= 0:

  case (i)  eta = 0:  w = lam f^-1(z), lam = 2 / ||z||_p^2                        (15)
            taken iff  w.th >= ||v||_q^2  (always when v = 0)
  case (ii) eta > 0:  (lam, eta) maximise the dual (18)
            L*(lam, eta) = -1/2 ||lam z + eta th||_p^2 + 2 lam + eta ||v||_q^2,
            i.e. f^-1(lam z + eta th).z = 2 and f^-1(lam z + eta th).th = ||v||_q^2   (17)
            p = 2: closed form (19), D = ||v||^2 ||z||^2 - (v.z)^2:
                   lam = ||v||^2 (2 - v.z) / D,  eta = (||v||^2 ||z||^2 - 2 v.z) / D
            p > 2: Newton on (18) from (lam, eta) = (0, 1) (where w = v) with the EXACT
                   Hessian -[z, th]^T J [z, th], J = the Jacobian of f^-1 at
                   phi = lam z + eta th:
                   J = (p-1) ||phi||_p^(2-p) diag(|phi_i|^(p-2))
                       - (p-2) ||phi||_p^(2-2p) s s^T,    s_i = sign(phi_i) |phi_i|^(p-1)
                   (the paper's second derivatives keep only the diagonal terms; the
                   maximiser is the same), a step halved while it decreases L* (only while
                   it is larger than 2^-20 relative); stopped when the KKT residual
                   |2 - w.z| / 2 + |vv - w.th| / vv (vv = ||v||_q^2, w = f^-1(phi), soft-
                   margin terms included) is <= 2^-(bits/2) (a float64 Newton, stopped at
                   2^-40, gives the start).  Where the optimum has w_i = 0, Newton
                   converges only linearly (J vanishes there), hence a residual criterion.
                   Where the Hessian is singular (phi with one nonzero
                   coordinate: J vanishes off phi's support for p > 2), a ridge
                   2^-20 (trace) is added and the damping keeps the step an ascent.
  infeasible: z = 0, or in case (ii) z (with its soft-margin part) is a nonpositive
            multiple of th: nothing changes, the trial is not an update.

The current pair members (example indices ``pos`` and ``neg``) have y (w.x + b) + xi = 1
exactly (Lemma 4), so they never update and their update test is not fragile; a fast form
must skip their update test (re-solving (3) with the same pair is a no-op in exact
arithmetic, and a float64 1 - 2^-53 must not count as an update).

**Soft margin** (section 4.2, C > 0; "none" = hard margin).  Example j gets slack xi_j;
the problem is (24)-(25): 1/2||w||_q^2 + C/2 sum_j xi_j^2 with y (w.x + b) >= 1 - xi
on the pair and the linear constraint w.th + C sum_j xi'_j xi_j >= ||v||_q^2 + C ||xi'||^2
(xi' the previous slacks).  It is problem (3) in the product space (w, xi) with
F(w, xi) = 1/2||w||_q^2 + C/2 ||xi||_2^2 and Z = (z, e_pos + e_neg), Th = (th, C xi'):
  w = f^-1(lam z + eta th),  xi = lam (e_pos + e_neg) / C + eta xi'
  case (i): lam = 2 / (||z||_p^2 + 2/C);  the dual gains -1/(2C) ||lam E + eta C xi'||^2;
  b = -(w.x_pos + w.x_neg + xi_pos - xi_neg) / 2;  update iff y (w.x + b) + xi_j < 1 - delta.
For p = 2 this is the hard-margin PUMMA on x~_j = (x_j, y_j e_j / sqrt(C)) (e_j: the unit
vector of example INDEX j, the same across epochs): kernel k(x_i, x_j) + [i = j] / C, and
xi_j = alpha_j y_j / C.  The score (prediction) is w.x + b on the original x.

p = 2 runs in dual coordinates w = sum_j alpha_j phi(x_j) (alpha_j signed), any kernel;
p > 2 runs on the primal w (linear kernel only) in mpmath.

``final``: {"w": [n] (linear kernel) or "alpha": [T] (other kernels; p = 2 only),
            "b": number, "pos": example index or None, "neg": example index or None,
            "xi": [T] (only when C is not none)}.
Before start-up completes, w = 0 and b = -1 or +1 as above.

Numbers: as ``reference.romma`` (parameter ``numbers``): Fraction for p = 2 with a rational
kernel and rational C, mpmath otherwise (p > 2 always).  Fast forms' Newton (p > 2) must
stop only once that KKT residual is <= NEWTON_TOLERANCE (2^-40) times ``kkt_scale`` (the
magnitude of its terms relative to its right-hand sides, 1 where nothing cancels); the
fragile rule allows that much (times kappa) per update.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..params import ParamSchema
from ..rounding import score_error_bound
from ..trace import Trace
from .common import Gram, OptionalRational, TrialRecord, check_epochs, exact_data, norm_param
from .romma import (
    DELTA,
    FALLBACK_RHO,
    NUMBERS,
    DualWeights,
    ErrorModel,
    NotConverged,
    Numbers,
    Rows,
    ShadowNotes,
    StepError,
    bound,
    dual_bounds,
    dual_final,
    near_singular,
    remember_bounds,
    run_modes,
    sharpen_by_shadows,
    solve_2norm,
)

PARAMS = ParamSchema(
    norm_param("the margin's norm p (q = p/(p-1) for w)"),
    DELTA,
    OptionalRational("C", "rational", None, "2-norm soft margin constant (section 4.2); "
                      "none: hard margin", check=lambda v: v > 0, requirement="> 0 or none"),
    NUMBERS,
)

#: The relative Newton step at which a fast form may stop (p > 2); the fragile rule's share.
NEWTON_TOLERANCE = 2.0 ** -40
#: Newton iterations before the reference gives up (it raises: never seen).
NEWTON_MAX_STEPS = 400


def pumma(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
          delta: Any = 0, C: Any = None, numbers: Any = "auto",
          record_scores: bool = False) -> Trace:
    """Run PUMMA_p(delta) over ``epochs`` passes of (X, y); returns the reference trace."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.resolve(dict(p=p, delta=delta, C=C, numbers=numbers))
    two = par["p"] == 2
    if not two and not kern.is_linear:
        raise ParamError("parameter p > 2 needs the linear kernel (kernels work for p = 2)")
    rational = two and kern.is_rational
    if par["numbers"] == "fraction" and not rational:
        raise ParamError("parameter numbers=fraction needs p = 2 and a rational kernel")

    shadow = ShadowNotes()

    def run(num: Numbers) -> tuple[Trace, float]:
        shadow.clear()
        return _run(rows, labels, epochs, kern, par, num, True, shadow=shadow)

    trace = run_modes(par["numbers"], rational, epochs * len(rows), run)
    if two and par["C"] is None:  # SPEC.md 14.5: shadow runs for the hard margin, p = 2
        trace.fragile = sharpen_by_shadows("pumma", X, y, epochs, kern.spec, par, trace,
                                           shadow.singular, shadow.thresholds)
    elif two:   # the soft margin: the update test's left side y score + xi_j, measured
        from ..fast.pumma import forced_run

        def runner(form: str, Xa: Any, ya: Any) -> tuple[Trace, list[float]]:
            return forced_run(form, Xa, ya, epochs, kern.spec, par, trace.updates)

        tested = shadow.tested
        threshold = 1 - par["delta"]
        thresholds = [[0] if v is None else [0, threshold] for v in tested]
        trace.fragile = sharpen_by_shadows("pumma", X, y, epochs, kern.spec, par, trace,
                                           shadow.singular, thresholds, tested, runner)
    if not record_scores:
        trace.scores = None
    return trace


def hoelder_share(p: Any) -> float:
    """(32 NEWTON_TOLERANCE)^(1/(p-1)): how far, relative to the state's scale, a float64
    Newton's w or th may sit from the exact one where the optimum is sparse (SPEC.md 14.5;
    the map phi -> w is Hoelder continuous of order 1/(p - 1) there).  A stated rule."""
    return (32 * NEWTON_TOLERANCE) ** (1 / (float(p) - 1))


def pair_bias(wpos: Any, wneg: Any) -> Any:
    """(20): b = -(w.x_pos + w.x_neg) / 2, given w.x~_pos and w.x~_neg (with the slacks)."""
    return -(wpos + wneg) / 2


class _State2(DualWeights):
    """p = 2: w~ = sum_i alpha_i x~_i in dual coordinates, with the soft margin's x~."""

    def __init__(self, gram: Gram, num: Numbers, C: Any, T: int):
        super().__init__(Rows(gram, num, T), num)
        self.invC = None if C is None else 1 / num(C)
        self.doubt = False                  # the last problem (3) was nearly infeasible
        self.ill_conditioned = False        # the last problem (3) was romma.near_singular
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


class _StateP:
    """p > 2: the primal w (mpmath), the slacks xi by example index."""

    def __init__(self, rows: list[list[Fraction]], num: Numbers, p: Fraction, C: Any):
        self.num = num
        ctx = num.ctx
        self.ctx = ctx
        self.rows = [[num(v) for v in row] for row in rows]
        self.p = num(p)
        self.q = self.p / (self.p - 1)
        self.C = None if C is None else num(C)
        self.w = [num(0)] * len(rows[0])
        self.xis: dict[int, Any] = {}   # xi_j by example index (0 where absent)
        self.newton_steps = 0
        self.doubt = False   # the last problem (3) was nearly infeasible (SPEC.md 14.5)

    def dot(self, j: int) -> Any:
        return self.ctx.fsum(a * b for a, b in zip(self.w, self.rows[j]))

    #: Problem (3) is never ``romma.near_singular``'s case here (p > 2: ``doubt`` says it).
    ill_conditioned = False

    @property
    def terms(self) -> int:
        """How many terms a score's dot product has beyond the kernel's: n."""
        return len(self.w)

    def xi(self, j: int, label: int = 0) -> Any:
        """xi_j (``label``: unused, as ``_State2.xi`` takes it)."""
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
        return _norm2(parts)

    def norm(self, v: list[Any], r: Any) -> Any:
        ctx = self.ctx
        return ctx.power(ctx.fsum(ctx.power(abs(a), r) for a in v), 1 / r) if any(v) else 0 * r

    def link(self, v: list[Any], r: Any) -> list[Any]:
        """f^-1 (r = p) or f (r = q): sign(v_i) |v_i|^(r-1) / ||v||_r^(r-2)."""
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
        ``model``'s state (SPEC.md 14.5; ``m`` is _State2's, unused here)."""
        ctx, num, p, C = self.ctx, self.num, self.p, self.C
        self.doubt = False
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
            self.doubt = self.doubt or \
                float(D) <= 4 * hoelder_share(p) ** 2 * float(zz2 * tt2)
            if D <= zz2 * tt2 * ctx.ldexp(1, -(ctx.prec // 2)):
                return None
            if self.doubt and model is not None:
                model.lost = True   # a nearly infeasible problem (3) solved
            kappa = float((zz2 * tt2 + zt * zt) / D)
            lam, eta = self._newton(z, th, vv, xp, xn, xi2)
            w = self.link([lam * a + eta * b for a, b in zip(z, th)], p)
            case_ii = True
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
        mp = _MpOps(ctx)
        out = newton_dual(mp, z, th, vv, p, soft, start, ctx.ldexp(1, -(ctx.prec // 2)))
        self.newton_steps += mp.steps
        return out


class FloatOps:
    steps = 0
    singular = 2.0 ** -200   # newton_dual's "Hessian singular" threshold (relative)

    @staticmethod
    def power(x: float, r: float) -> float:
        return math.pow(x, r)

    @staticmethod
    def sign(x: float) -> float:
        return (x > 0) - (x < 0)

    fsum = staticmethod(math.fsum)


class _MpOps:
    def __init__(self, ctx: Any):
        self.power, self.sign, self.fsum = ctx.power, ctx.sign, ctx.fsum
        self.steps = 0
        # near the working precision: a fixed 2^-200 stalled the linear convergence to a
        # sparse optimum (the ridge took over while the residual was still 2^-300)
        self.singular = ctx.ldexp(1, -max(200, ctx.prec - 32))


def _pnorm(ops: Any, v: list[Any], r: Any) -> Any:
    total = ops.fsum(ops.power(abs(a), r) for a in v)
    return ops.power(total, 1 / r) if total else 0 * r


def kkt_scale(ops: Any, w: list[Any], z: list[Any], th: list[Any], vv: Any, lam: Any,
              eta: Any, soft: Any, invC: Any) -> Any:
    """max(1, M_z / 2, M_th / vv): the magnitudes M of the terms of the KKT residual's two
    parts (2 - w.z and vv - w.th, soft-margin terms included: soft = (E.xi', ||xi'||^2, C),
    invC = 1/C) relative to their right-hand sides; 1 where nothing cancels.  A float64
    residual cannot fall below about u times it (``newton_dual``'s ``scaled``)."""
    mz = ops.fsum(abs(a * b) for a, b in zip(w, z))
    mt = ops.fsum(abs(a * b) for a, b in zip(w, th))
    if soft is not None:
        E, xi2, C = soft
        mz += abs(2 * lam * invC) + abs(eta * E)
        mt += abs(lam * E) + abs(eta * C * xi2)
    return max(1, mz / 2, mt / vv)


def newton_dual(ops: Any, z: list[Any], th: list[Any], vv: Any, p: Any, soft: Any,
                start: tuple[Any, Any], tol: Any, max_steps: int | None = None,
                scaled: bool = False) -> tuple[Any, Any]:
    """(lam, eta) maximising L*(lam, eta) = -1/2 ||lam z + eta th||_p^2 + 2 lam + eta vv
    [- 1/(2C) ||lam E + eta C xi'||^2 with soft = (E.xi', ||xi'||^2, C)]: damped Newton with
    the exact Hessian (module docstring), stopped when the KKT residual of (17),
    |2 - w.z| / 2 + |vv - w.th| / vv (w = f^-1(phi), soft-margin terms included), is
    <= tol.  (A criterion on the step fails where the optimum has phi_i = 0: J vanishes
    there and Newton converges only linearly in phi_i, while the residual, ~ |phi_i|^(p-1),
    still falls geometrically.)  With ``max_steps`` given, returns after that many steps.
    ``scaled`` (float64 callers): the tolerance is taken relative to the magnitude of the
    residual's terms, times max(1, sum_i |w_i z_i| / 2, sum_i |w_i th_i| / vv) (soft-margin
    terms included), which :func:`kkt_scale` computes: where w.z = 2 is a cancellation of
    terms of size |w||z| >> 2 (found: w ~ 1e23, z ~ 1 after an update on a tiny z), no float64
    w reaches an absolute residual of 2^-40, while its relative error is at rounding."""
    dual = _Dual(ops, z, th, vv, p, soft)
    lam, eta = start
    for _ in range(max_steps or NEWTON_MAX_STEPS):
        w, gl, ge, hessian = dual.derivatives(lam, eta)
        residual = abs(gl) / 2 + abs(ge) / vv        # the KKT residual of (17)
        if residual <= tol or scaled and residual <= tol * kkt_scale(
                ops, w, z, th, vv, lam, eta, soft, dual.invC):
            return lam, eta
        dl, de = _newton_direction(ops, gl, ge, *hessian)
        t = dual.damping(lam, eta, dl, de)
        lam, eta = lam + t * dl, eta + t * de
        ops.steps += 1
    if max_steps:
        return lam, eta
    raise NotConverged("PUMMA: Newton on the dual (18) did not converge (SPEC.md 14.5)")


class _Dual:
    """The dual (18) of problem (3), L*(lam, eta) = -1/2 ||phi||_p^2 + 2 lam + eta vv,
    phi = lam z + eta th [- 1/(2C) ||lam E + eta C xi'||^2, soft = (E.xi', ||xi'||^2, C)],
    in the arithmetic ``ops`` (``FloatOps`` or mpmath's)."""

    def __init__(self, ops: Any, z: list[Any], th: list[Any], vv: Any, p: Any, soft: Any):
        self.ops, self.z, self.th, self.vv, self.p, self.soft = ops, z, th, vv, p, soft
        self.invC = 0 if soft is None else 1 / soft[2]

    def value(self, lam: Any, eta: Any) -> Any:
        """L*(lam, eta) (18)."""
        phi = [lam * a + eta * b for a, b in zip(self.z, self.th)]
        out = -_pnorm(self.ops, phi, self.p) ** 2 / 2 + 2 * lam + eta * self.vv
        if self.soft is not None:
            E, xi2, C = self.soft
            out -= ((2 * lam * lam + 2 * lam * eta * C * E + eta * eta * C * C * xi2)
                    * self.invC / 2)
        return out

    def derivatives(self, lam: Any, eta: Any) -> tuple[list[Any], Any, Any,
                                                        tuple[Any, Any, Any]]:
        """(w, gl, ge, (hll, hle, hee)) at (lam, eta): w = f^-1(phi), the gradient of L*
        (gl = 2 - w.z, ge = vv - w.th: the two equations of (17)) and minus its Hessian
        [[hll, hle], [hle, hee]] = [z, th]^T J [z, th] with J the Jacobian of f^-1 at phi
        (module docstring), soft-margin terms included."""
        ops, z, th, p = self.ops, self.z, self.th, self.p
        phi = [lam * a + eta * b for a, b in zip(z, th)]
        n = _pnorm(ops, phi, p)
        if n == 0:        # phi = 0 (z = 0 and v = 0, soft margin): f^-1 = 0, J = 0
            a1 = a2 = 0 * n
            s = d = g = [0 * n] * len(phi)
        else:
            a1 = (p - 1) * ops.power(n, 2 - p)
            a2 = (p - 2) * ops.power(n, 2 - 2 * p)
            s = [ops.sign(c) * ops.power(abs(c), p - 1) for c in phi]
            d = [ops.power(abs(c), p - 2) for c in phi]
            g = [c * ops.power(n, 2 - p) for c in s]  # f^-1(phi): the current w
        gl = 2 - ops.fsum(a * b for a, b in zip(g, z))
        ge = self.vv - ops.fsum(a * b for a, b in zip(g, th))
        sz = ops.fsum(a * b for a, b in zip(s, z))
        st = ops.fsum(a * b for a, b in zip(s, th))
        hll = a1 * ops.fsum(c * a * a for c, a in zip(d, z)) - a2 * sz * sz
        hle = a1 * ops.fsum(c * a * b for c, a, b in zip(d, z, th)) - a2 * sz * st
        hee = a1 * ops.fsum(c * b * b for c, b in zip(d, th)) - a2 * st * st
        if self.soft is not None:
            E, xi2, C = self.soft
            gl -= 2 * lam * self.invC + eta * E
            ge -= lam * E + eta * C * xi2
            hll += 2 * self.invC
            hle += E
            hee += C * xi2
        return g, gl, ge, (hll, hle, hee)

    def damping(self, lam: Any, eta: Any, dl: Any, de: Any) -> Any:
        """The step's factor t: 1 near the optimum (a step of at most 2^-20 relative), else
        halved while L* falls (down to 2^-60)."""
        t = 1
        if abs(dl) > 2.0 ** -20 * abs(lam) or abs(de) > 2.0 ** -20 * max(abs(eta), 1):
            base = self.value(lam, eta)              # far from the optimum: damp until L* rises
            while self.value(lam + t * dl, eta + t * de) < base and t > 2.0 ** -60:
                t /= 2
        return t


def _newton_direction(ops: Any, gl: Any, ge: Any, hll: Any, hle: Any,
                      hee: Any) -> tuple[Any, Any]:
    """The Newton step (dl, de) solving [[hll, hle], [hle, hee]] (dl, de) = (gl, ge), with a
    ridge where that matrix (minus the Hessian) is singular: phi sparse, J = 0 off its
    support (module docstring)."""
    det = hll * hee - hle * hle
    if not det > ops.singular * (hll * hee):
        mu = 2.0 ** -20 * (abs(hll) + abs(hee)) or 1 + 0 * hll
        hll, hee = hll + mu, hee + mu
        det = hll * hee - hle * hle
    return (hee * gl - hle * ge) / det, (hll * ge - hle * gl) / det


def _run(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
         par: dict[str, Any], num: Numbers, record_scores: bool,
         observer: Any = None, shadow: ShadowNotes | None = None) -> tuple[Trace, float]:
    """The trial loop (module docstring): start-up (``_start_up``), then the score, the
    mistake test, the update test and problem (3) with the bias (20).  The state is
    ``_State2`` (p = 2) or ``_StateP``; ``_PummaErrors`` is the float64 error model along
    the run; ``shadow`` receives what ``romma.sharpen_by_shadows`` needs.  Returns the trace
    and the reference's own largest relative error (``romma.run_modes``)."""
    two = par["p"] == 2
    st: Any = (_State2(Gram(kern, rows), num, par["C"], len(rows)) if two
               else _StateP(rows, num, par["p"], par["C"]))
    threshold = num(1 - par["delta"])
    errors = _PummaErrors(rows, kern, num, par, threshold)
    record = TrialRecord(labels, epochs, record_scores)
    shadow = ShadowNotes() if shadow is None else shadow
    pair = _Pair(num)

    def report(t: int, case_ii: bool) -> None:
        if observer:
            observer(_state(t, st, pair, rows, labels, case_ii))

    for t, j, label in record.trials():
        if not pair.complete:
            _start_up(t, j, label, pair, st, errors, record, shadow, report)
            continue
        score = st.dot(j) + pair.b                       # w.x + b
        margin = label * score
        slack = st.xi(j, label)                          # xi_j (0 without soft margin)
        record.score(score)
        member = j == pair.pos or j == pair.neg          # Lemma 4: y score + xi_j = 1 exactly
        test = None if member else threshold - slack     # the update test (none for members)
        shadow.trial(test, None if member else margin + slack)
        if errors.fragile(st, j, margin, slack, test):
            record.flag(t)
        if margin <= 0:                                  # mistake iff y score <= 0
            record.mistakes.append(t)
        if not member and margin + slack < threshold:    # update iff y score + xi_j < 1 - delta
            pos, neg = (j, pair.neg) if label == 1 else (pair.pos, j)    # x replaces one
            m = errors.operations(st)
            result = _solve(t, pos, neg, st, errors, m, record, shadow)  # problem (3), (20)
            if result is not None:
                b, kappa, case_ii = result
                pair.take(pos, neg, b)
                errors.updated(st, pos, neg, case_ii, kappa, m)
                record.updates.append(t)
                report(t, case_ii)
    final = dict(st.weights(rows, kern), b=pair.b, pos=pair.pos, neg=pair.neg)
    if par["C"] is not None:
        final["xi"] = st.slacks(labels)
    trace = record.trace("pumma", kern, dict(par, numbers=num.label), final)
    remember_bounds(trace, errors.final_bounds(final, st), errors.model.lost)
    return trace, errors.model.worst_ref


class _PummaErrors:
    """The float64 error model along a PUMMA run (``romma.ErrorModel``): each score's error
    bound, and b's (the magnitude of its terms and its share of the boundary slack); p > 2
    adds a float64 Newton's tolerance per update and the Hoelder share on each score."""

    def __init__(self, rows: list[list[Fraction]], kern: Kernel, num: Numbers,
                 par: dict[str, Any], threshold: Any):
        self.rows, self.kern, self.par = rows, kern, par
        self.two = par["p"] == 2
        self.model = ErrorModel(ref_unit=num.unit)
        self.threshold_error = score_error_bound(1, float(threshold))
        self.newton = 0.0 if self.two else NEWTON_TOLERANCE
        self.ref_newton = 0.0 if self.two else 2.0 ** -(num.bits // 2 - 8)
        self.b_magnitude = 0.0      # the magnitude of b's terms, for the rounding bound
        self.b_slack = 0.0          # b's share of the boundary slack
        self.row_sums = [math.fsum(abs(float(v)) for v in row) for row in rows]  # sum |x_jd|
        self.max_row_sum = max(self.row_sums)
        self.hoelder = 0.0 if self.two else hoelder_share(par["p"])

    def operations(self, st: Any) -> int:
        """The roundings of a float64 score w.x_j + b."""
        return (len(self.rows[0]) + 8) * self.kern.depth + st.terms + 8

    def score_error(self, st: Any, j: int, slack: Any) -> float:
        """How far a float64 score (and, p = 2, its slack a_j / C) may be off: p = 2 from
        the terms' magnitudes and the absolute slacks; p > 2 with each w_d within the final
        bounds' rule applied to this state (|w_d| + ||w~||_2, plus the Hoelder share)."""
        m, model = self.operations(st), self.model
        if self.two:
            invC = 0.0 if st.invC is None else float(st.invC)
            magnitude = st.magnitude(j) + self.b_magnitude + st.size[j] * invC
            return (model.score_error(m, magnitude) + st.slack_error(j)
                    + 2 * st.slack[j] * invC + self.b_slack)
        row_sum, scale = self.row_sums[j], st.scale()
        magnitude = st.magnitude(j) + scale * row_sum + self.b_magnitude + abs(float(slack))
        return (model.score_error(m, magnitude)
                + scale * self.hoelder * (row_sum + self.max_row_sum))

    def fragile(self, st: Any, j: int, margin: Any, slack: Any, threshold: Any) -> bool:
        """Whether a float64 form may decide the mistake test, or the update test against
        ``threshold`` (None: none), otherwise (``ErrorModel.tests_fragile``)."""
        return self.model.tests_fragile(margin, self.score_error(st, j, slack), threshold,
                                        self.threshold_error)

    def started(self, st: Any, pair: _Pair) -> None:
        """After the update that completes the pair (case (i) from v = 0)."""
        self.b_magnitude = st.pair_magnitude(pair.pos, pair.neg)
        self.model.update(False, 1.0, len(self.rows[0]) + 8, self.newton, self.ref_newton,
                          rho_lam=st.rho_lam if self.two else None)

    def updated(self, st: Any, pos: int, neg: int, case_ii: bool, kappa: float,
                m: int) -> None:
        """After an update (``ErrorModel.update``; Newton's tolerance times kappa)."""
        self.b_magnitude = st.pair_magnitude(pos, neg)
        if self.two:
            invC = 0.0 if st.invC is None else float(st.invC)
            self.b_slack = (st.slack_error(pos) + st.slack_error(neg)
                            + 2 * (st.slack[pos] + st.slack[neg]) * invC) / 2
        self.model.update(case_ii, kappa, m, self.newton * kappa, self.ref_newton * kappa,
                          rho_lam=st.rho_lam if self.two else None)

    def final_bounds(self, final: dict[str, Any], st: Any) -> dict[str, Any]:
        """How far a float64 form's final values may lie from ``final`` (``_final_bounds``)."""
        two = self.two
        return _final_bounds(self.model.rho, final, st.size if two else [], self.rows,
                             self.kern, self.par, self.b_magnitude, None if two else st,
                             st.slack if two else None, self.b_slack)


class _Pair:
    """The hypothesis's pair (x_pos, x_neg), as example indices (None until stored), and
    its bias b; before start-up completes, w = 0 and b = -1 or +1 (module docstring)."""

    def __init__(self, num: Numbers):
        self.num = num
        self.pos: int | None = None
        self.neg: int | None = None
        self.b = num(-1)

    @property
    def complete(self) -> bool:
        """Both stored: start-up is over for good."""
        return self.pos is not None and self.neg is not None

    def take(self, pos: int | None, neg: int | None, b: Any = None) -> None:
        """The new pair; ``b`` None: half a pair, b = +1 with a positive only, else -1."""
        self.pos, self.neg = pos, neg
        self.b = self.num(1 if pos is not None else -1) if b is None else b


def _start_up(t: int, j: int, label: int, pair: _Pair, st: Any, errors: _PummaErrors,
              record: TrialRecord, shadow: ShadowNotes,
              report: Callable[[int, bool], None]) -> None:
    """A trial before the pair is complete (section 3, "Initialization"): score b, and the
    first positive (resp. negative) example is stored, an update; the one that completes
    the pair solves problem (3) with v = 0 (case (i)), and is not stored if it is
    infeasible."""
    score = pair.b                                       # w = 0
    record.score(score)
    shadow.trial()
    if label * score <= 0:
        record.mistakes.append(t)
    if (pair.pos if label == 1 else pair.neg) is not None:
        return
    pos, neg = (j, pair.neg) if label == 1 else (pair.pos, j)
    if pos is None or neg is None:                       # half a pair: store it
        pair.take(pos, neg)
        record.updates.append(t)
        return
    result = _solve(t, pos, neg, st, errors, errors.operations(st), record, shadow)
    if result is not None:
        pair.take(pos, neg, result[0])
        errors.started(st, pair)
        record.updates.append(t)
        report(t, False)


def _solve(t: int, pos: int, neg: int, st: Any, errors: _PummaErrors, m: int,
           record: TrialRecord, shadow: ShadowNotes) -> tuple[Any, float, bool] | None:
    """Problem (3) and the bias (20) for the pair (``_State2.update``, ``_StateP.update``):
    (b, kappa, case_ii), or None if infeasible; trial t is fragile where a float64 form may
    call it infeasible (``doubt``), shadowed no further where it is ill-conditioned."""
    result = st.update(pos, neg, errors.model, m)
    if st.ill_conditioned:
        shadow.singular.append(t)
    if st.doubt:
        record.flag(t)
    return result


def _state(t: int, st: Any, pair: _Pair, rows: list[list[Fraction]], labels: list[int],
           case_ii: bool) -> dict[str, Any]:
    """The state after the update on trial t, for the properties (``history``)."""
    out = {"t": t, "b": pair.b, "pos": pair.pos, "neg": pair.neg, "case_ii": case_ii}
    if isinstance(st, _State2):
        out["alpha"] = list(st.alpha)
        out["w"] = st.primal(rows)
    else:
        out["w"] = list(st.w)
    out["xi"] = st.slacks(labels)
    return out


def history(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
            **params: Any) -> tuple[Trace, list[dict[str, Any]]]:
    """The reference trace and the state after every update that computes (w, b) (start-up's
    first half excluded): dicts with t, w (the primal w; for p = 2 from the dual alpha, which
    is also given), b, pos, neg, xi (0 without soft margin), case_ii."""
    rows, labels = exact_data(X, y)
    kern = parse_kernel(kernel)
    par = PARAMS.resolve(params)
    states: list[dict[str, Any]] = []
    rational = par["p"] == 2 and kern.is_rational

    def run(num: Numbers) -> tuple[Trace, float]:
        states.clear()
        return _run(rows, labels, check_epochs(epochs), kern, par, num, True, states.append)

    return run_modes(par["numbers"], rational, epochs * len(rows), run), states


def _norm2(values: list[float]) -> float:
    """||values||_2 without overflowing on the way (inf only if the norm itself is)."""
    top = max((abs(v) for v in values), default=0.0)
    if top == 0 or not top < math.inf:
        return top
    return top * math.sqrt(math.fsum((v / top) ** 2 for v in values))


def _final_bounds(rho: float, final: dict[str, Any], primal_size: list[float],
                  rows: list[list[Fraction]], kern: Kernel, par: dict[str, Any],
                  b_magnitude: float, primal: Any, slack: list[float] | None,
                  b_slack: float) -> dict[str, Any]:
    T = len(rows)
    out: dict[str, Any] = {}
    if primal is None:
        out.update(dual_bounds(rho, primal_size, rows, kern.is_linear, final, slack))
    else:
        # p > 2: relative to |w_d| plus the state's scale ||w~||_2 = ||(w, sqrt(C) xi)||_2
        # (a Newton residual moves every coordinate by ~ rho ||w~||, also one that is 0)
        parts = [float(v) for v in final["w"]]
        if "xi" in final:
            root_c = math.sqrt(float(par["C"]))
            parts += [root_c * float(v) for v in final["xi"]]
        scale = _norm2(parts)
        # Two Newton runs that both stop at a residual <= NEWTON_TOLERANCE may still differ
        # by more than the residual where the optimum is sparse: the map phi -> w is only
        # Hoelder continuous there, of order q - 1 = 1/(p - 1).  A stated rule (SPEC.md),
        # with a factor 32 on the tolerance.
        hoelder = scale * hoelder_share(par["p"])
        out["final.w"] = [bound(rho, abs(float(v)) + scale, 8, v) + hoelder
                          for v in final["w"]]
        b_slack += hoelder * max(math.fsum(abs(float(v)) for v in r) for r in rows)
    out["final.b"] = bound(rho, b_magnitude, T + 16, final["b"]) + b_slack
    if "xi" in final:
        invC = 1 / float(par["C"])
        out["final.xi"] = [bound(rho, primal_size[i] * invC if slack else abs(float(v)), 4, v)
                           + 2 * (slack[i] * invC if slack else 0.0)
                           for i, v in enumerate(final["xi"])]
    return out


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """How far a float64 form's final w (or alpha), b and xi may lie from the exact ones.

    For a trace the reference returned, the bounds its run derived (``trace.final_bounds``:
    the ErrorModel's final rho on the magnitudes of each value's terms, as reference.romma).
    For a trace read from a file: rho = FALLBACK_RHO on magnitudes rebuilt from the values
    (w_d: |w_d| + ||w||_2 max_i |x_id| T; b: |b| + ||w||_2 max_i ||x_i||_2 + the slacks).
    """
    known = trace.final_bounds
    if known is not None:
        return known
    rows = [[abs(float(v)) for v in row] for row in
            (X.toarray() if hasattr(X, "toarray") else X).tolist()]
    T = len(rows)
    out: dict[str, Any] = {}
    norm = 0.0
    if "w" in trace.final:
        w = trace.final["w"]
        norm = sum(float(v) ** 2 for v in w) ** 0.5
        out["final.w"] = [bound(FALLBACK_RHO, abs(float(v)) + norm * T
                                * max(r[d] for r in rows), T + 8, v) for d, v in enumerate(w)]
    if "alpha" in trace.final:
        out["final.alpha"] = [bound(FALLBACK_RHO, abs(float(a)), 2, a)
                              for a in trace.final["alpha"]]
        norm = sum(abs(float(a)) for a in trace.final["alpha"])
    xi = trace.final.get("xi") or []
    if xi:
        out["final.xi"] = [bound(FALLBACK_RHO, abs(float(v)), 4, v) for v in xi]
    big = max((sum(v * v for v in r) ** 0.5 for r in rows), default=0.0)
    out["final.b"] = bound(FALLBACK_RHO, abs(float(trace.final["b"])) + norm * big * T
                           + sum(abs(float(v)) for v in xi), T + 16, trace.final["b"])
    return out
