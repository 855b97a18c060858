"""The checks that apply to an outside implementation, one library for every family.

In the manner of scikit-learn's ``check_estimator`` / ``parametrize_with_checks`` and river's
``yield_checks``: every check has one signature, ``check(impl, algorithm, data) -> None``,
where ``impl`` is called in ``verify``'s protocol
``impl(algorithm, X, y, *, epochs, kernel, params) -> Trace | dict`` (params with the
defaults filled in) and ``data`` is a :class:`Data` drawn from the check's hypothesis
strategy.  A check raises :class:`InvariantViolation` whose message names the theorem and
the paper, or :class:`NotApplicable` with the reason: the implementation raised
``NotImplementedError`` for the call, or the trace lacks a final-state key the check needs
(never a ``KeyError``).

- ``perceptron_checks()``, ..., ``alma_checks()``: each family's :class:`Check` objects
  (name, function, strategy, the final-state keys it needs, its max_examples), which the
  family's declaration names (``Family.invariant_checks`` gives them cited and with the
  family's parameter defaults);
- :func:`run_check` runs one check on hypothesis draws and returns a :class:`CheckResult`
  (pass, fail, or not applicable with the reason); ``verify.check_implementation`` runs
  every check of the given families.

The pytest plugin (``pytest --oracle-impl MODULE:CALLABLE``) makes one test item of each
check.  Every check relies only on the trace (mistakes, updates, and the final-state keys
listed in ``needs``), never on the project's own internals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from ..errors import TraceFormatError
from ..numbers import to_fraction
from ..params import ParamSchema
from ..reference import alma as alma_ref
from ..reference import higher_order as higher_order_ref
from ..reference import pnorm_perceptron as pnorm_ref
from ..reference import pumma as pumma_ref
from ..reference import romma as romma_ref
from ..reference import second_order as second_order_ref
from ..trace import Trace
from . import higher_order as higher_order_invariants
from . import perceptron as perceptron_invariants
from . import second_order as second_order_invariants
from ._base import InvariantViolation
from .alma import check_corrections_bound
from .perceptron import textbook_perceptron
from .romma_pumma import optimum_2norm, theorem3_bound
from .strategies import (
    Sequence,
    higher_order_params,
    label_noise,
    perceptron_params,
    pnorm_params,
    separable,
    sphere,
)

__all__ = ["InvariantViolation", "NotApplicable", "Data", "Check", "CheckResult", "PAPERS",
           "call", "cited", "run_check", "hypothesis_test", "perceptron_checks",
           "higher_order_checks", "pnorm_perceptron_checks", "second_order_checks",
           "romma_checks", "pumma_checks", "alma_checks"]

PAPERS = {
    "khardon_wachman": 'R. Khardon and G. Wachman, "Noise Tolerant Variants of the '
                       'Perceptron Algorithm", JMLR 2007',
    "novikoff": 'A. B. J. Novikoff, "On Convergence Proofs on Perceptrons", 1962 (as stated '
                'by Khardon and Wachman, "Noise Tolerant Variants of the Perceptron '
                'Algorithm", JMLR 2007, section 2.1)',
    "higher_order": 'C. Brotto, C. Gentile and F. Vitale, "On Higher-Order Perceptron '
                    'Algorithms", NIPS 2007',
    "pnorm": 'C. Gentile, "The Robustness of the p-Norm Algorithms", Machine Learning 2003 '
             '(the p-norm Perceptron is HO_p(0) of C. Brotto, C. Gentile and F. Vitale, '
             '"On Higher-Order Perceptron Algorithms", NIPS 2007)',
    "second_order": 'N. Cesa-Bianchi, A. Conconi and C. Gentile, "A Second-Order Perceptron '
                    'Algorithm", SIAM J. Comput. 2005',
    "pumma": 'K. Ishibashi, K. Hatano and M. Takeda, "Online Learning of Approximate Maximum '
             'p-Norm Margin Classifiers with Bias", COLT 2008',
    "alma": 'C. Gentile, "A New Approximate Maximal Margin Classification Algorithm", '
            'JMLR 2 (2001)',
    "romma": 'Y. Li and P. M. Long, "The Relaxed Online Maximum Margin Algorithm", Machine '
             'Learning 2002, as restated by K. Ishibashi, K. Hatano and M. Takeda, "Online '
             'Learning of Approximate Maximum p-Norm Margin Classifiers with Bias", COLT 2008',
}

#: Relative slack for float64 outside implementations (values reported as floats).
SLACK = 2.0 ** -30


class NotApplicable(Exception):
    """The check does not apply to this implementation (the message is the reason).
    ``structural``: it never will on any draw (a final-state key the trace lacks)."""

    def __init__(self, reason: str, structural: bool = False) -> None:
        super().__init__(reason)
        self.structural = structural


@dataclass
class Data:
    """One draw: the online sequence, the parameters (defaults are filled in by :func:`call`)
    and the epochs; ``u``/``b`` a separating hyperplane where the strategy knows one."""

    X: np.ndarray
    y: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    epochs: int = 1
    u: Any = None
    b: Any = None
    margin: float | None = None
    name: str = ""

    def __repr__(self) -> str:  # hypothesis prints this for a falsifying example
        return (f"Data({self.name}, X={self.X.tolist()!r}, y={self.y.tolist()!r}, "
                f"params={ {k: str(v) for k, v in self.params.items()} }, "
                f"epochs={self.epochs})")


@dataclass(frozen=True)
class Check:
    """One check: ``function(impl, algorithm, data)``, its hypothesis ``strategy`` (drawing
    :class:`Data`), the final-state keys it ``needs``, and ``max_examples`` (modest: an
    outside implementation may be slow).  ``schema``: the family's parameters, whose
    defaults the implementation is called with (set by the family's declaration,
    ``Family.invariant_checks``)."""

    name: str
    algorithm: str
    function: Callable[[Any, str, Data], None]
    strategy: Any
    needs: tuple[str, ...]
    theorem: str
    paper: str
    max_examples: int = 15
    schema: ParamSchema[Any] | None = None

    @property
    def id(self) -> str:
        return f"{self.algorithm}:{self.name}"

    def __call__(self, impl: Any, data: Data) -> None:
        self.function(_with_defaults(impl, self.schema), self.algorithm, data)


def _with_defaults(impl: Any, schema: ParamSchema[Any] | None) -> Any:
    """``impl`` called with the parameters' defaults filled in from ``schema``."""
    if schema is None:
        return impl

    def filled(algorithm: str, X: Any, y: Any, *, epochs: int, kernel: str,
               params: dict[str, Any]) -> Any:
        return impl(algorithm, X, y, epochs=epochs, kernel=kernel,
                    params=dict(schema.resolve(params)))
    return filled


