"""ROMMA and PUMMA: the decisions of SPEC.md ("romma and pumma"), the guarantees of
``properties/romma_pumma.py`` on hypothesis-generated data, and the planted bugs of
``tests/wrong_romma_pumma.py`` that the guarantees must catch."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import wrong_romma_pumma as wrong
from perceptron_oracle.compare import compare
from perceptron_oracle.errors import ParamError
from perceptron_oracle.fast._compiled import available as numba_available
from perceptron_oracle.numbers import to_fraction
from perceptron_oracle.properties import romma_pumma as inv
from perceptron_oracle.registry import get, run
from perceptron_oracle.trace import load_trace_file

# the exact runs as the registry gives them: with their shadow runs (SPEC.md section 3)
pumma = get("pumma").implementation("reference")
romma = get("romma").implementation("reference")

F = Fraction


# -- data --------------------------------------------------------------------------------------

@st.composite
def small_separable(draw, max_T=7, max_n=3, bias=True):
    """Small integer points labelled by an integer hyperplane (u, b), no point on it, both
    labels present; returns (X, y, u, b) with (u, b) scaled to functional margin 1."""
    n = draw(st.integers(1, max_n), label="n")
    T = draw(st.integers(2, max_T), label="T")
    u = draw(st.lists(st.integers(-2, 2), min_size=n, max_size=n), label="u")
    assume(any(u))
    b = F(draw(st.integers(-4, 4), label="2b"), 2) if bias else F(0)
    pts = draw(st.lists(st.lists(st.integers(-3, 3), min_size=n, max_size=n),
                        min_size=T, max_size=T), label="X")
    scores = [sum(a * c for a, c in zip(u, x)) + b for x in pts]
    assume(all(s != 0 for s in scores))
    y = [1 if s > 0 else -1 for s in scores]
    assume(not bias or len(set(y)) == 2)
    scale = min(abs(s) for s in scores)
    return (np.array(pts, dtype=float), np.array(y), [F(a) / scale for a in u], b / scale)


def _fixed_sets(count=30, seed=0, T=6, n=2):
    """Deterministic separable small-integer sets for the mutation tests."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        u = rng.integers(-2, 3, size=n)
        b = F(int(rng.integers(-3, 4)), 2)
        X = rng.integers(-3, 4, size=(T, n))
        s = [F(int(v)) + b for v in X @ u]
        if not any(u) or any(v == 0 for v in s) or len({v > 0 for v in s}) < 2:
            continue
        out.append((X.astype(float), np.array([1 if v > 0 else -1 for v in s])))
    return out


# -- SPEC: start-up, first trial, infeasible problems, parameters -------------------------------

def test_pumma_start_up_scores_and_updates():
    X = np.array([[1.0, 0.0], [2.0, 1.0], [-1.0, 0.0], [0.0, 3.0]])
    y = np.array([-1, -1, 1, 1])
    tr = pumma(X, y, record_scores=True)
    # no positive yet: score -1 (trial 0 stores the first negative: an update, no mistake;
    # trial 1 is another negative: correct, margin 1, not stored); trial 2 completes the pair
    assert tr.scores[:3] == [-1, -1, -1]
    assert tr.updates[:2] == [0, 2] and tr.mistakes[0] == 2
    assert tr.final["pos"] in (2, 3) and tr.final["neg"] in (0, 1)


def test_pumma_positive_first_then_plus_one_until_a_negative():
    X = np.array([[1.0], [2.0], [-1.0]])
    tr = pumma(X, np.array([1, 1, -1]), record_scores=True)
    assert tr.scores[:3] == [-1, 1, 1]
    assert tr.mistakes == [0, 2] and tr.updates == [0, 2]


def test_pumma_one_class_only_makes_one_update():
    tr = pumma(np.array([[1.0], [2.0]]), np.array([-1, -1]), epochs=3)
    assert tr.updates == [0] and tr.mistakes == []
    assert tr.final == {"w": [0], "b": -1, "neg": 0}  # no positive example: no pos


