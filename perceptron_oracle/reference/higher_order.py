"""The Higher-Order Perceptron HO_p(c) of Brotto, Gentile & Vitale, "On Higher-Order
Perceptron Algorithms" (NIPS 2007), exact.  SPEC.md, "higher_order".

Figure 1, with the dual-norm generalisation of section 2 item 3 (p = 2: g = identity):

    score_t = w_{k-1}.x_t,   w_{k-1} = B_{k-1}^T g(B_{k-1} v_{k-1})
    mistake iff y_t score_t <= 0;   on the k-th mistake (k = 1, 2, ...):
        v_k = v_{k-1} + y_t x_t,    B_k = B_{k-1} (I - rho_k x_t g(x_t)^T)

with B_0 = I, v_0 = 0 and g(theta) = grad ||theta||_p^2 / 2 (g(0) = 0).  For p = 2 the state
is A_k = B_k^T B_k, A_k = (I - rho x x^T) A_{k-1} (I - rho x x^T), and the score v^T A x.

rho_k (parameter ``rho``; s = v_{k-1}.x_t, the plain Perceptron score of the sum vector):

    "c/k"       rho_k = c / k                    c in [0, 1)   (the paper's standard choice)
    "theorem1"  rho_k = (1 - c) / (1 + |s|)      c in (0, 1]   (the largest Theorem 1 allows)
    "constant"  rho_k = c                        c in [0, 1)
    sparse      rho_k as above if y_t s >= 0, else 0 (B left alone; v still updated)

The algorithm is defined for x as given (no normalisation inside; the CLI normalises by
default).  Every mistake updates v, so updates == mistakes.

How the reference computes (all exact; the engines are in ``reference.higher_order_engines``):
- p = 2, linear kernel: the primal state A_k, v_k, w_k = A_k v_k in Fraction (item 1).
- p = 2, any other kernel: dual coordinates over the mistakes (item 2): w = sum_j g_j phi(x_j)
  with g = y + D h; D grows by one row and column per mistake (general, non-unit x:
  d_kk = rho^2 (x^T X b + k(x, x)) - 2 rho, b = D X^T x); the same path runs the linear kernel
  when asked (``run_loop(..., engine=Dual)``, used by the tests to tie the two together).
- p != 2 (linear kernel only): B_k explicitly as an n x n matrix in mpmath; while every rho so
  far is 0 (B = I) the score's numerator is rational for an integer p and decided exactly.
  Otherwise the sign of the numerator N = sum_i sign(theta_i)|theta_i|^(p-1) (B x)_i
  (theta = B v; the positive normaliser ||theta||_p^(p-2) does not change the sign) is taken
  from mpmath, and |N| <= E_P (the reference's own rounding bound at its precision) is a
  tie: score 0, a mistake, and always fragile.

``final`` (SPEC.md, the higher_order chapter, "`final`"):
- linear kernel: ``w`` (w_K = B_K^T g(B_K v_K), list of n), ``v`` (v_K, list of n),
  ``rho`` (rho_k for each mistake k = 1..K, in order; 0 where B was left alone);
- other kernels: ``support`` (the example index of each mistake, in order: an example
  recurs once per mistake on it), ``g`` (the dual coefficients: score(x) =
  sum_k g_k k(x_support[k], x)), ``rho`` (as above).

Fragile trials (SPEC.md, the higher_order chapter, "Fragile trials and final-state
bounds"): |score| within SAFETY gamma_m M, with M = |x|^T |B|^T |B| |v| the magnitude of the
absolute-value computation (identical for the primal update of A, the dual recursions of D, h,
g and the implicit unwrapping of B), m = (K + 2)(K + 2 n d + 16) + 2 sum_i e_i (e_i: the
roundings in the float value of rho_i).  A sparse decision y s >= 0 within rounding of 0 flags
its trial and every later trial (the states may part ways there), and then
``final_error_bounds`` allows any final state.  The rule and the final bounds are in
``reference.higher_order_bounds``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import ParamError
from ..kernels import Kernel, parse_kernel
from ..params import Param, ParamSchema
from ..rounding import ANY_STATE
from ..trace import Trace
from .common import (
    ShadowRuns,
    TrialRecord,
    check_epochs,
    exact_data,
    norm_param,
    shadow_errors,
    sharpen,
)
from .higher_order_bounds import ErrorModel, state_bounds
from .higher_order_engines import Dual, IntDual, PNorm, Primal, as_exact

RHO_RULES = ("c/k", "theorem1", "constant")


@dataclass(frozen=True)
class HigherOrderParams:
    """HO_p(c)'s parameters (Brotto, Gentile & Vitale), read and checked by ``PARAMS`` (and
    :func:`resolve_params`, which checks c's range against rho).

    ``p``: the norm parameter p >= 2 (section 2 item 3; p = 2 is Figure 1); ``c``: the
    constant c of rho, in [0, 1) for rho = c/k and rho = constant, in (0, 1] for
    rho = theorem1 (default 2/5, the paper's Figure 2); ``rho``: the rule of rho_k, one of
    ``RHO_RULES``: c/k (k the 1-based mistake index), theorem1 ((1-c)/(1+|v_{k-1}.x_t|)) or
    constant (c); ``sparse``: the sparse variant (section 4), rho_k = 0 when
    y_t v_{k-1}.x_t < 0.
    """

    p: Fraction
    c: Fraction
    rho: str
    sparse: bool


PARAMS = ParamSchema(
    norm_param("norm parameter p >= 2 (section 2 item 3); p = 2 is Figure 1"),
    Param("c", "rational", Fraction(2, 5), "the constant c of rho: in [0, 1) for rho=c/k and "
          "rho=constant, in (0, 1] for rho=theorem1 (default 2/5, the paper's Figure 2)",
          check=lambda v: 0 <= v <= 1, requirement="in [0, 1]"),
    Param("rho", "name", "c/k", "rho_k: c/k (k the 1-based mistake index), theorem1 "
          "((1-c)/(1+|v_{k-1}.x_t|)) or constant (c)", choices=RHO_RULES),
    Param("sparse", "bool", False, "the sparse variant (section 4): rho_k = 0 when "
          "y_t v_{k-1}.x_t < 0"),
    dataclass_type=HigherOrderParams,
)

def resolve_params(given: dict[str, Any]) -> HigherOrderParams:
    """``PARAMS.read`` plus the range of c that depends on rho."""
    par = PARAMS.read(given)
    c = par.c
    if par.rho == "theorem1" and not 0 < c <= 1:
        raise ParamError(f"parameter c must be in (0, 1] for rho=theorem1, got {c}")
    if par.rho != "theorem1" and not 0 <= c < 1:
        raise ParamError(f"parameter c must be in [0, 1) for rho={par.rho}, got {c}")
    return par


def rho_rule(par: HigherOrderParams, k: int, s: Any) -> Any:
    """rho_k on the k-th mistake (k >= 1), s = v_{k-1}.x_t (before the sparse rule)."""
    c = par.c
    if par.rho == "c/k":
        return c / k
    if par.rho == "constant":
        return c
    return (1 - c) / (1 + abs(s))


def default_engine(kern: Kernel, p: Fraction) -> type:
    """The engine that holds the state (``reference.higher_order_engines``): B_k explicitly
    for p != 2, A_k for the linear kernel, dual coordinates for the others."""
    if p != 2:
        return PNorm
    if kern.is_linear:
        return Primal
    return IntDual if kern.is_rational else Dual


# -- the run ----------------------------------------------------------------------------
def higher_order(X: Any, y: Any, *, epochs: int = 1, kernel: Any = "linear", p: Any = 2,
                 c: Any = Fraction(2, 5), rho: Any = "c/k", sparse: Any = False,
                 record_scores: bool = False, shadows: ShadowRuns | None = None) -> Trace:
    """Run HO_p(c) over ``epochs`` passes of (X, y); returns the exact trace.

    ``shadows``: the fast forms the fragile rule re-runs (``common.ShadowRuns``, given by
    the registry); None keeps the a-priori fragile list."""
    rows, labels = exact_data(X, y)
    epochs = check_epochs(epochs)
    kern = parse_kernel(kernel)
    par = resolve_params(dict(p=p, c=c, rho=rho, sparse=sparse))
    trace = run_loop(rows, labels, epochs, kern, par, record_scores=True)
    if trace.fragile and not par.sparse:  # SPEC.md 12.5
        T = len(rows)
        assert trace.scores is not None     # run_loop recorded them (record_scores=True)
        errors = shadow_errors(shadows, X, y, epochs, kern.spec, PARAMS.as_dict(par), trace)
        trace.fragile = sharpen(trace.fragile, errors,
                                [labels[t % T] * sc for t, sc in enumerate(trace.scores)],
                                [[0]] * len(trace.scores))
    if not record_scores:
        trace.scores = None
    return trace


def run_loop(rows: list[list[Fraction]], labels: list[int], epochs: int, kern: Kernel,
             par: HigherOrderParams, *, record_scores: bool = False,
             engine: type | None = None,
             rule: Callable[[HigherOrderParams, int, Any], Any] = rho_rule,
             observe: Callable[[dict[str, Any]], None] | None = None,
             is_mistake: Callable[[Any], bool] = lambda margin: margin <= 0,
             sparse_skips: Callable[[int, Any], bool] = lambda label, s: label * s < 0,
             algorithm: str = "higher_order") -> Trace:
    """The loop of Figure 1 over any state holder (``engine``).  ``observe`` receives, after
    every mistake, {"t", "j", "k", "label", "s" (v_{k-1}.x_t), "rho", "state" (the engine)};
    the tests and the planted wrong implementations use it, as they use ``rule`` (rho_k),
    ``is_mistake`` (of the margin y score) and ``sparse_skips`` (of y and s).  The float64
    error model is ``ErrorModel``'s."""
    p, sparse = par.p, par.sparse
    state = (engine or default_engine(kern, p))(rows, kern, p)
    T = len(rows)
    errors = ErrorModel(kern, rows, epochs * T, p)
    rhos: list[Any] = []
    record = TrialRecord(labels, epochs, record_scores)

    for t, j, label in record.trials():
        score, decider, magnitude = state.score(j)  # w_{k-1}.x_t
        if record.scores is not None:
            record.scores.append(as_exact(score))
        if errors.score_is_fragile(score, magnitude):
            record.fragile.append(t)
        if not record.decide(t, is_mistake(label * decider)):  # iff y_t score_t <= 0
            continue
        record.mistakes.append(t)
        k = len(record.mistakes)
        s, s_magnitude = state.perceptron_score(j)  # v_{k-1}.x_t
        s_err = errors.mistake(s_magnitude)
        rho_k = rule(par, k, s)
        if sparse and rho_k:
            if errors.branches(t, s, s_err):
                record.flag(t)
            if sparse_skips(label, s):
                rho_k = Fraction(0)  # B left alone; v still updated
        if rho_k:
            errors.factor_applied(par, s_err)
        state.update(j, label, rho_k)  # v_k = v_{k-1} + y_t x_t, B_k (Figure 1)
        rhos.append(rho_k)
        if observe is not None:
            observe({"t": t, "j": j, "k": k, "label": label, "s": s,
                     "rho": rho_k, "state": state})

    final = state.final()
    final["rho"] = rhos
    return record.trace(algorithm, kern, PARAMS.as_dict(par), final,
                        updates=list(record.mistakes))


def final_error_bounds(trace: Trace, X: Any) -> dict[str, Any]:
    """How far a float64 form's ``final`` may lie from the exact one: ``state_bounds``
    (``reference.higher_order_bounds``), every bound at most ANY_STATE: a magnitude beyond
    float64's range (raw data whose |B| overflows) allows any final state, as a float64 form
    cannot hold that state either."""
    def cap(value: Any) -> Any:
        if isinstance(value, list):
            return [cap(v) for v in value]
        return value if value < ANY_STATE else ANY_STATE  # inf and NaN included
    bounds = state_bounds(trace, X, resolve_params(trace.params))
    return {key: cap(value) for key, value in bounds.items()}