@dataclass
class CheckResult:
    check: Check
    status: str          # "pass" | "fail" | "not_applicable"
    message: str
    examples: int = 0    # draws the check applied to

    @property
    def ok(self) -> bool:
        return self.status == "pass"


# -- calling the implementation ------------------------------------------------------------

def call(impl: Any, algorithm: str, X: Any, y: Any, *, epochs: int = 1,
         kernel: str = "linear", params: dict[str, Any] | None = None) -> Any:
    """``impl`` in verify's protocol (a :class:`Check` hands its function an ``impl`` that
    fills in the parameters' defaults); the trace as a
    :class:`~perceptron_oracle.trace.Trace`.  NotImplementedError propagates (not
    applicable); a result that is not a trace is an InvariantViolation."""
    out = impl(algorithm, np.array(X, dtype=np.float64), np.array(y, dtype=np.int64),
               epochs=epochs, kernel=kernel, params=dict(params or {}))
    if isinstance(out, Trace):
        return out
    try:
        return Trace.from_dict(out)
    except TraceFormatError as exc:
        raise InvariantViolation(f"the implementation returned no valid trace: {exc}") from None


def _protocol(impl: Any, algorithm: str) -> Callable[..., Any]:
    """The family modules' protocol ``f(X, y, *, epochs, kernel, **params) -> Trace``."""
    def run(X: Any, y: Any, *, epochs: int = 1, kernel: str = "linear", **params: Any) -> Any:
        return call(impl, algorithm, X, y, epochs=epochs, kernel=kernel, params=params)
    return run


def _final(trace: Any, *keys: str, structural: bool = True) -> None:
    for key in keys:
        if key not in trace.final:
            raise NotApplicable(f"the trace reports no final.{key}", structural)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvariantViolation(message)


