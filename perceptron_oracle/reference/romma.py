"""ROMMA (Li & Long), homogeneous, 2-norm, with delta: exact.  SPEC.md, "romma and pumma".

ROMMA is the base of PUMMA (Ishibashi, Hatano, Takeda, "Online Learning of Approximate
Maximum p-Norm Margin Classifiers with Bias", COLT 2008, problem (2)).  State:
w_t (w_0 = 0).  Trial t on example j (x = x_j, y = y_j, z = y x):

    score  = w.x                          (mistake iff y score <= 0)
    update iff y score < 1 - delta        (0 <= delta < 1; a strict inequality)
    update:  w <- argmin 1/2 ||w'||^2  s.t.  w'.z >= 1,  w'.v >= ||v||^2      (problem (2))

with v = w_t.  The solution, from the Lagrangian 1/2||w||^2 + lam (1 - w.z) + eta (||v||^2 -
w.v) (stationarity w = lam z + eta v, lam > 0, eta >= 0, complementary slackness), by the two
cases of section 3.1 (with the right-hand side r = 1; PUMMA uses the same solver with r = 2):

  case (i)  eta = 0:   w = (r / ||z||^2) z,       taken iff  r (v.z) >= ||v||^2 ||z||^2
            (i.e. the candidate satisfies w.v >= ||v||^2; always when v = 0)
  case (ii) eta > 0:   D = ||v||^2 ||z||^2 - (v.z)^2,
                       lam = ||v||^2 (r - v.z) / D,   eta = (||v||^2 ||z||^2 - r v.z) / D,
                       w = lam z + eta v          (both constraints tight)
  infeasible:          z = 0, or (case (ii)) D = 0: z is a nonpositive multiple of v and no
                       w satisfies both constraints (non-separable data only).  Then nothing
                       changes and the trial is NOT an update (it is still a mistake if
                       y score <= 0).

At the boundary r v.z = ||v||^2 ||z||^2 both cases give the same w (eta = 0 in (ii)).
Here v.z = y score = the trial's margin and ||w_new||^2 = lam r + eta ||v||^2.

The example that caused the last update has margin exactly 1 (its constraint is tight, lam
> 0), so it never updates (1 >= 1 - delta), and its update test is not a fragile trial: a
fast form must not update on it either (it would re-solve (2) with v feasible, a no-op in
exact arithmetic).  Identification is by example index (another index holding the same
point is tested as usual).

First trial (w_0 = 0): score 0, a mistake, and an update iff x != 0: w_1 = y x / ||x||^2.

The reference keeps w in dual coordinates, w = sum_j alpha_j phi(x_j) (alpha_j signed: the
label is inside), so every kernel works (the update is alpha <- eta alpha, alpha_j += lam y).

``final``: {"w": [n numbers]} for the linear kernel, {"alpha": [T numbers]} (one signed dual
coefficient per example index, summed over epochs) for any other kernel.

Numbers (parameter ``numbers``: ``auto``, ``fraction``, ``mpmath:BITS``), the solver of
problem (2), the dual state and the shadow runs are shared with PUMMA
(``reference.maximum_margin``); the float64 error model too
(``reference.maximum_margin_errors``: ``ErrorModel``, ``step_errors``, a stated, not
rigorous, rule), whose fragile trials before the first ``near_singular`` update test are
sharpened by shadow runs (``sharpen_by_shadows``, SPEC.md 14.5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..params import ParamSchema
from ..rounding import score_error_bound
from ..trace import Trace
from .common import Gram, ShadowRuns, TrialRecord, check_epochs, exact_data
from .maximum_margin import (
    DELTA,
    NUMBERS,
    DualWeights,
    Numbers,
    Rows,
    ShadowNotes,
    dual_final,
    near_singular,
    run_modes,
    sharpen_by_shadows,
    solve_2norm,
)
from .maximum_margin_errors import (
    FALLBACK_RHO,
    ErrorModel,
    ScoreError,
    StepError,
    bound,
    dual_bounds,
    remember_bounds,
)


@dataclass(frozen=True)
class RommaParams:
    """ROMMA(delta)'s parameters (Li & Long), read and checked by ``PARAMS``.

    ``delta``: the approximation factor, 0 <= delta < 1: update iff y score < 1 - delta
    (section 3; Theorem 3); ``numbers``: the reference's arithmetic, auto, fraction, mpmath
    or mpmath:BITS (``maximum_margin.NUMBERS``; the fast forms ignore it).
    """

    delta: Fraction
    numbers: str


PARAMS = ParamSchema(DELTA, NUMBERS, dataclass_type=RommaParams)


def romma(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", delta: Any = 0,
          numbers: Any = "auto", record_scores: bool = False,
          shadows: ShadowRuns | None = None) -> Trace:
    """Run ROMMA(delta) over ``epochs`` passes of (X, y); returns the reference trace.

    ``shadows``: the fast forms the fragile rule re-runs (``common.ShadowRuns``, given by
    the registry); None keeps the a-priori fragile list."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(delta=delta, numbers=numbers))
    if par.numbers == "fraction" and not kern.is_rational:
        raise ParamError(f"parameter numbers=fraction needs a rational kernel (not {kern.name})")
    shadow = ShadowNotes()

    def run(num: Numbers) -> tuple[Trace, float]:
        shadow.clear()
        return _romma_run(rows, labels, epochs, kern, par, num, True, shadow=shadow)

    trace = run_modes(par.numbers, kern.is_rational, epochs * len(rows), run)
    trace.fragile = sharpen_by_shadows(shadows, X, y, epochs, kern.spec, PARAMS.as_dict(par),
                                       trace, shadow.singular, shadow.thresholds)
    if not record_scores:
        trace.scores = None
    return trace