@pytest.mark.parametrize("impl", ["reference", "fast"])
def test_a_one_class_pumma_trace_is_a_trace_file(tmp_path, impl):
    """A run of positive examples only has no neg: the key is left out (a trace file holds
    numbers only), and the trace, written and read back as a file, passes against the
    reference."""
    X, y = np.array([[1.0, 0.5], [2.0, -1.0], [0.5, 0.25]]), np.array([1, 1, 1])
    for params in ({}, {"C": 1}, {"p": 3}):
        trace = run("pumma", X, y, impl=impl, epochs=2, **params)
        assert "neg" not in trace.final and trace.final["pos"] in (0, 1, 2)
        path = tmp_path / "t.json"
        path.write_text(trace.to_json())
        again = load_trace_file(path)
        expected = run("pumma", X, y, epochs=2, **params)
        assert compare(expected, again, X=X).ok


def test_pumma_identical_opposite_pair_is_infeasible_not_an_update():
    tr = pumma(np.array([[1.0], [1.0], [2.0]]), np.array([1, -1, -1]))
    assert tr.updates == [0, 2] and tr.final["neg"] == 2
    soft = pumma(np.array([[1.0], [1.0]]), np.array([1, -1]), C=1)   # feasible with slacks
    assert soft.updates == [0, 1]


def test_romma_first_trial_and_zero_instance():
    tr = romma(np.array([[2.0, 0.0], [0.0, 0.0]]), np.array([1, -1]), record_scores=True)
    assert tr.scores[0] == 0 and tr.mistakes == [0, 1] and tr.updates == [0]
    assert tr.final["w"] == [F(1, 2), 0]          # y x / ||x||^2


def test_last_example_and_pair_members_are_not_retested():
    """Their margin is exactly 1 (tight constraints): with delta = 0 they never update and
    are not fragile; a duplicate of them under another index is fragile."""
    X = np.array([[0.3, 0.1], [-0.2, 0.7], [0.3, 0.1]])
    tr = pumma(X, np.array([1, -1, 1]), epochs=2, record_scores=True)
    assert 3 not in tr.updates and 4 not in tr.updates and 3 not in tr.fragile
    assert tr.scores[3] + 0 == 1 and tr.scores[4] == -1   # Lemma 4, exact


def test_final_layouts():
    X = np.array([[1.0, 0.5], [-1.0, 0.2], [0.3, 1.0]])
    y = np.array([1, -1, 1])
    assert set(romma(X, y).final) == {"w"}
    assert set(romma(X, y, kernel="poly:degree=2,coef0=1,gamma=1").final) == {"alpha"}
    assert set(pumma(X, y).final) == {"w", "b", "pos", "neg"}
    assert set(pumma(X, y, C=1, kernel="rbf:gamma=1").final) == {"alpha", "b", "pos", "neg",
                                                                 "xi"}
    assert set(pumma(X, y, p=3, C=2).final) == {"w", "b", "pos", "neg", "xi"}


@pytest.mark.parametrize("call,needle", [
    (lambda X, y: pumma(X, y, p=F(3, 2)), "p"),
    (lambda X, y: pumma(X, y, delta=1), "delta"),
    (lambda X, y: romma(X, y, delta=-F(1, 10)), "delta"),
    (lambda X, y: pumma(X, y, C=0), "C"),
    (lambda X, y: pumma(X, y, p=3, kernel="rbf:gamma=1"), "p > 2"),
    (lambda X, y: romma(X, y, kernel="rbf:gamma=1", numbers="fraction"), "numbers"),
    (lambda X, y: pumma(X, y, numbers="mpmath:12"), "numbers"),
])
def test_bad_parameters_are_named(call, needle):
    with pytest.raises(ParamError, match=needle):
        call(np.array([[1.0], [-1.0]]), np.array([1, -1]))


# -- numbers: Fraction and mpmath agree; auto switches on long runs ---------------------------

def test_modes_agree_and_are_recorded():
    rng = np.random.default_rng(3)
    X, y = rng.uniform(-1, 1, (8, 3)), np.where(rng.random(8) < 0.5, 1, -1)
    for f in (romma, pumma):
        exact = f(X, y, epochs=2, numbers="fraction")
        approx = f(X, y, epochs=2, numbers="mpmath:200")
        assert exact.params["numbers"] == "fraction"
        assert approx.params["numbers"] == "mpmath:200"
        assert (exact.updates, exact.mistakes) == (approx.updates, approx.mistakes)
        for a, b in zip(exact.final["w"], approx.final["w"]):
            assert abs(a - to_fraction(b)) <= F(1, 2**150) * (1 + abs(a))


