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
            p > 2: Newton on (18) from (lam, eta) = (0, 1) (where w = v), stopped on
                   the KKT residual of (17) (``reference.pumma_newton``)
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
            "b": number, "pos": example index, "neg": example index (each once the run
            has one: a one-class run has no pos or no neg; a trace holds numbers only),
            "xi": [T] (only when C is not none)}.
Before start-up completes, w = 0 and b = -1 or +1 as above.

Numbers: as ROMMA's (``reference.maximum_margin``, parameter ``numbers``): Fraction for
p = 2 with a rational kernel and rational C, mpmath otherwise (p > 2 always).  Fast forms'
Newton (p > 2) must stop only once that KKT residual is <= NEWTON_TOLERANCE (2^-40) times
``kkt_scale`` (``reference.pumma_newton``); the fragile rule allows that much (times kappa)
per update.  The state holders (problem (3) and the bias (20)) are in
``reference.pumma_states``, the float64 error model in ``reference.pumma_errors``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..params import ParamSchema
from ..trace import Trace
from .common import (
    Gram,
    OptionalRational,
    ShadowRuns,
    TrialRecord,
    check_epochs,
    exact_data,
    norm_param,
)
from .maximum_margin import DELTA, NUMBERS, Numbers, ShadowNotes, run_modes, sharpen_by_shadows
from .maximum_margin_errors import remember_bounds
from .pumma_errors import PummaErrors, final_error_bounds
from .pumma_newton import NEWTON_TOLERANCE
from .pumma_states import State2, StateP

__all__ = ["NEWTON_TOLERANCE", "PARAMS", "PummaParams", "final_error_bounds", "history",
           "pumma"]


@dataclass(frozen=True)
class PummaParams:
    """PUMMA_p(delta)'s parameters (Ishibashi, Hatano & Takeda), read and checked by
    ``PARAMS``.

    ``p``: the margin's norm p >= 2 (q = p/(p-1) for w); ``delta``: the approximation
    factor, 0 <= delta < 1: update iff y score < 1 - delta (``maximum_margin.DELTA``);
    ``C``: the 2-norm soft margin constant C > 0 (section 4.2), None for the hard margin;
    ``numbers``: the reference's arithmetic, auto, fraction, mpmath or mpmath:BITS
    (``maximum_margin.NUMBERS``; the fast forms ignore it).
    """

    p: Fraction
    delta: Fraction
    C: Fraction | None
    numbers: str


PARAMS = ParamSchema(
    norm_param("the margin's norm p (q = p/(p-1) for w)"),
    DELTA,
    OptionalRational("C", "rational", None, "2-norm soft margin constant (section 4.2); "
                      "none: hard margin", check=lambda v: v > 0, requirement="> 0 or none"),
    NUMBERS,
    dataclass_type=PummaParams,
)