def _romma_run(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
               par: RommaParams, num: Numbers, record_scores: bool,
               observer: Any = None, shadow: ShadowNotes | None = None
               ) -> tuple[Trace, float]:
    """The trial loop (module docstring), with w in dual coordinates (``DualWeights``);
    ``RommaErrors`` is the float64 error model along it, ``shadow`` receives what
    ``sharpen_by_shadows`` needs.  Returns the trace and the reference's own largest
    relative error (``run_modes``)."""
    w = DualWeights(Rows(Gram(kern, rows), num, len(rows)), num)
    threshold = num(1 - par.delta)
    errors = RommaErrors(w, rows, kern, num, threshold)
    record = TrialRecord(labels, epochs, record_scores)
    shadow = ShadowNotes() if shadow is None else shadow
    last = -1                    # the example of the last update (its margin is exactly 1)
    for t, j, label in record.trials():
        score = w.dot(j)                                  # w.x_j
        margin = label * score                            # y score = v.z, z = y x_j
        record.score(score)
        test = None if j == last else threshold           # the last update's: no update test
        shadow.trial(test)
        error = errors.score_error(j)                     # of a float64 score
        if errors.fragile(margin, error, test):
            record.flag(t)
        if margin <= 0:                                   # mistake iff y score <= 0
            record.mistakes.append(t)
        if test is not None and record.decide(t, margin < threshold):  # y score < 1 - delta
            if errors.ill_conditioned(j, margin):
                shadow.singular.append(t)
            sens = errors.step(j, margin, error)
            if sens.fragile:
                record.flag(t)
            solution = solve_2norm(w.vv, w.K(j)[j], margin, 1, num.exact)    # problem (2)
            if solution is not None:
                lam, eta, kappa = solution
                w.step(lam, eta, {j: label}, 1, sens, errors.model.rho)   # w = lam z + eta v
                errors.updated(sens, eta != 0, kappa, error.m)
                record.updates.append(t)
                last = j
                if observer:
                    observer({"t": t, "alpha": list(w.alpha), "case_ii": eta != 0,
                              "w": w.primal(rows)})
    final = dual_final(w, rows, kern)
    trace = record.trace("romma", kern, dict(PARAMS.as_dict(par), numbers=num.label), final)
    remember_bounds(trace, dual_bounds(errors.model.rho, w.size, rows, kern.is_linear, final,
                                       w.slack), errors.model.lost)
    return trace, errors.model.worst_ref