def test_auto_leaves_fraction_when_numbers_grow():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 5)), np.where(rng.random(30) < 0.5, 1, -1)
    tr = pumma(X, y, epochs=3)
    assert tr.params["numbers"].startswith("mpmath:")
    again = pumma(X, y, epochs=3, numbers=tr.params["numbers"])    # reproducible from params
    assert again.updates == tr.updates and again.final == tr.final


# -- the guarantees (properties/romma_pumma.py) -------------------------------------------------

@settings(max_examples=100)
@given(data=small_separable(), delta=st.sampled_from([F(1, 4), F(1, 2)]))
def test_theorem3_margin_against_the_exact_optimum(data, delta):
    X, y, _, _ = data
    opt = inv.optimum_2norm(X, y)
    assert opt is not None, "separable data without an exact optimum: the solver is wrong"
    result = inv.check_theorem3(X, y, u_norm2=opt[2], delta=delta, max_epochs=25)
    assume(result is not None)   # no clean epoch within 25 epochs (allowed by the bound)
    event(f"updates: {len(result.updates)}")


@settings(max_examples=30)
@given(data=small_separable(bias=False), delta=st.sampled_from([F(1, 4), F(1, 2)]))
def test_theorem3_for_romma_homogeneous(data, delta):
    X, y, _, _ = data
    opt = inv.optimum_2norm(X, y, bias=False)
    assert opt is not None
    assume(inv.check_theorem3(X, y, u_norm2=opt[2], delta=delta, max_epochs=25,
                              algorithm="romma") is not None)


@settings(max_examples=15)
@given(data=small_separable(max_T=5), delta=st.just(F(1, 2)))
def test_theorem3_p3_against_the_generators_margin(data, delta):
    X, y, u, b = data
    norm2 = inv._norm2(u, F(3, 2))               # ||u||_q^2, q = 3/2
    assume(inv.check_theorem3(X, y, u_norm2=inv._fr(norm2), p=3, delta=delta,
                              max_epochs=8) is not None)


@settings(max_examples=30)
@given(data=small_separable(), p=st.sampled_from([F(2), F(2), F(3)]),
       C=st.sampled_from([None, None, F(1), F(1, 4)]), epochs=st.integers(1, 3))
def test_lemma4_after_every_update(data, p, C, epochs):
    X, y, _, _ = data
    inv.check_lemma4(X, y, epochs=epochs, p=p, C=C)


@settings(max_examples=30)
@given(data=small_separable(), epochs=st.integers(1, 3),
       delta=st.sampled_from([F(0), F(1, 10)]))
def test_theorem2_pumma_is_romma_on_half_differences(data, epochs, delta):
    X, y, _, _ = data
    inv.check_pumma_is_romma_on_half_differences(X, y, epochs=epochs, delta=delta)


@settings(max_examples=30)
@given(data=small_separable(), p=st.sampled_from([F(2), F(3)]), epochs=st.integers(1, 3))
def test_lemma5_and_lemma6(data, p, epochs):
    X, y, u, b = data
    if p == 2:   # the best (u, b): the exact optimum, scaled to functional margin 1
        u, b, _ = inv.optimum_2norm(X, y)
    inv.check_lemma5(X, y, u, b, epochs=epochs, p=p)
    inv.check_lemma6(X, y, epochs=epochs, p=p)


@settings(max_examples=20)
@given(data=small_separable(), epochs=st.integers(1, 3))
def test_romma_tight_constraint_and_gain(data, epochs):
    X, y, _, _ = data
    inv.check_romma_lemma6(X, y, epochs=epochs)


@settings(max_examples=25)
@given(data=small_separable(), C=st.sampled_from([F(1), F(4), F(1, 4)]),
       epochs=st.integers(1, 3), delta=st.sampled_from([F(0), F(1, 4)]))
def test_soft_margin_is_hard_margin_on_augmented_examples(data, C, epochs, delta):
    X, y, _, _ = data
    y = y.copy()
    y[0] = -y[0]                       # make it inseparable now and then: slacks matter
    inv.check_soft_equals_augmented(X, y, C=C, epochs=epochs, delta=delta)


# -- the planted bugs are caught ----------------------------------------------------------------

def _caught(mutation, check, sets, **kw):
    found = 0
    with wrong.planted(mutation):
        for X, y in sets:
            try:
                check(X, y, **kw)
            except (inv.InvariantViolation, ArithmeticError, ZeroDivisionError):
                found += 1
    return found


