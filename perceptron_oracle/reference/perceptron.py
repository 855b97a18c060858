"""The general Perceptron of Khardon & Wachman (2007), exact.  SPEC.md, "perceptron".

Figure 1 of the paper, written with the bias b = -theta:

    score_t = w.x_t + b  (+ y_t lam k(x_t, x_t) if example x_t has caused an update before)
    update iff y_t score_t <= tau  and  example x_t has caused fewer than alpha_bound updates
    update:  w += eta y_t x_t,  b += eta y_t C

with w_0 = 0 and b_0 = -theta_init.  The reference keeps the state in the dual coordinates of
section 2.1, w = eta sum_j alpha_j y_j x_j with alpha_j the number of updates example j has
caused, so one code path serves every kernel; the primal w is read off at the end for the
linear kernel.  Every quantity is a Fraction (an mpf for the Gaussian kernel).

Hypotheses (section 2.5 and Figure 2), all reported in ``final``: h_k is the state after k
updates and its vote c_k the number of trials on which it was in force and predicted y_t with
margin, y_t score_t > tau (Figure 2's "else if (y_hat = y_j): vote_k <- vote_k + 1", the
complement of its update condition): a trial the alpha-bound blocks neither updates nor
votes.  ``last`` is h_K; ``longest_survivor`` the h_k with the largest c_k (the earliest on a
tie: Figure 2's "if (tally > best tally)"); ``voted`` predicts sign(sum_{k=1}^K c_k
sign(h_k(x))), Figure 2's "for i <- 1 to k", which leaves out the initial h_0;
``averaged`` is sum_{k=0}^K c_k h_k.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..kernels import Kernel, parse_kernel
from ..numbers import number_context
from ..params import Param, ParamSchema
from ..rounding import (
    SMALLEST_SUBNORMAL,
    exact_in_float64,
    magnitude_float,
    max_dyadic_exponent,
    product_magnitude,
    score_error_bound,
)
from ..trace import Trace
from .common import Gram, TrialRecord, check_epochs, exact_data


@dataclass(frozen=True)
class PerceptronParams:
    """The general Perceptron's parameters (Khardon & Wachman), read and checked by
    ``PARAMS``.

    ``eta``: the learning rate eta > 0 (Figure 1); ``b0``: the initial bias
    b_0 = -theta_init (Figure 1); ``C``: the threshold step, an update adds eta y C to b
    (Figure 1); ``tau``: the margin tau >= 0, update iff y score <= tau (section 2.4);
    ``lam``: the lambda-trick lam >= 0, y lam k(x, x) added to the score of an example that
    has caused an update (section 2.2, eq. 1); ``alpha_bound``: the alpha-bound, an example
    causes at most this many updates (section 2.3), None for no bound.
    """

    eta: Fraction
    b0: Fraction
    C: Fraction
    tau: Fraction
    lam: Fraction
    alpha_bound: int | None


PARAMS = ParamSchema(
    Param("eta", "rational", Fraction(1), "learning rate eta (Figure 1)",
          check=lambda v: v > 0, requirement="> 0"),
    Param("b0", "rational", Fraction(0), "initial bias b_0 = -theta_init (Figure 1)"),
    Param("C", "rational", Fraction(0), "threshold step: an update adds eta y C to b (Figure 1)"),
    Param("tau", "rational", Fraction(0), "margin: update iff y score <= tau (section 2.4)",
          check=lambda v: v >= 0, requirement=">= 0"),
    Param("lam", "rational", Fraction(0), "lambda-trick: y lam k(x,x) added to the score of an "
          "example that has caused an update (section 2.2, eq. 1)",
          check=lambda v: v >= 0, requirement=">= 0"),
    Param("alpha_bound", "count", None, "alpha-bound: an example causes at most this many "
          "updates (section 2.3); none for no bound"),
    dataclass_type=PerceptronParams,
)

PREDICTION_MODES = ("last", "longest_survivor", "voted", "averaged")


def perceptron(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
               eta: Any = 1, b0: Any = 0, C: Any = 0, tau: Any = 0, lam: Any = 0,
               alpha_bound: Any = None, record_scores: bool = False) -> Trace:
    """Run the Perceptron over ``epochs`` passes of (X, y); returns the exact trace.

    The trial loop of Figures 1 and 2 in the dual coordinates of section 2.1; ``_Votes``
    keeps Figure 2's tallies, ``_is_fragile`` is the float64 error model and
    ``_final_state`` assembles the hypotheses of ``final``.
    """
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = PARAMS.read(dict(eta=eta, b0=b0, C=C, tau=tau, lam=lam, alpha_bound=alpha_bound))
    eta, b0, C, tau, lam, bound = par.eta, par.b0, par.C, par.tau, par.lam, par.alpha_bound
    T = len(rows)
    gram = Gram(kern, rows)
    exact_floats = _float64_is_exact(kern, rows, par, epochs * T)

    alpha = [0] * T          # alpha_j: updates caused by example j (section 2.1)
    support: list[int] = []  # examples with alpha_j > 0, in order of their first update
    signed_updates = 0       # sum_j alpha_j y_j, so that b = b0 + eta C signed_updates
    votes = _Votes(T)
    record = TrialRecord(labels, epochs, record_scores)

    for t, j, label in record.trials():
        # the lambda-trick of eq. (1) for an example that has caused an update
        lam_term = label * lam * gram(j, j) if lam and alpha[j] > 0 else 0
        score = (b0 + eta * C * signed_updates
                 + eta * sum(alpha[i] * labels[i] * gram(i, j) for i in support)
                 + lam_term)
        margin = label * score
        record.score(score)
        if not exact_floats and _is_fragile(margin, par, gram, alpha, support, j,
                                            len(record.updates), lam_used=bool(lam_term)):
            record.fragile.append(t)
        if margin <= 0:
            record.mistakes.append(t)
        if record.decide(t, margin - tau <= 0 and (bound is None or alpha[j] < bound)):
            record.updates.append(t)      # w += eta y_t x_t, b += eta y_t C (Figure 1)
            votes.update(alpha)
            if alpha[j] == 0:
                support.append(j)
            alpha[j] += 1
            signed_updates += label
        elif margin - tau > 0:     # y_hat = y (Figure 2): h_k survives and votes
            votes.survive()
        # else: blocked by the alpha-bound, neither an update nor a vote (Figure 2)

    votes.retire(alpha)  # h_K, in force at the end, with its vote c_K
    final = _final_state(alpha, votes, par, kern, rows, labels)
    return record.trace("perceptron", kern, PARAMS.as_dict(par), final)


def _is_fragile(margin: Any, par: PerceptronParams, gram: Gram, alpha: list[int],
                support: list[int], j: int, K: int, *, lam_used: bool) -> bool:
    """Whether float64 may decide y score <= 0 or y score <= tau the other way, after K
    updates: the margin within the score's rounding bound (rounding.py: (n + 8) depth + K + 8
    roundings of terms of total magnitude |b0| + |eta C| K + eta sum_i alpha_i |k(x_i, x_j)|
    (+ lam |k(x_j, x_j)| with the lambda term) of 0, or within that bound plus tau's own
    rounding of tau."""
    eta, tau = par.eta, par.tau
    magnitude = (abs(par.b0) + abs(eta * par.C) * K
                 + product_magnitude(eta, sum(alpha[i] * gram.magnitude(i, j)
                                              for i in support))
                 + (product_magnitude(par.lam, gram.magnitude(j, j)) if lam_used else 0))
    ops = (len(gram.rows[0]) + 8) * gram.kernel.depth + K + 8
    err = score_error_bound(ops, magnitude_float(magnitude))
    tau_err = err + score_error_bound(1, float(tau))  # tau is rounded once, too
    return bool((err and abs(margin) <= err) or (tau_err and abs(margin - tau) <= tau_err))


class _Votes:
    """Figure 2's tallies: ``votes`` c_k for the hypotheses h_0 .. h_k so far, the longest
    survivor (index and dual coefficients; the earliest on a tie) and ``averaged``,
    sum_k c_k alpha^(k)."""

    def __init__(self, T: int):
        self.votes = [0]
        self.longest: tuple[int, list[int]] = (0, [0] * T)
        self.averaged = [0] * T

    def survive(self) -> None:
        self.votes[-1] += 1

    def retire(self, alpha: list[int]) -> None:
        """h_k, with dual coefficients ``alpha``, retires with its vote c_k."""
        retiring = self.votes[-1]
        if retiring > self.votes[self.longest[0]]:
            self.longest = (len(self.votes) - 1, list(alpha))
        if retiring:
            self.averaged = [a + retiring * b for a, b in zip(self.averaged, alpha)]

    def update(self, alpha: list[int]) -> None:
        """An update: h_k retires, h_{k+1} starts with no vote."""
        self.retire(alpha)
        self.votes.append(0)


def _final_state(alpha: list[int], votes: _Votes, par: PerceptronParams, kern: Kernel,
                 rows: list[list[Fraction]], labels: list[int]) -> dict[str, Any]:
    """``final``: h_K, the votes, the longest survivor and the averaged hypothesis."""
    def hypothesis(coefs: list[int], weight: int = 1) -> dict[str, Any]:
        """The state with dual coefficients ``coefs`` (and ``weight`` copies of b0)."""
        eta = par.eta
        state: dict[str, Any] = {
            "b": weight * par.b0 + eta * par.C * sum(a * l for a, l in zip(coefs, labels)),
            "alpha": list(coefs),
        }
        if kern.is_linear:
            state["w"] = [eta * sum((a * l * row[i] for a, l, row in zip(coefs, labels, rows)
                                     if a), Fraction(0)) for i in range(len(rows[0]))]
        return state

    c = votes.votes
    final = hypothesis(alpha)
    final["votes"] = c
    final["longest_survivor"] = {"index": votes.longest[0], "vote": c[votes.longest[0]],
                                 **hypothesis(votes.longest[1])}
    final["averaged"] = {"total_votes": sum(c), **hypothesis(votes.averaged, sum(c))}
    return final


def _float64_is_exact(kern: Kernel, rows: list[list[Fraction]], par: PerceptronParams,
                      max_updates: int) -> bool:
    """True iff float64 arithmetic computes every score of this run exactly (rounding.py).

    Every term of a score lies on the grid 2^-E, with E the largest of the terms' dyadic
    exponents; every partial sum is bounded by the magnitude below (R^2 = max ||x||^2 bounds
    every |x.z| by Cauchy-Schwarz, and at most ``max_updates`` updates happen).
    """
    if not kern.is_rational:
        return False
    e_x = max_dyadic_exponent(v for row in rows for v in row)
    values = {"eta": par.eta, "b0": par.b0, "C": par.C, "tau": par.tau, "lam": par.lam}
    exponents = {name: max_dyadic_exponent([v]) for name, v in values.items()}
    e_kernel = kern.value_exponent(e_x)  # every kernel value on the grid 2^-e_kernel
    if e_x is None or e_kernel is None or any(v is None for v in exponents.values()):
        return False
    e = {name: v for name, v in exponents.items() if v is not None}  # none is None (above)
    exponent = max(e["eta"] + e_kernel, e["eta"] + e["C"], e["b0"], e["lam"] + e_kernel,
                   e["tau"], e["eta"] + e_x)  # the last: the primal w's coordinates
    r2 = max(sum(float(v) * float(v) for v in row) for row in rows) * (1 + 1e-12)
    k_max = kern.exact_value_bound(r2, e_kernel)  # None: float64 may round a kernel value
    if k_max is None:
        return False
    x_max = max(abs(float(v)) for row in rows for v in row)
    eta, C = float(par.eta), float(par.C)
    magnitude = (abs(float(par.b0)) + abs(eta * C) * max_updates
                 + eta * max_updates * (k_max + x_max) + float(par.lam) * k_max
                 + float(par.tau))
    return exact_in_float64(exponent, magnitude)


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """How far a float64 run's final w and b may lie from the exact ones (rounding.py).

    A hypothesis with coefficients alpha has w_i = eta sum_j alpha_j y_j x_ji, a sum whose
    absolute terms add up to eta sum_j alpha_j |x_ji|, and b = W b0 + eta C sum_j alpha_j y_j
    (W = 1, or the total vote for the averaged one).  A float64 form builds either with at most
    T + K roundings (K = number of updates): by accumulation or by one product with X.
    """
    rows = [[abs(float(v)) for v in row] for row in (X.toarray() if hasattr(X, "toarray")
                                                     else X).tolist()]
    par = PARAMS.read(trace.params)
    eta, b0, C = float(par.eta), abs(float(par.b0)), abs(float(par.C))
    ops = len(rows) + len(trace.updates) + 8
    def bound(magnitude: float, exact: Any) -> float:
        # a magnitude that underflowed to 0 while the exact value is not: the smallest one
        return score_error_bound(ops, magnitude if magnitude or not exact else SMALLEST_SUBNORMAL)

    bounds: dict[str, Any] = {}
    for path, state, weight in (("final", trace.final, 1),
                                ("final.longest_survivor", trace.final["longest_survivor"], 1),
                                ("final.averaged", trace.final["averaged"],
                                 trace.final["averaged"]["total_votes"])):
        alpha = state["alpha"]
        bounds[f"{path}.b"] = bound(weight * b0 + eta * C * sum(alpha), state["b"])
        if "w" in state:
            bounds[f"{path}.w"] = [
                bound(eta * sum(a * row[i] for a, row in zip(alpha, rows) if a), state["w"][i])
                for i in range(len(rows[0]))]
    return bounds


def predict(trace: Trace, X_train: Any, y_train: Any, X: Any,
            mode: str = "last") -> list[int]:
    """Exact predictions of a reference trace's hypothesis on the rows of X.

    Returns +1 or -1 by the sign of the score, and 0 where the score is exactly 0: no
    decision, which the protocol counts as a mistake whatever the label (SPEC.md).
    ``mode`` is one of ``last``, ``longest_survivor``, ``voted``, ``averaged``.  ``voted`` is
    Figure 2's sign(sum_{i=1}^k vote_i sign(h_i(x))) over the hypotheses h_1 .. h_K that
    updates created (the initial h_0 has no say; with no update at all the sum is empty and
    the prediction 0); ``averaged`` is the sign of sum_{k=0}^K c_k h_k(x).
    """
    if mode not in PREDICTION_MODES:
        raise ValueError(f"mode must be one of {PREDICTION_MODES}, got {mode!r}")
    rows, labels = exact_data(X_train, y_train)
    new_rows, _ = exact_data(X, [1] * len(X.tolist() if hasattr(X, "tolist") else X))
    kern = parse_kernel(trace.kernel)
    ctx = None if kern.is_rational else number_context()
    par = PARAMS.read(dict(trace.params))
    eta, b0, C = par.eta, par.b0, par.C
    order = [t % len(rows) for t in trace.updates]  # the example behind each update
    votes = [int(v) for v in trace.final["votes"]]  # Python ints, from lists or arrays
    out = []
    for x in new_rows:
        # s_k(x) = s_{k-1}(x) + eta y_u (k(x_u, x) + C): the score of every h_k, in order
        steps = [eta * labels[u] * (kern.exact(rows[u], x, ctx) + C) for u in order]
        if mode == "voted":  # Figure 2: "for i <- 1 to k", h_0 left out
            s, total = b0, 0
            for step, vote in zip(steps, votes[1:]):
                s += step
                total += vote * _sign(s)
            out.append(_sign(total))
            continue
        if mode == "last":
            score = b0 + sum(steps)
        elif mode == "longest_survivor":
            score = b0 + sum(steps[:int(trace.final["longest_survivor"]["index"])])
        else:  # averaged: sum_k c_k s_k(x)
            s, score = b0, votes[0] * b0
            for step, vote in zip(steps, votes[1:]):
                s += step
                score += vote * s
        out.append(_sign(score))
    return out


def _sign(value: Any) -> int:
    return int(value > 0) - int(value < 0)