class RommaErrors:
    """The float64 error model along a ROMMA run (``ErrorModel`` on ``DualWeights``): each
    score's error bound, the fragile tests, the update's sensitivity."""

    def __init__(self, w: DualWeights, rows: list[list[Fraction]], kern: Kernel,
                 num: Numbers, threshold: Any):
        self.w, self.rows, self.kern = w, rows, kern
        self.model = ErrorModel(ref_unit=num.unit)
        self.threshold_error = score_error_bound(1, float(threshold))

    def score_error(self, j: int) -> ScoreError:
        """A float64 score w.x_j: its roundings m, its terms' magnitude, its error bound."""
        w = self.w
        m = (len(self.rows[0]) + 8) * self.kern.depth + w.support + 8
        magnitude = w.magnitude(j)
        return ScoreError(m, magnitude, self.model.score_error(m, magnitude)
                          + w.slack_error(j))

    def fragile(self, margin: Any, score: ScoreError, threshold: Any) -> bool:
        """Whether a float64 form may decide the mistake test, or the update test against
        ``threshold`` (None: none), otherwise (``ErrorModel.tests_fragile``)."""
        return self.model.tests_fragile(margin, score.err, threshold,
                                        self.threshold_error if score.magnitude else 0.0)

    def ill_conditioned(self, j: int, margin: Any) -> bool:
        """Whether the update's problem (2) is ``near_singular`` (not on a zero instance of
        the linear kernel: every product with it is exactly 0 in any evaluation order, so
        every float64 form sees z = 0 and skips the update too)."""
        w = self.w
        zero_instance = self.kern.is_linear and not any(self.rows[j])
        return near_singular(w.vv, w.K(j)[j], margin, w.K.magnitude(j)[j]) and not zero_instance

    def step(self, j: int, margin: Any, score: ScoreError) -> StepError:
        """The update's sensitivity (``step_errors``) from the errors of ||v||^2, ||z||^2 and
        v.z = the margin (the trial's score error)."""
        w, model = self.w, self.model
        zz_scale = w.K.magnitude(j)[j]
        return model.step(w.vv, w.K(j)[j], margin, 1, w.norm_error(model.rho,
                                                                   score.m + w.support),
                          score_error_bound(score.m, zz_scale), score.err, zz_scale)

    def updated(self, sens: StepError, case_ii: bool, kappa: float, m: int) -> None:
        """After the update (``ErrorModel.update``); a near-singular one loses the state."""
        self.model.lost = self.model.lost or sens.fragile
        self.model.update(case_ii, kappa, m, rho_lam=sens.rho_lam)


def history(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
            **params: Any) -> tuple[Trace, list[dict[str, Any]]]:
    """The reference trace and the state after every update: dicts with t, alpha, w (the
    primal w = sum_j alpha_j x_j, meaningful for the linear kernel), case_ii."""
    rows, labels = exact_data(X, y)
    kern = parse_kernel(kernel)
    par = PARAMS.read(params)
    states: list[dict[str, Any]] = []

    def run(num: Numbers) -> tuple[Trace, float]:
        states.clear()
        return _romma_run(rows, labels, check_epochs(epochs), kern, par, num, True,
                          states.append)

    return run_modes(par.numbers, kern.is_rational, epochs * len(rows), run), states


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """How far a float64 form's final w (or alpha) may lie from the exact one.

    For a trace the reference returned, the bounds its run derived (``trace.final_bounds``):
    w_d = sum_i alpha_i x_id with every coefficient off by at most rho |alpha_i|
    (ErrorModel, the final rho), then T + 8 roundings: 2 rho M_d + gamma_{T+8} M_d,
    M_d = sum_i |alpha_i x_id|; alpha_i: 2 rho |alpha_i| + a rounding.  For any other trace
    (read from a file) the coefficients behind w are unknown: rho = FALLBACK_RHO and
    M_d = |w_d| + ||w||_2 max_i |x_id| T.
    """
    known = trace.final_bounds
    if known is not None:
        return known
    rows = [[abs(float(v)) for v in row] for row in
            (X.toarray() if hasattr(X, "toarray") else X).tolist()]
    out: dict[str, Any] = {}
    if "alpha" in trace.final:
        out["final.alpha"] = [bound(FALLBACK_RHO, abs(float(a)), 2, a)
                              for a in trace.final["alpha"]]
    if "w" in trace.final:
        w = trace.final["w"]
        norm = math.sqrt(sum(float(v) * float(v) for v in w))
        out["final.w"] = [bound(FALLBACK_RHO, abs(float(v)) + norm * len(rows)
                                * max(r[d] for r in rows), len(rows) + 8, v)
                          for d, v in enumerate(w)]
    return out