def _theorem3(X, y, p=2, delta=Fraction(1, 4)):
    opt = inv.optimum_2norm(X, y)
    u2 = opt[2] if p == 2 else None
    return inv.check_theorem3(X, y, u_norm2=u2, p=p, delta=delta, max_epochs=20)


SETS = _fixed_sets(12)


def test_the_reference_passes_the_checks_used_below():
    for X, y in SETS:
        _theorem3(X, y)
        inv.check_lemma4(X, y, p=3)
        inv.check_pumma_is_romma_on_half_differences(X, y)
        inv.check_soft_equals_augmented(X, y, C=F(1))


@pytest.mark.parametrize("mutation", ["bias_from_pos", "case_ii_skipped"])
def test_theorem3_check_catches(mutation):
    assert _caught(mutation, _theorem3, SETS) > 0, wrong.MUTATIONS[mutation]


def test_lemma4_catches_newton_stopped_after_one_step():
    assert _caught("newton_one_step", lambda X, y: inv.check_lemma4(X, y, p=3), SETS) > 0


def _theorem3_p3(X, y):
    """Theorem 3 at p = 3, delta = 1/10, against the 2-norm optimum u (margin 1: a valid
    comparator for every p, with ||u||_q^2 taken at q = 3/2)."""
    u = inv.optimum_2norm(X, y)[0]
    return inv.check_theorem3(X, y, u_norm2=inv._fr(inv._norm2(u, F(3, 2))), p=3,
                              delta=F(1, 10), max_epochs=30)


def test_theorem3_p3_catches_newton_stopped_after_one_step():
    assert all(_theorem3_p3(X, y) is not None for X, y in SETS)  # the reference: verdicts
    violations = 0
    with wrong.planted("newton_one_step"):
        for X, y in SETS:
            try:
                _theorem3_p3(X, y)
            except inv.InvariantViolation:   # the margin check itself, not a crash
                violations += 1
    assert violations > 0


@pytest.mark.parametrize("mutation,check", [
    ("lambda_sign", lambda X, y: inv.check_lemma4(X, y)),
    ("rhs_one", lambda X, y: inv.check_pumma_is_romma_on_half_differences(X, y)),
    ("slack_ignored", lambda X, y: inv.check_soft_equals_augmented(X, y, C=F(1))),
    ("bias_from_pos", lambda X, y: inv.check_lemma4(X, y)),
    ("case_ii_skipped", lambda X, y: inv.check_lemma6(X, y, epochs=3)),
])
def test_other_checks_catch(mutation, check):
    assert _caught(mutation, check, SETS) > 0, wrong.MUTATIONS[mutation]


def test_every_mutation_is_callable_and_differs_from_the_reference():
    for name in wrong.MUTATIONS:
        algorithm = "romma" if name == "lambda_sign" else "pumma"
        params = {"p": 3} if name == "newton_one_step" else (
            {"C": 1} if name == "slack_ignored" else {})
        differs = 0
        for X, y in SETS[:6]:
            got = getattr(wrong, name or "correct")(algorithm, X, y, epochs=3,
                                                    kernel="linear", params=params)
            ref = (romma if algorithm == "romma" else pumma)(X, y, epochs=3, **params)
            differs += not (got.updates == ref.updates and got.final == ref.final)
        assert (differs > 0) == (name != ""), name


# -- Newton at high precision (SPEC.md 14.5) ----------------------------------------------------

def test_newton_reaches_its_tolerance_at_high_precision():
    """Six separable points, p = 4, delta = 1/10, 30 epochs: the run needs 832 bits, where a
    fixed singular-Hessian threshold of 2^-200 stalled Newton short of 2^-416."""
    X = np.array([[3.0, 3], [-3, -3], [3, -3], [3, 2], [3, -1], [-2, 0]])
    y = np.array([1, -1, 1, 1, 1, -1])
    trace = pumma(X, y, epochs=30, p=4, delta=Fraction(1, 10))
    assert trace.params["numbers"] == "mpmath:832" and trace.updates


