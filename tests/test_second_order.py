"""The Second-Order Perceptron: SPEC.md "second_order"'s decisions, the invariants of
``properties/second_order.py`` on every implementation, and the planted bugs of
``tests/wrong_second_order.py`` that each must catch."""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wrong_second_order as wrong
from perceptron_oracle import run
from perceptron_oracle.compare import compare
from perceptron_oracle.errors import ParamError
from perceptron_oracle.experiments import second_order as experiment
from perceptron_oracle.fast import second_order as fast
from perceptron_oracle.properties import second_order as inv
from perceptron_oracle.properties.perceptron import textbook_perceptron
from perceptron_oracle.properties.strategies import separable, small_integers
from perceptron_oracle.registry import get
from perceptron_oracle.trace import Trace

# the exact runs as the registry gives them: with their shadow runs (SPEC.md section 3)
reference = get("second_order").implementation("reference")

IMPLEMENTATIONS = [("reference", None), ("fast", "primal"), ("fast", "dual")]


@pytest.fixture(scope="module", params=IMPLEMENTATIONS,
                ids=lambda p: f"second_order:{p[1] or p[0]}")
def impl(request):
    which, form = request.param
    return functools.partial(run, "second_order", impl=which, form=form)


def _small(seed, T=10, n=3, integers=False):
    rng = np.random.default_rng(seed)
    if integers:
        X = rng.integers(-2, 3, size=(T, n)).astype(float)
    else:
        X = np.round(rng.normal(size=(T, n)) * 8) / 8  # dyadic, short: fast exact checks
    y = np.where(rng.random(T) < 0.5, 1, -1)
    return X, y


VARIANTS = [dict(), dict(a=Fraction(1, 3)), dict(a_growth="linear", a=Fraction(1, 2)),
            dict(pseudoinverse=True)]


# -- SPEC.md "second_order": the decisions ----------------------------------------------------

def test_parameters_are_checked():
    X, y = _small(0)
    with pytest.raises(ParamError, match="a must be > 0"):
        reference(X, y, a=0)
    with pytest.raises(ParamError, match="pseudoinverse"):
        reference(X, y, a=2, pseudoinverse=True)
    with pytest.raises(ParamError, match="a_growth"):
        run("second_order", X, y, impl="fast", a_growth="sqrt")
    with pytest.raises(ParamError, match="linear kernel"):
        run("second_order", X, y, impl="fast", form="primal", kernel="rbf:gamma=1")


def test_first_trial_is_a_zero_score_mistake():
    X, y = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([-1, 1])
    for params in VARIANTS:
        trace = reference(X, y, record_scores=True, **params)
        assert trace.scores[0] == 0 and trace.mistakes[0] == 0


def test_pseudoinverse_scores_zero_outside_the_span():
    """x_t outside span(X_{k-1}): (S S^T)^+ projects v onto a space where x_t's new
    direction carries no label, and the score is exactly 0 (SPEC.md)."""
    X = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    y = np.array([1, 1, 1, -1])
    trace = reference(X, y, pseudoinverse=True, record_scores=True)
    assert trace.scores[1] == 0 and trace.scores[3] == 0    # new directions
    assert trace.scores[2] > 0                             # inside span{x_0, x_1}
    assert trace.mistakes == [0, 1, 3]


def test_adaptive_a_uses_a_k_with_k_minus_one_mistakes_before():
    X, y = _small(1)
    trace = reference(X, y, a=Fraction(1, 2), a_growth="linear", record_scores=True)
    inv.check_literal(trace, X, y)  # the literal check rebuilds a_k from the mistakes


# -- the invariants ---------------------------------------------------------------------------

@pytest.mark.parametrize("params", VARIANTS, ids=lambda p: ",".join(map(str, p)) or "basic")
@pytest.mark.parametrize("kernel", ["linear", "poly:degree=2,coef0=1,gamma=1/2"])
def test_literal_definition_and_theorem_33(params, kernel):
    """Every score equals x^T (a_k I + S S^T)^{-1} v (or (S S^T)^+) from the full matrices,
    and Theorem 3.3's dual expression equals it exactly."""
    for seed in range(4):
        X, y = _small(seed, T=7, n=3, integers=seed % 2 == 1)
        trace = reference(X, y, epochs=2, kernel=kernel, record_scores=True, **params)
        inv.check_literal(trace, X, y, kernel)


