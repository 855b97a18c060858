"""Deliberately wrong Perceptrons, each with one planted bug, callable by ``verify --impl``.

``perceptron_oracle verify`` must reject every one of them, naming the first trial where it
diverges (tests/test_golden.py).  The base (``MUTATIONS[""]``) is a correct, independent,
exact implementation of SPEC.md section 11 for the linear kernel (votes by Khardon & Wachman's
Figure 2: a trial blocked by the alpha-bound does not vote); other kernels are delegated to
the reference, so a planted bug shows on the linear cases.
"""

from __future__ import annotations

import functools
from fractions import Fraction

from perceptron_oracle.reference.perceptron import PARAMS
from perceptron_oracle.reference.perceptron import perceptron as reference

MUTATIONS = {
    "": "none: the correct implementation",
    "tie_rule": "a zero score is not a mistake (y s < 0)",
    "strict_margin": "update iff y s < tau (not <=)",
    "threshold_sign": "b -= eta y C (the extraction's sign)",
    "eta_not_in_bias": "b += y C, without eta",
    "lambda_unseen": "the lambda term on every example, seen or not",
    "lambda_mistaken": "the lambda term only after a mistake on the example (not an update)",
    "alpha_off_by_one": "alpha_bound + 1 updates per example",
    "freund_schapire_votes": "a new hypothesis' vote starts at 1 (voted weights off by one)",
    "longest_latest": "the latest hypothesis wins a tie for the longest survivor",
    "blocked_votes": "a trial the alpha-bound blocks votes for the hypothesis in force",
    "averaged_no_b0": "the averaged bias leaves out the votes' b0",
}


def wrong(mutation, algorithm, X, y, *, epochs, kernel, params):
    if algorithm != "perceptron" or kernel != "linear":
        return reference(X, y, epochs=epochs, kernel=kernel, **params)
    p = PARAMS.resolve(params)
    eta, b0, C, tau, lam, bound = (p[k] for k in ("eta", "b0", "C", "tau", "lam",
                                                   "alpha_bound"))
    rows = [[Fraction(v) for v in row] for row in X.tolist()]
    labels = [int(v) for v in y]
    T, n = len(rows), len(rows[0])
    w, b = [Fraction(0)] * n, b0
    alpha, mistaken = [0] * T, [False] * T
    mistakes, updates, votes, states = [], [], [0], [(list(w), b, list(alpha))]
    for t in range(epochs * T):
        j, label, x = t % T, labels[t % T], rows[t % T]
        score = sum(a * c for a, c in zip(w, x)) + b
        lam_on = {"lambda_unseen": True, "lambda_mistaken": mistaken[j]}.get(mutation,
                                                                              alpha[j] > 0)
        if lam and lam_on:
            score += label * lam * sum(c * c for c in x)
        margin = label * score
        if (margin < 0) if mutation == "tie_rule" else (margin <= 0):
            mistakes.append(t)
            mistaken[j] = True
        room = bound is None or alpha[j] < bound + (mutation == "alpha_off_by_one")
        wants = (margin < tau) if mutation == "strict_margin" else (margin <= tau)
        if wants and room:
            updates.append(t)
            w = [a + eta * label * c for a, c in zip(w, x)]
            step = label * C if mutation == "eta_not_in_bias" else eta * label * C
            b = b - step if mutation == "threshold_sign" else b + step
            alpha[j] += 1
            votes.append(1 if mutation == "freund_schapire_votes" else 0)
            states.append((list(w), b, list(alpha)))
        elif not wants or mutation == "blocked_votes":  # Figure 2: "else if (y_hat = y_j)"
            votes[-1] += 1
    best = max(votes)
    k = (len(votes) - 1 - votes[::-1].index(best)) if mutation == "longest_latest" else \
        votes.index(best)
    total = sum(votes)
    avg_w = [sum(c * s[0][i] for c, s in zip(votes, states)) for i in range(n)]
    avg_b = sum(c * (s[1] - (b0 if mutation == "averaged_no_b0" else 0))
                for c, s in zip(votes, states))
    avg_alpha = [sum(c * s[2][i] for c, s in zip(votes, states)) for i in range(T)]
    return {
        "format": "perceptron-oracle/trace@1", "algorithm": "perceptron", "form": "primal",
        "kernel": "linear", "params": {}, "n_examples": T, "epochs": epochs,
        "mistakes": mistakes, "updates": updates,
        "final": {"w": [str(v) for v in w], "b": str(b), "alpha": alpha, "votes": votes,
                  "longest_survivor": {"index": k, "vote": votes[k], "w": [str(v) for v in
                                       states[k][0]], "b": str(states[k][1]),
                                       "alpha": states[k][2]},
                  "averaged": {"total_votes": total, "w": [str(v) for v in avg_w],
                               "b": str(avg_b), "alpha": avg_alpha}},
    }


for _name in MUTATIONS:
    globals()[_name or "correct"] = functools.partial(wrong, _name)