def test_a_stalled_newton_is_retried_at_more_bits_then_named(monkeypatch):
    import mpmath

    from perceptron_oracle.reference import pumma_states
    from perceptron_oracle.reference.maximum_margin import NotConverged

    original, tried = pumma_states.newton_dual, []

    def stalls(ops, z, th, vv, p, soft, start, tol, max_steps=None):
        if isinstance(vv, float):          # the float64 warm start runs as usual
            return original(ops, z, th, vv, p, soft, start, tol, max_steps)
        tried.append(2 * int(-mpmath.log(tol, 2)))   # tol = 2^-(bits/2)
        raise NotConverged("stalled")

    monkeypatch.setattr(pumma_states, "newton_dual", stalls)
    X, y = SETS[2]
    with pytest.raises(NotConverged, match=r"stalled at \d+ bits") as caught:
        pumma(X, y, epochs=2, p=3)
    first = tried[0]
    assert tried == [first, 2 * first, 4 * first]
    assert f"at {4 * first} bits" in str(caught.value)


# -- the soft margin's a-posteriori fragile rule (SPEC.md 14.5) ------------------------------

def test_soft_margin_update_test_tie_stays_fragile():
    """An exact tie of the soft-margin update test, y (w.x + b) + xi_j = 1 - delta, is kept
    fragile by the shadow rule (its error band says nothing of another evaluation order), and
    float64 forms do take the other branch there.  Found by a search over small integers."""
    from perceptron_oracle.reference.pumma import history
    from perceptron_oracle.registry import run
    X = [[-2, 1], [-1, -2], [0, 1], [1, -2], [-2, 2]]
    y = [-1, 1, 1, 1, -1]
    trace, states = history(X, y, epochs=2, C=F(4))
    t, j = 6, 1                                  # trial 6 presents example 1 (y = +1)
    before = [s for s in states if s["t"] < t][-1]
    score = sum(w * F(x) for w, x in zip(before["w"], X[j])) + before["b"]
    assert t not in trace.updates and j not in (before["pos"], before["neg"])
    assert y[j] * score + before["xi"][j] == 1   # the tie, exactly (delta = 0)
    assert t in trace.fragile
    parted = [form for form in ("primal", "dual")
              if t in run("pumma", X, y, epochs=2, C=F(4), impl="fast", form=form).updates]
    assert parted                                # the flag is needed: a form updates there


def test_soft_margin_shadow_rule_is_sharper_and_the_forms_agree(monkeypatch):
    """The soft-margin rule on a noisy sequence: it keeps a subset of the a-priori
    candidates, strictly fewer, and the fast forms still agree with the reference up to the
    trials it keeps."""
    import perceptron_oracle.reference.maximum_margin as maximum_margin
    from perceptron_oracle.compare import compare
    from perceptron_oracle.registry import run
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (30, 4))
    y = np.where(X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.2 > 0, 1, -1)
    y[rng.random(30) < 0.15] *= -1
    params = dict(epochs=2, C=1, delta=F(1, 10))
    sharp = pumma(X, y, **params)
    with monkeypatch.context() as m:   # the a-priori rule alone: no shadow measurement
        m.setattr(maximum_margin, "shadow_test_errors", lambda *args, **kwargs: None)
        loose = pumma(X, y, **params)
    assert set(sharp.fragile) < set(loose.fragile)
    for form in ("primal", "dual"):
        actual = run("pumma", X, y, impl="fast", form=form, **params)
        assert compare(sharp, actual, X).ok


# -- a lost state (SPEC.md 14.5) -----------------------------------------------------------

def test_every_trial_after_a_lost_state_is_fragile(monkeypatch):
    """x_4 and x_5 differ by 3.8e-113, so the update on trial 5 (pair (5, 3)) is
    near-singular and taken: the state is lost and every later trial must be fragile.  The
    score bounds there read inf * 0 = NaN (an unbounded slack against a zero kernel
    magnitude), and a NaN bound compared as "not within": trial 9, an exact tie of the update
    test (y score = 1), went unflagged while the dual form updates there.  Found by the
    differential suite (thorough profile, duplicates)."""
    from perceptron_oracle.compare import compare
    from perceptron_oracle.fast.maximum_margin import DualSpace
    from perceptron_oracle.registry import run
    # The dual on the driver in the evaluation order that parts at trial 9 (a fresh kernel
    # block per block, no folded updates): the witness that the flag is needed.
    monkeypatch.setattr(DualSpace, "MAX_FOLDS", 0)
    monkeypatch.setattr(DualSpace, "COLLAPSE_LINEAR", False)
    a = 0.28125000028125
    X = np.array([[a, 0.5], [a, 0], [a, 0], [-1, 0], [a, 3.80521156562999e-113], [a, 0]]
                 + [[a, 0.5]] * 4)
    y = [1, 1, 1, -1, 1, 1, -1, 1, 1, -1]
    expected = pumma(X, y, record_scores=True)
    assert 5 in expected.updates and expected.scores[9] == -1
    assert set(range(5, 10)) <= set(expected.fragile)
    parted = []
    for form, engine in (("primal", None), ("dual", None), ("dual", "numpy")):
        actual = run("pumma", X, y, impl="fast", form=form, engine=engine)
        parted += [t for t in range(5, 10) if (t in actual.updates) != (t in expected.updates)]
        assert compare(expected, actual, X).ok, form
    assert 9 in parted                           # the flag is needed: a form parts there