@settings(max_examples=30)
@given(seq=separable(min_margin=0.05), a=st.sampled_from([Fraction(1, 10), 1, 10]))
def test_theorem_31(impl, seq, a):
    trace = impl(seq.X, seq.y, epochs=3, a=a)
    gammas = [seq.margin * f for f in (0.25, 0.5, 1.0, 1.5, 2.0)]
    inv.check_theorem_31(trace, seq.X, seq.y, a, seq.u, gammas)


@settings(max_examples=30)
@given(seq=st.one_of(separable(), small_integers()),
       a=st.sampled_from([Fraction(1, 4), 1, 8]))
def test_proof_chain_at_every_mistake(seq, a):
    trace = reference(seq.X, seq.y, epochs=2, a=a)
    inv.check_proof_chain(trace, seq.X, seq.y, a)


@settings(max_examples=15)
@given(seq=st.one_of(separable(), small_integers()), epochs=st.integers(1, 3))
def test_large_a_is_the_perceptron(impl, seq, epochs):
    found = inv.perceptron_limit_a(seq.X, seq.y, epochs)
    if found is None:  # the Perceptron meets an exact tie: no a makes SOP follow it
        return
    a, mistakes = found
    assert mistakes == textbook_perceptron(seq.X, seq.y, epochs)[0]
    if impl.keywords.get("impl") == "reference":
        assert impl(seq.X, seq.y, epochs=epochs, a=a).mistakes == mistakes
    elif a <= 2**20:  # float64 forms: equal to the exact run outside fragile trials
        expected = reference(seq.X, seq.y, epochs=epochs, a=a, record_scores=True)
        assert expected.mistakes == mistakes
        result = compare(expected, impl(seq.X, seq.y, epochs=epochs, a=a), seq.X)
        assert result.ok, result.describe()


def test_perceptron_limit_is_approached_as_a_grows():
    X, y = _small(3, T=30, n=4)
    a, mistakes = inv.perceptron_limit_a(X, y, 2)
    agree = [sum(m in set(mistakes) for m in reference(X, y, epochs=2, a=b).mistakes)
             for b in (1, a)]
    assert agree[-1] == len(mistakes) and reference(X, y, epochs=2, a=a).mistakes == mistakes


def test_lemma_d1_on_random_psd_matrices():
    rng = np.random.default_rng(7)
    for trial in range(40):
        n = int(rng.integers(1, 5))
        r = int(rng.integers(0, n + 1))
        vecs = [[Fraction(int(v)) for v in rng.integers(-3, 4, size=n)] for _ in range(r)]
        B = [[sum(v[i] * v[j] for v in vecs) for j in range(n)] for i in range(n)]
        if trial % 2 and vecs:   # x inside span(B)
            x = [sum(c * v[i] for c, v in zip(rng.integers(-2, 3, size=r), vecs))
                 for i in range(n)]
            x = [Fraction(int(v)) for v in x]
        else:
            x = [Fraction(int(v)) for v in rng.integers(-3, 4, size=n)]
        inv.check_lemma_d1(B, x)


def test_lemma_d1_catches_a_regularised_inverse():
    def near(M):  # (M + 2^-20 I)^{-1}: close to M^+ on span(M), wrong off it
        from perceptron_oracle.reference.second_order_engines import exact_inverse
        return exact_inverse([[m + (Fraction(1, 2**20) if i == j else 0)
                               for j, m in enumerate(r)] for i, r in enumerate(M)], Fraction(1))
    B = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(0)]]
    with pytest.raises(inv.InvariantViolation):
        inv.check_lemma_d1(B, [Fraction(1), Fraction(1)], pinv=near)


