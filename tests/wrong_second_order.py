"""Deliberately wrong Second-Order Perceptrons, each with one planted bug, callable by
``verify --impl`` as in ``wrong_perceptrons.py``.

The base (``MUTATIONS[""]``) is a correct, independent, exact implementation of SPEC.md's
"second_order" (basic, adaptive and pseudoinverse forms) that keeps the full matrices: the
primal A = a_k I + X X^T with an incremental inverse for the linear kernel, the dual
(a_k I + G)^{-1} with a bordered update for other rational kernels.  Every mutation returns
a trace dict (``perceptron-oracle/trace@1``) with exact scores.

The mutations in ``ROUNDED`` break the structure that keeps the exact numbers small (the
digits of their matrices double with each update), so they round their matrix to float64
after each update, as a float implementation would: they are wrong long before rounding
matters, and exact they would run for hours on one golden case.

Leaving x_t out of S_t changes no decision of the basic and adaptive forms: by
Sherman-Morrison (A + x x^T)^{-1} x = A^{-1} x / (1 + x^T A^{-1} x), a positive multiple, so
only the score shows the bug (the literal invariants of tests/test_second_order.py catch it).
The pseudoinverse variant has no such identity, and there ``verify`` rejects it.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.numbers import format_exact
from perceptron_oracle.properties.second_order import pseudo_inverse
from perceptron_oracle.reference.second_order import PARAMS, resolve_params
from perceptron_oracle.reference.second_order_engines import a_k, exact_inverse

MUTATIONS = {
    "": "none: the correct implementation",
    "rank_one_sign": "Sherman-Morrison with the wrong sign: A^{-1} + u u^T / (1 + q)",
    "x_not_in_S": "x_t left out of S_t: w_t = (a I + X X^T)^{-1} v (the score is s, not "
                  "s / (1 + q))",
    "bordered_transpose": "the bordered inverse's off-diagonal blocks mixed up: the top-right "
                          "block +h/delta where the transpose of -h^T/delta belongs",
    "tie_rule": "a zero score is not a mistake (y s < 0)",
    "every_trial": "the correlation matrix updated on every trial, not only on mistakes",
    "adaptive_off_by_one": "a_{k+1} in force where a_k belongs",
    "pinv_as_inverse": "the pseudoinverse replaced by (2^-30 I + S S^T)^{-1}",
}

ROUNDED = {"rank_one_sign", "bordered_transpose", "pinv_as_inverse"}


def _rounded(M: list[list[Fraction]]) -> list[list[Fraction]]:
    return [[Fraction(float(m)) for m in row] for row in M]


def _exact_rows(X: Any) -> list[list[Fraction]]:
    return [[Fraction(v) for v in row] for row in (X.tolist() if hasattr(X, "tolist") else X)]


def run_wrong(mutation: str, X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear",
              **params: Any) -> dict[str, Any]:
    p = resolve_params(params)
    kern = parse_kernel(kernel)
    if not kern.is_rational:
        raise ValueError("the planted implementations take rational kernels only")
    rows = _exact_rows(X)
    labels = [int(v) for v in (y.tolist() if hasattr(y, "tolist") else y)]
    T, n = len(rows), len(rows[0])
    K = lambda i, j: kern.exact(rows[i], rows[j])  # noqa: E731
    seen: list[int] = []
    mistakes, scores = [], []
    Ainv = None
    H: list[list[Fraction]] = []
    for t in range(epochs * T):
        j = t % T
        k = len(seen) + 1
        a = a_k(p, k + (mutation == "adaptive_off_by_one"))
        x = rows[j]
        if p.pseudoinverse:
            S = seen + ([] if mutation == "x_not_in_S" else [j])
            G = [[K(r, c) for c in S] for r in S]
            if mutation == "pinv_as_inverse":
                Gi = exact_inverse([[g + (Fraction(1, 2**30) if r == c else 0)
                                     for c, g in enumerate(row)] for r, row in enumerate(G)],
                                   Fraction(1))
                Gi = _rounded(Gi)
            else:
                Gi = pseudo_inverse(G)
            ytil = [labels[i] for i in seen] + [0] * (len(S) - len(seen))
            kx = [K(i, j) for i in S]
            score = sum(yi * sum(h * b for h, b in zip(row, kx)) for yi, row in zip(ytil, Gi))
        elif kern.is_linear:
            if Ainv is None or mutation == "adaptive_off_by_one" or p.a_growth != "constant":
                M = [[sum(rows[i][r] * rows[i][c] for i in seen) + (a if r == c else 0)
                      for c in range(n)] for r in range(n)]
                Ainv = exact_inverse(M, Fraction(1))
            u = [sum(m * xi for m, xi in zip(row, x)) for row in Ainv]
            v = [sum(labels[i] * rows[i][c] for i in seen) for c in range(n)]
            s = sum(ui * vi for ui, vi in zip(u, v))
            q = sum(ui * xi for ui, xi in zip(u, x))
            score = s if mutation == "x_not_in_S" else s / (1 + q)
        else:
            if p.a_growth != "constant" or mutation == "adaptive_off_by_one":
                H = exact_inverse([[K(r, c) + (a if ri == ci else 0)
                                    for ci, c in enumerate(seen)]
                                   for ri, r in enumerate(seen)], Fraction(1)) if seen else []
            b = [K(i, j) for i in seen]
            h = [sum(m * bi for m, bi in zip(row, b)) for row in H]
            s = sum(labels[i] * hi for i, hi in zip(seen, h))
            delta = a + K(j, j) - sum(bi * hi for bi, hi in zip(b, h))
            score = s if mutation == "x_not_in_S" else a * s / delta
        scores.append(score)
        margin = labels[j] * score
        wrong_tie = mutation == "tie_rule"
        is_mistake = margin < 0 if wrong_tie else margin <= 0
        if is_mistake:
            mistakes.append(t)
        if is_mistake or mutation == "every_trial":
            if not p.pseudoinverse and kern.is_linear and Ainv is not None:
                d = 1 + q
                sign = 1 if mutation == "rank_one_sign" else -1
                Ainv = [[m + sign * ui * ul / d for m, ul in zip(row, u)]
                        for row, ui in zip(Ainv, u)]
                Ainv = _rounded(Ainv) if mutation in ROUNDED else Ainv
            elif not p.pseudoinverse and not kern.is_linear:
                top = 1 if mutation == "bordered_transpose" else -1
                H = [[m + hi * hl / delta for m, hl in zip(row, h)] for row, hi in zip(H, h)]
                for row, hi in zip(H, h):
                    row.append(top * hi / delta)
                H.append([-hi / delta for hi in h] + [1 / delta])
                H = _rounded(H) if mutation in ROUNDED else H
            if is_mistake or mutation == "every_trial":
                seen.append(j)
    final = _final(rows, labels, mistakes, p, kern, X, y, epochs, kernel)
    return {
        "format": "perceptron-oracle/trace@1", "algorithm": "second_order",
        "form": "reference", "kernel": kern.spec,
        "params": {k: (format_exact(v) if isinstance(v, Fraction) else v)
                   for k, v in PARAMS.as_dict(p).items()},
        "n_examples": T, "epochs": epochs, "mistakes": mistakes, "updates": list(mistakes),
        "final": final, "scores": [format_exact(s) for s in scores],
    }


def _final(rows, labels, mistakes, p, kern, X, y, epochs, kernel) -> dict[str, Any]:
    """The final state of SPEC.md from the mistakes, by the definition."""
    T, n = len(rows), len(rows[0])
    support = [t % T for t in mistakes]
    out: dict[str, Any] = {"support": support}
    a = a_k(p, len(support) + 1)
    if kern.is_linear:
        C = [[sum(rows[i][r] * rows[i][c] for i in support) for c in range(n)]
             for r in range(n)]
        Ci = pseudo_inverse(C) if p.pseudoinverse else exact_inverse(
            [[m + (a if r == c else 0) for c, m in enumerate(row)] for r, row in enumerate(C)],
            Fraction(1))
        v = [sum(labels[i] * rows[i][c] for i in support) for c in range(n)]
        out["w"] = [format_exact(sum(m * vi for m, vi in zip(row, v))) for row in Ci]
        out["v"] = [format_exact(vi) for vi in v]
    elif p.pseudoinverse:  # the basis convention of alpha: the reference's
        from perceptron_oracle.reference.second_order import second_order
        ref = second_order(X, y, epochs=epochs, kernel=kernel, pseudoinverse=True)
        out["alpha"] = [format_exact(v) for v in ref.final["alpha"]]
    else:
        G = [[kern.exact(rows[r], rows[c]) + (a if ri == ci else 0)
              for ci, c in enumerate(support)] for ri, r in enumerate(support)]
        Gi = exact_inverse(G, Fraction(1)) if support else []
        out["alpha"] = [format_exact(sum(m * labels[i] for m, i in zip(row, support)))
                        for row in Gi]
    return out


def wrong(mutation: str, algorithm: str, X: Any, y: Any, *, epochs: int, kernel: Any,
          params: dict[str, Any]) -> dict[str, Any]:
    if algorithm != "second_order":
        raise ValueError(f"these planted implementations are second_order only, not "
                         f"{algorithm}")
    return run_wrong(mutation, X, y, epochs=epochs, kernel=kernel, **params)


for _name in MUTATIONS:
    globals()[_name or "correct"] = functools.partial(wrong, _name)