def test_p_above_2_score_allows_for_the_state_scale():
    """p = 5/2: an update on z = (2.6e-23, 0) makes w_0 ~ 1e24; at trial 21 the exact score
    is -0.686 and a float64 Newton's state may score it anywhere near +-1e16: the score's
    allowance follows the final bounds' scale ||w~||_2 (SPEC.md 14.5), so the trial is
    fragile and the fast primal, which scores 91.9 there, passes the comparison."""
    X = np.array([
        [2.24358552293811e-66, 0.3333333336666667], [0.0, 0.45766761306947923],
        [-5.475272192431408e-67, -0.33333333341468036], [0.3, 0.3333333336666667],
        [2.24358552293811e-66, 0.3333333336666667], [-2.24358552293811e-66, -0.3333333336666667],
        [0.6424707268353305, -0.3333333335607832], [0.07604674515324095, 0.3333333336666667],
        [2.6225836722847088e-23, 0.3333333336666667], [2.24358552293811e-66, 0.3333333336666667],
        [0.0, 0.5], [0.0, -0.9272390601719507], [-2.24358552293811e-66, -0.3333333336666667],
        [0.6936588499015257, -0.3333333336000942], [2.24358552293811e-66, 0.3333333336666667],
        [0.0, 0.6879859703865128], [-0.24158771618587882, -0.3333333335350487]])
    y = np.array([-1, -1, 1, -1, -1, 1, 1, 1, 1, -1, -1, 1, -1, -1, -1, 1, 1])
    expected = run("pumma", X, y, epochs=3, p="5/2")
    assert 21 in expected.fragile
    actual = run("pumma", X, y, epochs=3, p="5/2", impl="fast", form="primal")
    assert compare(expected, actual, X).ok


def test_p_above_2_slack_allows_for_the_state_scale():
    """p = 3, C = 1: the exact slacks xi_0, xi_5, xi_6 are 3.2e-78 (the reference's own
    Newton residual where they are 0) and a float64 form's are 0; sqrt(C) xi_e is a
    coordinate of w~ = (w, sqrt(C) xi), so its final bound takes the state's scale as w_d's
    does (SPEC.md 14.5; found by the thorough profile: allowed 3.9e-86)."""
    X = np.array([[1.0], [0], [0], [0], [-1], [1], [1], [0], [0], [0], [0]])
    y = np.array([-1, -1, -1, -1, 1, -1, -1, -1, -1, -1, -1])
    expected = run("pumma", X, y, p=3, C=1)
    assert 0 < abs(float(expected.final["xi"][0])) < 1e-70
    for engine in ("numpy", "numba") if numba_available() else ("numpy",):
        actual = run("pumma", X, y, p=3, C=1, impl="fast", form="primal", engine=engine)
        assert compare(expected, actual, X).ok, engine


def test_fragile_rule_compares_margins_beyond_float64_exactly():
    """x_1 = (5e-324, 1) beside x_0 = (0, 1): a quantity of ROMMA's fragile test was an exact
    Fraction beyond float64's range, and ``float()`` of it raised OverflowError out of the
    reference (found by the ci profile of the differential suite).  The rule now compares
    exactly (``rounding.within``); both fast forms agree with the run."""
    X = np.array([[0.0, 1.0], [5e-324, 1.0], [0.125 ** 0.5, 0.125 ** 0.5]])
    y = [-1, 1, -1]
    expected = romma(X, y, record_scores=True)
    assert expected.updates == [0, 2]
    for form in ("primal", "dual"):
        assert compare(expected, run("romma", X, y, impl="fast", form=form), X).ok, form


# -- p > 2: the error ellipsoid carried through the updates (SPEC.md 14.5) --------------------

