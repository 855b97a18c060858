"""PUMMA's Newton on the dual (18) of problem (3), p > 2 (SPEC.md 14.4).

Ishibashi, Hatano & Takeda, "Online Learning of Approximate Maximum p-Norm Margin
Classifiers with Bias" (COLT 2008), section 3.1: in case (ii) of problem (3), (lam, eta)
maximise

    L*(lam, eta) = -1/2 ||lam z + eta th||_p^2 + 2 lam + eta ||v||_q^2            (18)

[- 1/(2C) ||lam E + eta C xi'||^2 with the soft margin, section 4.2], i.e. w = f^-1(phi),
phi = lam z + eta th, satisfies the two equations (17).  ``newton_dual`` starts from
(lam, eta) = (0, 1) (where w = v) and uses the EXACT Hessian -[z, th]^T J [z, th], J the
Jacobian of f^-1 at phi:

    J = (p-1) ||phi||_p^(2-p) diag(|phi_i|^(p-2)) - (p-2) ||phi||_p^(2-2p) s s^T,
    s_i = sign(phi_i) |phi_i|^(p-1)

(the paper's second derivatives keep only the diagonal terms; the maximiser is the same).
A step is halved while it decreases L* (only while it is larger than 2^-20 relative).
Newton stops when the KKT residual |2 - w.z| / 2 + |vv - w.th| / vv (vv = ||v||_q^2,
w = f^-1(phi), soft-margin terms included) is <= tol: where the optimum has w_i = 0, Newton
converges only linearly (J vanishes there), hence a residual criterion.  Where the Hessian
is singular (phi with one nonzero coordinate: J vanishes off phi's support for p > 2), a
ridge 2^-20 (trace) is added and the damping keeps the step an ascent.

It runs in float64 (``FloatOps``: the fast forms, and the reference's start, stopped at
2^-40) and in mpmath (``MpOps``: the reference, stopped at 2^-(bits/2)).  ``kkt_scale``:
the magnitude of the residual's terms relative to its right-hand sides, against which a
float64 residual is measured.  NEWTON_TOLERANCE is what a fast form's Newton must reach
(the fragile rule's share per update).
"""

from __future__ import annotations

import math
from typing import Any

from .maximum_margin import NotConverged

#: The relative Newton step at which a fast form may stop (p > 2); the fragile rule's share.
NEWTON_TOLERANCE = 2.0 ** -40


#: Newton iterations before the reference gives up (it raises: never seen).
NEWTON_MAX_STEPS = 400


class FloatOps:
    """float64 arithmetic for ``newton_dual`` (the fast forms' Newton, and the reference's
    warm start)."""

    steps = 0
    singular = 2.0 ** -200   # newton_dual's "Hessian singular" threshold (relative)

    @staticmethod
    def power(x: float, r: float) -> float:
        return math.pow(x, r)

    @staticmethod
    def sign(x: float) -> float:
        return (x > 0) - (x < 0)

    fsum = staticmethod(math.fsum)


class MpOps:
    """mpmath arithmetic in the context ``ctx`` for ``newton_dual`` (the reference's
    Newton)."""

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
        t: float = 1
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