def _fr(v: Any) -> Fraction:
    return v if isinstance(v, Fraction) else to_fraction(v)


def _exact(X: Any, y: Any) -> tuple[list[list[Fraction]], list[int]]:
    return ([[Fraction(v) for v in row] for row in np.asarray(X, dtype=float).tolist()],
            [int(v) for v in np.asarray(y).tolist()])


# -- strategies ------------------------------------------------------------------------------

@st.composite
def _small_separable(draw: Any, bias: bool, max_T: int = 7, max_n: int = 3) -> Data:
    """Small integer points labelled by an integer hyperplane (u, b) (b = 0 without bias), no
    point on it; with bias both labels present.  u, b scaled to functional margin 1."""
    n = draw(st.integers(1, max_n), label="n")
    T = draw(st.integers(2, max_T), label="T")
    u = draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n).filter(any), label="u")
    b = Fraction(draw(st.integers(-4, 4), label="2b"), 2) if bias else Fraction(0)
    pts = draw(st.lists(st.lists(st.integers(-3, 3), min_size=n, max_size=n),
                        min_size=T, max_size=T), label="X")
    scores = [sum(a * c for a, c in zip(u, x)) + b for x in pts]
    assume(all(scores))
    y = [1 if s > 0 else -1 for s in scores]
    assume(not bias or len(set(y)) == 2)
    scale = min(abs(s) for s in scores)
    return Data(np.array(pts, dtype=float).reshape(T, n), np.array(y, dtype=np.int64),
                u=[Fraction(a) / scale for a in u], b=b / scale, name="small_separable")


def _from_sequence(seq: Sequence, params: dict[str, Any] | None = None, epochs: int = 1) -> Data:
    return Data(seq.X, seq.y, dict(params or {}), epochs, u=seq.u, margin=seq.margin,
                name=seq.name)


def _data(sequences: Any, params: Any = None, epochs: Any = st.just(1)) -> Any:
    return st.builds(_from_sequence, sequences, params if params is not None else st.just({}),
                     epochs)


@st.composite
def _noisy_with_u(draw: Any) -> Sequence:
    """Separable data with some labels flipped, keeping the u that separated it (the bounds
    with a hinge term D_gamma(u) hold for any u)."""
    seq = draw(separable())
    flips = draw(st.lists(st.booleans(), min_size=len(seq.y), max_size=len(seq.y)),
                 label="flips")
    rate = draw(st.sampled_from([0, 0, 1]), label="noise?")
    y = np.where(np.array(flips) & bool(rate), -seq.y, seq.y).astype(np.int64)
    return Sequence(seq.X, y, u=seq.u, name="separable" + (" (flipped)" if rate else ""))


# -- perceptron --------------------------------------------------------------------------------

def _perceptron_textbook(impl: Any, algorithm: str, data: Data) -> None:
    perceptron_invariants.check_classic(_protocol(impl, algorithm), data, epochs=data.epochs)


def _perceptron_novikoff(impl: Any, algorithm: str, data: Data) -> None:
    perceptron_invariants.check_novikoff(_protocol(impl, algorithm), data, epochs=3, **data.params)