def pumma(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
          delta: Any = 0, C: Any = None, numbers: Any = "auto",
          record_scores: bool = False, shadows: ShadowRuns | None = None) -> Trace:
    """Run PUMMA_p(delta) over ``epochs`` passes of (X, y); returns the reference trace.

    ``shadows``: the fast forms the fragile rule re-runs (``common.ShadowRuns``, given by
    the registry); None keeps the a-priori fragile list."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(p=p, delta=delta, C=C, numbers=numbers))
    two = par.p == 2
    if not two and not kern.is_linear:
        raise ParamError("parameter p > 2 needs the linear kernel (kernels work for p = 2)")
    rational = two and kern.is_rational
    if par.numbers == "fraction" and not rational:
        raise ParamError("parameter numbers=fraction needs p = 2 and a rational kernel")

    shadow = ShadowNotes()

    def run(num: Numbers) -> tuple[Trace, float]:
        shadow.clear()
        return _run(rows, labels, epochs, kern, par, num, True, shadow=shadow)

    trace = run_modes(par.numbers, rational, epochs * len(rows), run)
    if two and par.C is None:  # SPEC.md 14.5: shadow runs for the hard margin, p = 2
        trace.fragile = sharpen_by_shadows(shadows, X, y, epochs, kern.spec,
                                           PARAMS.as_dict(par), trace, shadow.singular,
                                           shadow.thresholds)
    elif two:   # the soft margin: the update test's left side y score + xi_j, measured
        tested = shadow.tested
        threshold = 1 - par.delta
        thresholds = [[0] if v is None else [0, threshold] for v in tested]
        trace.fragile = sharpen_by_shadows(shadows, X, y, epochs, kern.spec,
                                           PARAMS.as_dict(par), trace, shadow.singular,
                                           thresholds, tested)
    if not record_scores:
        trace.scores = None
    return trace
























def _run(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
         par: PummaParams, num: Numbers, record_scores: bool,
         observer: Any = None, shadow: ShadowNotes | None = None) -> tuple[Trace, float]:
    """The trial loop (module docstring): start-up (``start_up``), then the score, the
    mistake test, the update test and problem (3) with the bias (20).  The state is
    ``State2`` (p = 2) or ``StateP``; ``PummaErrors`` is the float64 error model along
    the run; ``shadow`` receives what ``sharpen_by_shadows`` needs.  Returns the trace
    and the reference's own largest relative error (``run_modes``)."""
    two = par.p == 2
    st: Any = (State2(Gram(kern, rows), num, par.C, len(rows)) if two
               else StateP(rows, num, par.p, par.C))
    threshold = num(1 - par.delta)
    errors = PummaErrors(rows, kern, num, par, threshold)
    record = TrialRecord(labels, epochs, record_scores)
    shadow = ShadowNotes() if shadow is None else shadow
    pair = Pair(num)

    def report(t: int, case_ii: bool) -> None:
        if observer:
            observer(_state(t, st, pair, rows, labels, case_ii))

    for t, j, label in record.trials():
        if not pair.complete:
            start_up(t, j, label, pair, st, errors, record, shadow, report)
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
        # update iff y score + xi_j < 1 - delta
        if not member and record.decide(t, margin + slack < threshold):
            assert pair.pos is not None and pair.neg is not None     # the pair is complete
            pos, neg = (j, pair.neg) if label == 1 else (pair.pos, j)    # x replaces one
            m = errors.operations(st)
            result = solve_pair(t, pos, neg, st, errors, m, record, shadow)  # problem (3), (20)
            if result is not None:
                b, kappa, case_ii = result
                pair.take(pos, neg, b)
                errors.updated(st, pos, neg, case_ii, kappa, m)
                record.updates.append(t)
                report(t, case_ii)
    final = dict(st.weights(rows, kern), b=pair.b)
    for key, index in (("pos", pair.pos), ("neg", pair.neg)):
        if index is not None:  # a one-class run has no pos or no neg: the key is left out
            final[key] = index
    if par.C is not None:
        final["xi"] = st.slacks(labels)
    trace = record.trace("pumma", kern, dict(PARAMS.as_dict(par), numbers=num.label), final)
    remember_bounds(trace, errors.final_bounds(final, st), errors.model.lost)
    return trace, errors.model.worst_ref




class Pair:
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


def start_up(t: int, j: int, label: int, pair: Pair, st: Any, errors: PummaErrors,
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
    result = solve_pair(t, pos, neg, st, errors, errors.operations(st), record, shadow)
    if result is not None:
        pair.take(pos, neg, result[0])
        errors.started(st, pos, neg)
        record.updates.append(t)
        report(t, False)


def solve_pair(t: int, pos: int, neg: int, st: Any, errors: PummaErrors, m: int,
           record: TrialRecord, shadow: ShadowNotes) -> tuple[Any, float, bool] | None:
    """Problem (3) and the bias (20) for the pair (``State2.update``, ``StateP.update``):
    (b, kappa, case_ii), or None if infeasible; trial t is fragile where a float64 form may
    call it infeasible (``doubt``), shadowed no further where it is ill-conditioned."""
    result: tuple[Any, float, bool] | None = st.update(pos, neg, errors.model, m)
    if st.ill_conditioned:
        shadow.singular.append(t)
    if st.doubt:
        record.flag(t)
    return result


def _state(t: int, st: Any, pair: Pair, rows: list[list[Fraction]], labels: list[int],
           case_ii: bool) -> dict[str, Any]:
    """The state after the update on trial t, for the properties (``history``)."""
    out = {"t": t, "b": pair.b, "pos": pair.pos, "neg": pair.neg, "case_ii": case_ii}
    if isinstance(st, State2):
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
    par = PARAMS.read(params)
    states: list[dict[str, Any]] = []
    rational = par.p == 2 and kern.is_rational

    def run(num: Numbers) -> tuple[Trace, float]:
        states.clear()
        return _run(rows, labels, check_epochs(epochs), kern, par, num, True, states.append)

    return run_modes(par.numbers, rational, epochs * len(rows), run), states