def test_dual_poly_kernel_equals_primal_on_expanded_features():
    """(g x.z + c)^2 = phi(x).phi(z) with phi = (c, sqrt(2 g c) x_i, g x_i^2,
    sqrt(2) g x_i x_j): the dual form with the kernel and the primal form on phi agree."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0, 1, -1)
    g, c = 0.5, 1.0
    cols = [np.full(len(X), c)] + [np.sqrt(2 * g * c) * X[:, i] for i in range(3)]
    cols += [g * X[:, i] ** 2 for i in range(3)]
    cols += [np.sqrt(2) * g * X[:, i] * X[:, j] for i in range(3) for j in range(i + 1, 3)]
    Phi = np.column_stack(cols)
    for params in (dict(a=1), dict(a=Fraction(1, 10), a_growth="linear"),
                   dict(pseudoinverse=True)):
        d = fast.dual(X, y, epochs=3, kernel="poly:degree=2,coef0=1,gamma=1/2",
                      record_scores=True, **params)
        p = fast.primal(Phi, y, epochs=3, record_scores=True, **params)
        first = next((t for t, (u, v) in enumerate(zip(d.scores, p.scores))
                      if (abs(u) < 1e-7 or abs(v) < 1e-7) and (u, v) != (0, 0)),
                     len(d.scores))
        assert [m for m in d.mistakes if m < first] == [m for m in p.mistakes if m < first]
        assert first > 20


def test_long_ill_conditioned_run_matches_the_reference(monkeypatch):
    """Strongly correlated features, a small a and hundreds of mistakes: the incremental
    inverses drift; the residual check refactors and the traces still match."""
    rng = np.random.default_rng(12)
    base = rng.normal(size=(300, 1))
    X = base + 1e-3 * rng.normal(size=(300, 4))
    y = np.where(rng.random(300) < 0.5, 1, -1)
    counts = {}
    for cls in (fast._Primal, fast._Dual):
        orig = cls._refactor

        def counted(self, orig=orig, name=cls.__name__):
            counts[name] = counts.get(name, 0) + 1
            orig(self)
        monkeypatch.setattr(cls, "_refactor", counted)
    monkeypatch.setattr(fast, "DRIFT_TOL", 1e-13)   # refactor at (almost) every check
    expected = reference(X, y, epochs=2, a=Fraction(1, 64), record_scores=True)
    assert len(expected.mistakes) > 150
    for form in ("primal", "dual"):
        result = compare(expected, run("second_order", X, y, impl="fast", form=form, epochs=2,
                                       a=Fraction(1, 64)), X)
        assert result.ok, result.describe()
    assert counts.get("_Primal", 0) > 0 and counts.get("_Dual", 0) > 0


def test_drift_check_measures_the_residual():
    X, y = _small(4, T=80, n=4)
    model = fast._Primal(X, y, fast.PARAMS.read({"a": 1}), False)
    for j in range(40):
        model.update(j)
    assert model._drift() < 1e-12
    model.Ainv[0, 0] += 1e-6                      # a planted drift
    assert model._drift() > fast.DRIFT_TOL


def test_simulation_sop_beats_the_perceptron():
    """The slides' table, qualitatively, at a CI size: SOP (a = 1, 10) makes several times
    fewer test mistakes than the Perceptron on both data sets."""
    result = experiment.table(repeats=2, n_train=3000, n_test=1000, n=50, a_values=(1, 10))
    for dataset in (1, 2):
        perceptron = result["perceptron"][dataset][0]
        best = min(result[f"sop a={a}"][dataset][0] for a in (1, 10))
        assert best * 2 <= perceptron, experiment.format_table(result)


# -- deliberately wrong implementations -------------------------------------------------------

def _mutation_cases():
    cases = []
    for seed in range(4):
        X, y = _small(seed, T=6, n=3, integers=seed % 2 == 1)
        for kernel in ("linear", "poly:degree=2,coef0=1,gamma=1/2"):
            for params in VARIANTS:
                cases.append((X, y, kernel, params))
    return cases


def _caught(mutation, cases):
    for X, y, kernel, params in cases:
        trace = Trace.from_dict(wrong.run_wrong(mutation, X, y, epochs=2, kernel=kernel,
                                                **params))
        try:
            inv.check_literal(trace, X, y, kernel)
        except inv.InvariantViolation:
            return True
    return False


def test_the_correct_planted_implementation_passes():
    cases = _mutation_cases()
    assert not _caught("", cases[::3])  # the literal checks on the rest: test_literal_...
    X, y, kernel, params = cases[0]
    expected = reference(X, y, epochs=2, kernel=kernel, **params)
    actual = Trace.from_dict(wrong.correct("second_order", X, y, epochs=2, kernel=kernel,
                                           params=params))
    assert compare(expected, actual, X).ok


@pytest.mark.parametrize("mutation", [m for m in wrong.MUTATIONS if m])
def test_each_mutation_is_caught(mutation):
    assert _caught(mutation, _mutation_cases()), wrong.MUTATIONS[mutation]


def test_mutations_diverge_from_the_reference_on_some_case():
    """The differential comparison (what ``verify`` uses) rejects the mutations that change
    decisions."""
    for mutation in ("rank_one_sign", "bordered_transpose", "tie_rule", "every_trial",
                     "pinv_as_inverse"):
        diverged = False
        for X, y, kernel, params in _mutation_cases():
            actual = Trace.from_dict(wrong.run_wrong(mutation, X, y, epochs=2, kernel=kernel,
                                                     **params))
            expected = reference(X, y, epochs=2, kernel=kernel, **params)
            if expected.mistakes != actual.mistakes:
                diverged = True
                break
        assert diverged, mutation