def _perceptron_bookkeeping(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    _final(trace, "alpha", "votes", "averaged")
    if "total_votes" not in trace.final["averaged"]:
        raise NotApplicable("the trace reports no final.averaged.total_votes", True)
    perceptron_invariants.check_bookkeeping(trace, data, data.params)


def _perceptron_longest_survivor(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    _final(trace, "votes", "longest_survivor")
    if "index" not in trace.final["longest_survivor"]:
        raise NotApplicable("the trace reports no final.longest_survivor.index", True)
    perceptron_invariants.check_longest_survivor(trace)


# -- higher_order ----------------------------------------------------------------------------

def _ho_params(data: Data) -> higher_order_ref.HigherOrderParams:
    return higher_order_ref.resolve_params(data.params)


def _higher_order_r_range(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    rows, labels = _exact(data.X, data.y)
    higher_order_invariants.check_trace_r_range(trace, rows, labels, _ho_params(data))


def _higher_order_eq3(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    rows, labels = _exact(data.X, data.y)
    higher_order_invariants.check_trace_eq3(trace, rows, labels, _ho_params(data))


def _higher_order_theorem1(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    rows, labels = _exact(data.X, data.y)
    u = data.u
    if u is None:   # the sphere strategy keeps no u; the bound holds for every unit u
        u = np.linalg.lstsq(np.asarray(data.X, dtype=float),
                            np.asarray(data.y, dtype=float), rcond=None)[0]
    higher_order_invariants.check_trace_theorem1(trace, rows, labels, _ho_params(data), u)


def _higher_order_first_order(impl: Any, algorithm: str, data: Data) -> None:
    par = higher_order_ref.PARAMS.read(data.params)
    higher_order_invariants.check_reduces_to_first_order(
        _protocol(impl, algorithm), data.X, data.y, epochs=data.epochs, p=par.p, rho=par.rho)


# -- pnorm_perceptron --------------------------------------------------------------------------

def _pnorm_is_perceptron(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params={"p": 2})
    mistakes, w = textbook_perceptron(data.X, data.y, data.epochs)
    _require(trace.mistakes == mistakes, f"p = 2: mistakes {trace.mistakes} differ from the "
                                         f"Perceptron's {mistakes}")
    _require(trace.updates == trace.mistakes, "updates differ from mistakes")
    if "w" in trace.final:
        got = [_fr(v) for v in trace.final["w"]]
        scale = max([abs(v) for v in w] + [Fraction(1)])
        _require(all(abs(a - b) <= scale * Fraction(SLACK) for a, b in zip(got, w)),
                 f"p = 2: final w {[float(v) for v in got]} is not the Perceptron's "
                 f"{[float(v) for v in w]}")


def _pnorm_mistake_bound(impl: Any, algorithm: str, data: Data) -> None:
    p_exact = pnorm_ref.PARAMS.read(data.params).p
    p = float(p_exact)
    q = p / (p - 1)
    u = np.asarray(data.u, dtype=float)
    X = np.asarray(data.X, dtype=float)
    gamma = float(np.min(data.y * (X @ u))) / float(np.sum(np.abs(u) ** q) ** (1 / q))
    if not gamma > 1e-9:
        return
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    R = float(np.max(np.sum(np.abs(X) ** p, axis=1) ** (1 / p)))
    bound = (p - 1) * R ** 2 / gamma ** 2 * (1 + 1e-9)
    _require(len(trace.mistakes) <= bound,
             f"{len(trace.mistakes)} mistakes exceed (p-1) R_p^2 / gamma_q^2 = {bound:.6g} "
             f"(p = {p_exact}, R_p = {R:.6g}, gamma_q = {gamma:.6g})")


# -- second_order ----------------------------------------------------------------------------

_GAMMAS = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0]


def _second_order_theorem31(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    a = second_order_ref.PARAMS.read(data.params).a
    second_order_invariants.check_theorem_31(trace, data.X, data.y, a,
                                             np.asarray(data.u), _GAMMAS)


def _second_order_large_a(impl: Any, algorithm: str, data: Data) -> None:
    limit = second_order_invariants.perceptron_limit_a(data.X, data.y, data.epochs)
    if limit is None:   # a tie no a breaks: nothing to compare
        return
    a, mistakes = limit
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params={"a": a})
    _require(trace.mistakes == mistakes,
             f"a = {float(a):.6g} (beyond which the Perceptron's decisions are SOP's): "
             f"mistakes {trace.mistakes} differ from the Perceptron's {mistakes}")


LINEAR_AS_POLY = "poly:degree=1,coef0=0,gamma=1"


def _second_order_linear_kernel(impl: Any, algorithm: str, data: Data) -> None:
    primal = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    dual = call(impl, algorithm, data.X, data.y, epochs=data.epochs, kernel=LINEAR_AS_POLY,
                params=data.params)
    _require(dual.mistakes == primal.mistakes and dual.updates == primal.updates,
             f"Theorem 3.3: with the kernel {LINEAR_AS_POLY} the mistakes {dual.mistakes} "
             f"differ from the linear run's {primal.mistakes}")


# -- romma and pumma -------------------------------------------------------------------------

def _tol(*values: Any) -> float:
    return SLACK * (1 + sum(abs(float(v)) for v in values))


def _romma_lemma4(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    _final(trace, "w")
    if not trace.updates:
        return
    T = len(data.y)
    j = trace.updates[-1] % T
    w = [float(v) for v in trace.final["w"]]
    x = [float(v) for v in data.X[j]]
    margin = int(data.y[j]) * sum(a * b for a, b in zip(w, x))
    _require(abs(margin - 1) <= _tol(*(a * b for a, b in zip(w, x)), 1),
             f"after the last update (trial {trace.updates[-1]}) the final w gives example "
             f"{j} the margin y w.x = {margin!r}, not 1 (the constraint w.z >= 1 of "
             f"problem (2) is tight after every update)")


def _pumma_lemma4(impl: Any, algorithm: str, data: Data) -> None:
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    _final(trace, "w", "b")
    soft = data.params.get("C") is not None
    if soft:
        _final(trace, "xi", structural=False)
    T = len(data.y)
    pos = next((t % T for t in reversed(trace.updates) if data.y[t % T] == 1), None)
    neg = next((t % T for t in reversed(trace.updates) if data.y[t % T] == -1), None)
    if pos is None or neg is None:
        return   # start-up never completed: no constraint to check
    for key, want in (("pos", pos), ("neg", neg)):
        if isinstance(trace.final.get(key), int):
            _require(trace.final[key] == want,
                     f"final.{key} = {trace.final[key]}, but the last update on a "
                     f"{'positive' if key == 'pos' else 'negative'} example was on {want}")
    w = [float(v) for v in trace.final["w"]]
    b = float(trace.final["b"])
    for j, target in ((pos, 1), (neg, -1)):
        terms = [a * c for a, c in zip(w, (float(v) for v in data.X[j]))]
        value = sum(terms) + b
        if soft:
            value += target * float(trace.final["xi"][j])
        _require(abs(value - target) <= _tol(*terms, b, 1),
                 f"Lemma 4: w.x_{'pos' if target == 1 else 'neg'} + b"
                 f"{' + xi' if target == 1 else ' - xi'} = {value!r} on example {j}, not "
                 f"{target:+d} (the last {'positive' if target == 1 else 'negative'} "
                 f"example that caused an update)")


def _pnorm2(v: Any, r: float) -> float:
    return float(np.sum(np.abs(np.asarray(v, dtype=float)) ** r) ** (2 / r))


def _optimum(data: Data, bias: bool) -> Any:
    return optimum_2norm(data.X, data.y, bias=bias)


def _margin_params(algorithm: str, data: Data) -> tuple[Fraction, Fraction]:
    """(p, delta) of a ROMMA (p = 2) or PUMMA draw, read by the family's schema."""
    if algorithm == "pumma":
        pumma_par = pumma_ref.PARAMS.read(data.params)
        return pumma_par.p, pumma_par.delta
    return Fraction(2), romma_ref.PARAMS.read(data.params).delta


def _theorem3_run(impl: Any, algorithm: str, data: Data) -> tuple[Any, Any, float, bool]:
    """(trace, the optimum, Theorem 3's bound, whether an epoch passed without an update)."""
    bias = algorithm == "pumma"
    opt = _optimum(data, bias)
    if opt is None:
        raise NotApplicable("the draw is not separable")   # does not happen: separable data
    p_exact, delta = _margin_params(algorithm, data)
    p = float(p_exact)
    q = p / (p - 1)
    u_norm2 = _pnorm2(opt[0], q) * (1 + 1e-9)
    R2 = max(_pnorm2(row, p) for row in np.asarray(data.X, dtype=float)) * (1 + 1e-9)
    bound = float(theorem3_bound(algorithm, p_exact, delta, Fraction(R2), Fraction(u_norm2)))
    trace = call(impl, algorithm, data.X, data.y, epochs=data.epochs, params=data.params)
    T = len(data.y)
    per_epoch = Counter(t // T for t in trace.updates)
    clean = any(per_epoch[e] == 0 for e in range(data.epochs))
    return trace, opt, bound, clean


def _theorem3_updates(impl: Any, algorithm: str, data: Data) -> None:
    trace, _, bound, _ = _theorem3_run(impl, algorithm, data)
    _require(len(trace.updates) <= bound,
             f"Theorem 3 (i): {len(trace.updates)} updates exceed the bound {bound:.6g} "
             f"(delta = {_margin_params(algorithm, data)[1]}; SPEC.md 14.6)")


def _theorem3_margin(impl: Any, algorithm: str, data: Data) -> None:
    keys = ("w", "b") if algorithm == "pumma" else ("w",)
    trace, opt, _, clean = _theorem3_run(impl, algorithm, data)
    _final(trace, *keys)
    if not clean:
        return   # no epoch without an update yet: no verdict on the margin
    p_exact, delta_exact = _margin_params(algorithm, data)
    delta, p = float(delta_exact), float(p_exact)
    q = p / (p - 1)
    w = np.asarray([float(v) for v in trace.final["w"]])
    b = float(trace.final["b"]) if "b" in keys else 0.0
    X = np.asarray(data.X, dtype=float)
    worst = float(np.min(data.y * (X @ w + b)))
    _require(worst >= (1 - delta) - _tol(np.max(np.abs(X @ w)), b, 1),
             f"Theorem 3 (ii): an epoch passed without an update, but min y (w.x + b) = "
             f"{worst!r} < 1 - delta = {1 - delta!r}")
    wq, uq = _pnorm2(w, q) ** 0.5, _pnorm2(opt[0], q) ** 0.5
    _require(worst / wq >= (1 - delta) / uq * (1 - 1e-9),
             f"Theorem 3 (ii): the final {p:g}-norm margin {worst / wq!r} < (1 - delta) "
             f"gamma* = {(1 - delta) / uq!r}")


# -- the catalogue ---------------------------------------------------------------------------

def _epochs(lo: int, hi: int) -> Any:
    return st.integers(lo, hi)


def perceptron_checks() -> list[Check]:
    kw, nov = PAPERS["khardon_wachman"], PAPERS["novikoff"]
    eta = st.sampled_from([{}, {"eta": Fraction(1, 2)}, {"eta": Fraction(2)}])
    return [
        Check("textbook", "perceptron", _perceptron_textbook,
              _data(separable(), epochs=_epochs(1, 3)), (),
              "the default parameters give the textbook Perceptron (w = 0; on y w.x <= 0, "
              "w += y x), trial for trial", kw, 20),
        Check("novikoff", "perceptron", _perceptron_novikoff,
              _data(separable(min_margin=0.05), eta), (),
              "Novikoff's bound (R/gamma)^2 on the mistakes", nov, 20),
        Check("bookkeeping", "perceptron", _perceptron_bookkeeping,
              _data(label_noise(), perceptron_params(), _epochs(1, 2)),
              ("alpha", "votes", "averaged"),
              "the bookkeeping of alpha, the alpha-bound and the votes (Figure 2)", kw, 20),
        Check("longest_survivor", "perceptron", _perceptron_longest_survivor,
              _data(label_noise(), perceptron_params(), _epochs(1, 2)),
              ("votes", "longest_survivor"),
              "the longest survivor is the earliest hypothesis with the largest vote", kw,
              15),
    ]


@st.composite
def _ho_theorem_params(draw: Any) -> dict[str, Any]:
    """p = 2, rho c/k or theorem1 (Theorem 1's rules), sparse now and then."""
    params: dict[str, Any] = draw(higher_order_params(p2_only=True))
    if params.get("rho") == "constant":
        params["rho"] = "c/k"
    params["p"] = Fraction(2)
    return params


def higher_order_checks() -> list[Check]:
    ho = PAPERS["higher_order"]
    unit = _data(sphere(), _ho_theorem_params(), _epochs(1, 2))
    first = st.fixed_dictionaries({"p": st.sampled_from([Fraction(2), Fraction(2),
                                                         Fraction(3), Fraction(4)])})
    return [
        Check("r_range", "higher_order", _higher_order_r_range, unit, (),
              "Figure 1's rho_k, and Theorem 1's c <= r_k <= 2 - c (unit-norm instances)",
              ho, 15),
        Check("eq3", "higher_order", _higher_order_eq3, unit, (),
              "eq. (3) ||B_k v_k||^2 <= (2 - c')^2 k, and the final w = A_K v_K", ho, 15),
        Check("theorem1", "higher_order", _higher_order_theorem1, unit, (),
              "Theorem 1's mistake bound (2) (unit-norm instances)", ho, 15),
        Check("first_order", "higher_order", _higher_order_first_order,
              _data(label_noise(), first, _epochs(1, 2)), (),
              "c = 0 (rho = 0) is the Perceptron (p = 2) and the p-norm Perceptron (p > 2)",
              ho, 10),
    ]


def pnorm_perceptron_checks() -> list[Check]:
    pn = PAPERS["pnorm"]
    return [
        Check("p2_is_perceptron", "pnorm_perceptron", _pnorm_is_perceptron,
              _data(label_noise(), epochs=_epochs(1, 2)), (),
              "p = 2 is the Perceptron", pn, 15),
        Check("mistake_bound", "pnorm_perceptron", _pnorm_mistake_bound,
              _data(separable(min_margin=0.05), pnorm_params(), _epochs(1, 3)),
              (), "the p-norm Perceptron's mistake bound (p-1) R_p^2 / gamma_q^2", pn, 15),
    ]


def second_order_checks() -> list[Check]:
    sop = PAPERS["second_order"]
    a = st.fixed_dictionaries({"a": st.sampled_from([Fraction(1, 10), Fraction(1, 2),
                                                     Fraction(1), Fraction(2),
                                                     Fraction(10)])})
    variants = st.sampled_from([{}, {"a": Fraction(1, 2)}, {"a": Fraction(2)},
                                {"a_growth": "linear"}])
    return [
        Check("theorem31", "second_order", _second_order_theorem31,
              _data(_noisy_with_u(), a, _epochs(1, 2)), (),
              "Theorem 3.1's mistake bound", sop, 15),
        Check("large_a", "second_order", _second_order_large_a,
              _data(separable(), epochs=_epochs(1, 2)), (),
              "a large a makes the Perceptron's mistakes (A_k -> a I)", sop, 15),
        Check("linear_kernel", "second_order", _second_order_linear_kernel,
              _data(separable(), variants, _epochs(1, 2)), (),
              "Theorem 3.3 (the dual form): the kernel (x.z)^1 gives the linear run", sop, 10),
    ]


def _with(strategy: Any, params: Any, epochs: Any) -> Any:
    def attach(data: Data, p: dict[str, Any], e: int) -> Data:
        data.params, data.epochs = dict(p), e
        return data
    return st.builds(attach, strategy, params, epochs)


def _maximum_margin_checks(algorithm: str) -> list[Check]:
    bias = algorithm == "pumma"
    paper = PAPERS[algorithm]
    data = _small_separable(bias)
    delta = st.sampled_from([Fraction(0), Fraction(1, 10), Fraction(1, 4)])
    positive = st.sampled_from([Fraction(1, 4), Fraction(1, 2)])
    if bias:
        lemma_params = st.fixed_dictionaries(
            {"delta": delta},
            optional={"p": st.sampled_from([Fraction(2), Fraction(3)]),
                      "C": st.sampled_from([Fraction(1), Fraction(1, 4)])})
        t3_params = st.fixed_dictionaries(
            {"delta": positive}, optional={"p": st.sampled_from([Fraction(2), Fraction(3)])})
        lemma = Check("lemma4", algorithm, _pumma_lemma4, _with(data, lemma_params,
                                                                _epochs(1, 3)),
                      ("w", "b"), "Lemma 4 (the final state satisfies the last update's "
                      "constraints w.x_pos + b = 1, w.x_neg + b = -1)", paper, 15)
    else:
        lemma_params = st.fixed_dictionaries({"delta": delta})
        t3_params = st.fixed_dictionaries({"delta": positive})
        lemma = Check("lemma4", algorithm, _romma_lemma4, _with(data, lemma_params,
                                                                _epochs(1, 3)),
                      ("w",), "the last update's constraint y w.x = 1 holds in the final "
                      "state (problem (2); Lemma 4 for PUMMA)", paper, 15)
    keys = ("w", "b") if bias else ("w",)
    return [
        lemma,
        Check("theorem3_updates", algorithm, _theorem3_updates,
              _with(data, t3_params, st.just(30)), (),
              "Theorem 3 (i): the number of updates (as tight as the proof gives, SPEC.md "
              "14.6)", paper, 10),
        Check("theorem3_margin", algorithm, _theorem3_margin,
              _with(data, t3_params, st.just(30)), keys,
              "Theorem 3 (ii): after an epoch without an update the margin is >= "
              "(1 - delta) gamma*", paper, 10),
    ]


def _alma_corrections(impl: Any, algorithm: str, data: Data) -> None:

    par = alma_ref.PARAMS.read(data.params)
    p = par.p
    q = float(p) / (float(p) - 1)
    u = np.asarray([float(v) for v in data.u])
    u = u / np.sum(np.abs(u) ** q) ** (1 / q)
    check_corrections_bound(data.X, data.y, list(u), p=p, alpha=par.alpha,
                            impl=_protocol(impl, algorithm), max_epochs=32)


def alma_checks() -> list[Check]:
    params = st.fixed_dictionaries(
        {"alpha": st.sampled_from([Fraction(1, 2), Fraction(9, 10), Fraction(1)])},
        optional={"p": st.sampled_from([Fraction(2), Fraction(3)])})
    return [Check("corrections_bound", "alma", _alma_corrections,
                  _with(_small_separable(False), params, st.just(1)), (),
                  "Theorem 3 (separable case): with B = 1/alpha and C = sqrt(2) the number "
                  "of corrections is at most 2(p - 1)/gamma^2 (2/alpha - 1)^2 + 8/alpha - 4 "
                  "(the constant as SPEC.md 15.6 states it: the abstract gives the order "
                  "only)",
                  PAPERS["alma"], 10)]


def romma_checks() -> list[Check]:
    return _maximum_margin_checks("romma")


def pumma_checks() -> list[Check]:
    return _maximum_margin_checks("pumma")


def cited(check: Check) -> Check:
    """``check`` with its function wrapped so that its InvariantViolation names the theorem
    and the paper."""
    inner = check.function

    def function(impl: Any, algorithm: str, data: Data) -> None:
        try:
            inner(impl, algorithm, data)
        except InvariantViolation as exc:
            raise InvariantViolation(f"{algorithm}: {check.theorem} ({check.paper}): "
                                     f"{exc}") from None

    function.__name__ = f"check_{check.algorithm}_{check.name}"
    function.__doc__ = f"{check.theorem} ({check.paper})."
    return replace(check, function=function)


# -- running checks --------------------------------------------------------------------------

@dataclass
class _Tally:
    applied: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    stop: NotApplicable | None = None

    def reason(self) -> str:
        if self.stop is not None:
            return str(self.stop)
        if not self.reasons:
            return "no draw applied"
        reason, count = self.reasons.most_common(1)[0]
        return f"{reason} ({count} of {sum(self.reasons.values())} draws)"


def hypothesis_test(check: Check, impl: Any, max_examples: int | None = None,
                    shrink: bool = True) -> tuple[Callable[[], None], _Tally]:
    """A hypothesis test running ``check`` on ``impl``, and the tally it fills: how many
    draws applied, and why the others did not.  Draws are derandomized (the same every run)
    and nothing is written to a hypothesis database."""
    tally = _Tally()
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])

    @settings(max_examples=max_examples or check.max_examples, deadline=None, database=None,
              derandomize=True, phases=phases, suppress_health_check=list(HealthCheck))
    @given(data=check.strategy)
    def test(data: Data) -> None:
        if tally.stop is not None:
            return
        try:
            check(impl, data)
        except NotApplicable as exc:
            tally.reasons[str(exc)] += 1
            if exc.structural:
                tally.stop = exc
        except NotImplementedError as exc:
            tally.reasons[str(exc) or "NotImplementedError"] += 1
        else:
            tally.applied += 1

    return test, tally


def run_check(check: Check, impl: Any, max_examples: int | None = None,
              shrink: bool = True) -> CheckResult:
    """Run one check on hypothesis draws: pass, fail (the message names the theorem, the
    paper and the falsifying draw) or not applicable (no draw applied: the reason)."""
    test, tally = hypothesis_test(check, impl, max_examples, shrink)
    try:
        test()
    except InvariantViolation as exc:
        notes = "\n".join(getattr(exc, "__notes__", []))
        return CheckResult(check, "fail", f"{exc}\n{notes}".strip(), tally.applied)
    except Exception as exc:  # an outside implementation may raise anything
        notes = "\n".join(getattr(exc, "__notes__", []))
        return CheckResult(check, "fail", f"raised {type(exc).__name__}: {exc}\n{notes}"
                           .strip(), tally.applied)
    if tally.stop is not None or not tally.applied:
        return CheckResult(check, "not_applicable", tally.reason(), 0)
    return CheckResult(check, "pass", f"{tally.applied} draws", tally.applied)