def _recording_score_bounds(monkeypatch, hoelder=True):
    """Patch the reference's error model to record, per trial after start-up, (score bound,
    exact margin); ``hoelder`` False: without the Hoelder share (the carried part alone)."""
    from perceptron_oracle.reference import pumma_errors
    if not hoelder:
        monkeypatch.setattr(pumma_errors, "hoelder_share", lambda p: 0.0)
    seen = []

    def fragile(self, st, j, margin, slack, threshold, _orig=pumma_errors.PummaErrors.fragile):
        seen.append((self.score_error(st, j, slack), margin))
        return _orig(self, st, j, margin, slack, threshold)
    monkeypatch.setattr(pumma_errors.PummaErrors, "fragile", fragile)
    return seen


#: the fast primal's engines for p > 2: the numpy Newton and the compiled one
P_ENGINES = ["numpy"] + (["numba"] if numba_available() else [])


def _scores_within_bounds(monkeypatch, X, y, engine, **params):
    """Every fast primal score of the run (on ``engine``) within the bound the rule computed
    for it without the Hoelder share (the carried ellipsoid alone); returns the reference
    trace."""
    bounds = _recording_score_bounds(monkeypatch, hoelder=False)
    exact = pumma(X, y, record_scores=True, **params)
    actual = run("pumma", X, y, impl="fast", form="primal", record_scores=True,
                 engine=engine, **params)
    assert actual.updates == exact.updates
    first = len(exact.scores) - len(bounds)          # start-up trials are not tested
    for t, (err, _) in enumerate(bounds, first):
        assert abs(actual.scores[t] - float(exact.scores[t])) <= err, (t, err)
    return exact


@pytest.mark.parametrize("engine", P_ENGINES)
def test_p_above_2_rule_is_sharp_and_holds_over_a_long_run(monkeypatch, engine):
    """p = 4, 200 separable grid points (``long_runs``' data), 20 epochs, ~300 updates: the
    reference flags at most 2% of the trials (the former kappa rule grew rho by
    2 sqrt(kappa) per case-(ii) update, past 1 after ~40 updates, and flagged 99% of them;
    this rule 18 of 4,000, all by the Hoelder share), and every fast primal score lies
    within the bound the rule computed for it, on every trial, even without the Hoelder
    share."""
    from perceptron_oracle.long_runs import grid_data
    X, y = grid_data(200, 3, 0.0, 0)
    params = dict(epochs=20, p=4, numbers="mpmath:256")
    expected = pumma(X, y, **params)
    assert len(expected.updates) > 250
    assert len(expected.fragile or ()) <= 4000 // 50
    assert _scores_within_bounds(monkeypatch, X, y, engine, **params).updates \
        == expected.updates


@pytest.mark.parametrize("engine", P_ENGINES)
def test_p_above_2_soft_margin_rule_holds_over_a_long_run(monkeypatch, engine):
    """The soft margin (C = 1, p = 4, noisy labels: the slacks are coordinates of the
    carried ellipsoid): every fast primal score within its bound without the Hoelder
    share, over 1,000 trials and hundreds of updates."""
    from perceptron_oracle.long_runs import grid_data
    X, y = grid_data(100, 3, 0.05, 0)
    exact = _scores_within_bounds(monkeypatch, X, y, engine, epochs=10, p=4, C=1,
                                  numbers="mpmath:256")
    assert len(exact.updates) > 200


def test_p_above_2_error_ellipsoid_beyond_float64_is_infinite_without_warnings():
    """A state beyond float64's range (met by the hypothesis suite on its "duplicates"
    sequences, p > 2) makes the update's Jacobian and the ellipsoid overflow: the carried error
    is then infinite (every later trial fragile), and numpy's overflow warnings do not leak
    out of the reference."""
    import warnings
    from types import SimpleNamespace

    from perceptron_oracle.reference.pumma_errors import ThetaError
    big = [1e200, -1e200]
    solved = ([1e200, 1e200], big, big, {}, 1e-200, 0.5, big)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        error = ThetaError(2, 4.0, None)
        error.restart(SimpleNamespace(link=lambda w, q: [1e300, 1e300], w=big, q=None,
                                      xis={}), 1e-15)
        assert error.radius == float("inf")
        error = ThetaError(2, 4.0, None)
        error.carry(SimpleNamespace(solved=solved, xis={}, w=big), 0, 1, 4.0, 1e-15)
        assert error.radius == float("inf")
