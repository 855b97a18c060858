"""The Second-Order Perceptron (Cesa-Bianchi, Conconi, Gentile, "A Second-Order Perceptron
Algorithm", SIAM J. Comput. 2005), exact.  SPEC.md, "second_order".

Basic form (Figure 3.1), with k - 1 the mistakes so far, X_{k-1} their instances and
v_{k-1} = sum of y_i x_i over them:

    S_t = [X_{k-1} x_t],   w_t = (a I + S_t S_t^T)^{-1} v_{k-1},   score_t = w_t . x_t
    mistake iff y_t score_t <= 0;  then v_k = v_{k-1} + y_t x_t, X_k = S_t.

The sign identity.  With A = a I + X_{k-1} X_{k-1}^T, s = x^T A^{-1} v and q = x^T A^{-1} x,
Sherman-Morrison gives score_t = s / (1 + q), and 1 + q > 0: the decision is sign(s).

Theorem 3.3 (kernels): its dual expression y~^T (a I_k + G_t)^{-1} S_t^T x_t (y~ the
mistakes' labels and 0 for x_t) is the score w_t . x_t = s / (1 + q), not s; with
H = (a I + G_{k-1})^{-1}, b = the kernel row of x_t against the mistakes and c = k(x_t, x_t),
the bordered inverse gives

    s = y^T H b,   score_t = a s / (a + c - b^T H b).

Adaptive form: a is replaced by a_k (``a_growth``: a_k = a, or a_k = a k).  Pseudoinverse
form: w_t = (S_t S_t^T)^+ v_{k-1}; then score_t = 0 if x_t lies outside span(X_{k-1}) (in
feature space) and s / (1 + q) with C^+ in place of A^{-1} otherwise (SPEC.md derives both).

Routes (both exact, the same numbers): the linear kernel keeps A^{-1} (n x n) with
Sherman-Morrison updates; other kernels keep H (k x k) grown by a bordered update; the
pseudoinverse keeps a basis of span(X) among the mistakes.  Fractions throughout; mpmath
(``number_context()``) for the Gaussian kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..numbers import to_fraction
from ..params import Param, ParamSchema
from ..trace import Trace
from .common import (
    Gram,
    ShadowRuns,
    TrialRecord,
    check_epochs,
    exact_data,
    shadow_errors,
    sharpen,
)
from .second_order_bounds import FragileRule, state_bounds
from .second_order_engines import Dual, IntDual, Pinv, Primal

A_GROWTHS = ("constant", "linear")


@dataclass(frozen=True)
class SecondOrderParams:
    """The Second-Order Perceptron's parameters (Cesa-Bianchi, Conconi & Gentile), read
    and checked by ``PARAMS`` (and :func:`resolve_params`, which checks the pseudoinverse's
    a and a_growth).

    ``a``: the regulariser a > 0 of w_t = (aI + S S^T)^{-1} v (Figure 3.1), a_1 of the
    adaptive sequence; ``a_growth``: the adaptive parameter a_k (section 3.2), one of
    ``A_GROWTHS``: constant (a_k = a) or linear (a_k = a k), k = mistakes so far + 1;
    ``pseudoinverse``: w_t = (S_t S_t^T)^+ v (section 3.3), a and a_growth then at their
    defaults.
    """

    a: Fraction
    a_growth: str
    pseudoinverse: bool


PARAMS = ParamSchema(
    Param("a", "rational", Fraction(1), "regulariser a of w_t = (aI + S S^T)^{-1} v "
          "(Figure 3.1); a_1 of the adaptive sequence", check=lambda v: v > 0,
          requirement="> 0"),
    Param("a_growth", "name", "constant", "adaptive parameter a_k (section 3.2): constant "
          "(a_k = a) or linear (a_k = a k), k = mistakes so far + 1", choices=A_GROWTHS),
    Param("pseudoinverse", "bool", False, "w_t = (S_t S_t^T)^+ v (section 3.3); a and "
          "a_growth must then keep their defaults"),
    dataclass_type=SecondOrderParams,
)



def resolve_params(given: dict[str, Any]) -> SecondOrderParams:
    """``PARAMS.read``, plus: the pseudoinverse form takes no a (a must stay 1, a_growth
    constant), since w_t = (S S^T)^+ v has no regulariser."""
    par = PARAMS.read(given)
    if par.pseudoinverse and (par.a != 1 or par.a_growth != "constant"):
        raise ParamError("parameters a and a_growth are not used by the pseudoinverse form "
                         "(pseudoinverse=true): leave them at a=1, a_growth=constant")
    return par


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """How far a float64 run's final state may lie from the exact one: a stated rule
    (``second_order_bounds.state_bounds``, SPEC.md 13.5), not a rigorous bound."""
    return state_bounds(trace, X, resolve_params(trace.params))


def second_order(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", a: Any = 1,
                 a_growth: Any = "constant", pseudoinverse: Any = False,
                 record_scores: bool = False, shadows: ShadowRuns | None = None) -> Trace:
    """Run the Second-Order Perceptron over ``epochs`` passes of (X, y); the exact trace.

    The trial loop of Figure 3.1: the state holder (``Primal``, ``IntDual``, ``Dual`` or
    ``Pinv``) gives s = x_t^T A^{-1} v_{k-1} and q = x_t^T A^{-1} x_t, the score is
    s / (1 + q) and its sign that of s (the sign identity); ``FragileRule`` is the float64
    error model, ``_final_state`` the trace's ``final``.

    ``shadows``: the fast forms the fragile rule re-runs (``common.ShadowRuns``, given by
    the registry); None keeps the a-priori fragile list.
    """
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = resolve_params(dict(a=a, a_growth=a_growth, pseudoinverse=pseudoinverse))
    T = len(rows)
    gram = Gram(kern, rows)
    state, one = _state_holder(rows, gram, par)
    rule = FragileRule(gram, labels, par.pseudoinverse)
    record = TrialRecord(labels, epochs)

    for t, j, label in record.trials():
        s, q = state.score(j)  # s = x_t^T A^{-1} v_{k-1}, q = x_t^T A^{-1} x_t
        # score_t = w_t . x_t = s / (1 + q), 1 + q > 0 (the shadow rule reads it)
        record.score(state.exact_score(s, q) if q is None else s / (1 + q))
        if rule.flags(t, j, s, state):
            record.fragile.append(t)
        if record.decide(t, label * s <= 0):  # mistake iff y_t score_t <= 0
            record.mistakes.append(t)
            rule.mistake(j, label)
            state.mistake(j, label, q)  # v_k = v_{k-1} + y_t x_t, X_k = S_t

    final = _final_state(state, rows, labels, rule.support, kern, par, one)
    trace = record.trace("second_order", kern, PARAMS.as_dict(par), final,
                         updates=list(record.mistakes))
    scores = trace.scores or []
    if trace.fragile:  # the a-posteriori rule (SPEC.md 13.5): keep what the shadows confirm
        errors = shadow_errors(shadows, X, y, epochs, kern.spec, PARAMS.as_dict(par), trace)
        trace.fragile = sharpen(trace.fragile, errors,
                                [labels[t % T] * sc for t, sc in enumerate(scores)],
                                [[0]] * len(scores))
    if not record_scores:
        trace.scores = None
    return trace


def _state_holder(rows: list[list[Fraction]], gram: Gram,
                  par: SecondOrderParams) -> tuple[Any, Any]:
    """The route that holds the state (module docstring) and the number 1 it computes with:
    Fraction(1), or the context's mpf for the Gaussian kernel."""
    kern, ctx = gram.kernel, gram.ctx
    if ctx is None:
        one: Any = Fraction(1)
        conv = lambda q: q  # noqa: E731
    else:
        one = ctx.mpf(1)
        conv = lambda q: ctx.mpf(q.numerator) / q.denominator  # noqa: E731
    if par.pseudoinverse:
        return Pinv(gram, one, ctx is None), one
    if kern.is_linear:
        return Primal(rows, par, one), one
    if kern.is_rational:
        return IntDual(gram, par), one
    return Dual(gram, par, one, conv), one


def _final_state(state: Any, rows: list[list[Fraction]], labels: list[int],
                 support: list[int], kern: Kernel, par: SecondOrderParams,
                 one: Any) -> dict[str, Any]:
    """``final``: the mistakes' examples (``support``), and w = A_{K+1}^{-1} v_K with v_K
    (linear kernel) or the dual coefficients alpha (other kernels)."""
    final: dict[str, Any] = {"support": list(support)}
    if kern.is_linear and not par.pseudoinverse:
        final.update(state.final())
        return final
    alpha = state.alpha()
    if kern.is_linear:
        n = len(rows[0])
        final["w"] = [sum((al * rows[i][c] for al, i in zip(alpha, support)), 0 * one)
                      for c in range(n)]
        final["v"] = [sum((labels[i] * rows[i][c] for i in support), 0 * one)
                      for c in range(n)]
    else:
        final["alpha"] = [to_fraction(v) for v in alpha]  # an mpf is a dyadic rational
    return final
