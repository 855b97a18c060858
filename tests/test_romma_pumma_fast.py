"""The fast ROMMA and PUMMA forms beyond the differential suite: delta's range, PUMMA's
parameters, the soft margin by example identity across epochs, the p > 2 Newton solver,
regressions found by the differential suite, shadow runs, and section 5.1's finding at a
size CI affords (SPEC.md, "romma / pumma", fast forms).  What every fast form promises (bad
data, epochs, a kernel or p a form does not take, CSR input, the forms agreeing on a long
run, a longer run against the reference): tests/test_fast_forms.py."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from fixtures import noisy_uniform
from perceptron_oracle.compare import compare
from perceptron_oracle.errors import ParamError
from perceptron_oracle.experiments import pumma as experiment
from perceptron_oracle.fast import pumma as fast_pumma
from perceptron_oracle.fast import romma as fast_romma
from perceptron_oracle.fast._compiled import available as numba_available
from perceptron_oracle.fast.driver import FloatRangeError
from perceptron_oracle.reference.common import shadow_errors
from perceptron_oracle.reference.pumma import NEWTON_TOLERANCE
from perceptron_oracle.registry import get

# the exact runs as the registry gives them: with their shadow runs (SPEC.md section 3)
reference_pumma = get("pumma").implementation("reference")
reference_romma = get("romma").implementation("reference")

FORMS = [(fast_romma, "primal"), (fast_romma, "dual"), (fast_pumma, "primal"),
         (fast_pumma, "dual")]


# -- bad parameters -----------------------------------------------------------------------

@pytest.mark.parametrize("module,form", FORMS)
def test_delta_outside_0_1_is_a_param_error(module, form):
    run = getattr(module, form)
    X, y = noisy_uniform(10, 3, 0, offset=0.3)
    with pytest.raises(ParamError, match="delta"):
        run(X, y, delta=1)
    with pytest.raises(ParamError, match="delta"):
        run(X, y, delta="-1/10")


def test_pumma_parameter_errors():
    X, y = noisy_uniform(10, 3, 1, offset=0.3)
    with pytest.raises(ParamError, match="p = 2"):
        fast_pumma.dual(X, y, p=3)
    with pytest.raises(ParamError, match="parameter p"):
        fast_pumma.primal(X, y, p="3/2")
    with pytest.raises(ParamError, match="parameter C"):
        fast_pumma.primal(X, y, C=0)
    assert fast_pumma.primal(X, y, C="none").final.get("xi") is None


# -- the soft margin: hard margin on the augmented examples, by example index ---------------

def _augmented(X: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    """x~_j = (x_j, y_j e_j / sqrt(C)): one extra coordinate per example INDEX."""
    return np.hstack([X, np.diag(y / math.sqrt(C))])


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_soft_margin_is_the_hard_margin_on_augmented_examples(form):
    X, y = noisy_uniform(40, 4, 2, offset=0.3)
    X[20:] = X[:20]                        # the same points again, at other indices
    y[20:] = -y[:20]                       # ... with the opposite labels: not separable
    C = 4.0
    run = getattr(fast_pumma, form)
    soft = run(X, y, C=C, delta="1/10", epochs=3)
    hard = run(_augmented(X, y, C), y, delta="1/10", epochs=3)
    assert soft.updates == hard.updates and len(soft.updates) > 40
    assert np.allclose(soft.final["w"], hard.final["w"][:4], rtol=1e-9, atol=1e-12)
    # the augmented weight's coordinate j is sqrt(C) xi_j
    xi = np.array(hard.final["w"][4:]) / math.sqrt(C)
    assert np.allclose(soft.final["xi"], xi, rtol=1e-9, atol=1e-12)
    # without the soft margin each such pair x_pos = x_neg is infeasible: no update there
    assert len(run(X, y, delta="1/10", epochs=3).updates) < len(soft.updates)


def test_soft_margin_slack_follows_the_example_not_the_trial():
    """Across epochs, trial t's slack is example t mod T's: a form that keyed it by trial
    would lose it in the second epoch and update again where the reference does not."""
    X, y = noisy_uniform(25, 3, 3, offset=0.3)
    for form in ("primal", "dual"):
        expected = reference_pumma(X, y, C="1", delta="1/10", epochs=3, record_scores=True)
        actual = getattr(fast_pumma, form)(X, y, C="1", delta="1/10", epochs=3)
        assert compare(expected, actual, X).ok
        assert any(t >= 25 for t in expected.updates)


# -- p > 2: the Newton solver ---------------------------------------------------------------

#: ``fast_pumma.setup``'s ``compiled`` for p > 2: the numpy Newton, and the compiled one
COMPILED = [False] + ([True] if numba_available() else [])
#: the primal form's engines for p > 2 (the compiled Newton on "numba")
ENGINES = ["numpy"] + (["numba"] if numba_available() else [])


def _pair_residuals(X, y, p, C=None, compiled=False):
    """|y_e (w.x_e + b) + xi_e - 1| for the pair after every update (Lemma 4: 0 exactly)."""
    model, _, Xv, yv, _ = fast_pumma.setup("primal", X, y, 1, "linear",
                                           dict(p=p, delta="1/10", C=C), compiled)
    residuals = []
    original = model.apply

    def apply(j, solution):
        original(j, solution)
        if model.started:  # space.dot is the augmented w~.x~_e = w.x_e + y_e xi_e
            residuals.extend(abs(yv[e] * (model.space.dot(e) + model.b) - 1)
                             for e in (model.pos, model.neg))
    model.apply = apply
    fast_pumma.run_blocks(model, yv, 2)
    return residuals


@pytest.mark.parametrize("compiled", COMPILED)
@pytest.mark.parametrize("C", [None, "1"])
def test_newton_meets_the_tolerance_the_fragile_rule_allows(C, compiled):
    data = experiment.r_of_k(200, 30, 8, 2, seed=6)
    residuals = _pair_residuals(data.X, data.y, 2 * math.log(30), C, compiled)
    assert len(residuals) > 20
    assert max(residuals) <= NEWTON_TOLERANCE


@pytest.mark.parametrize("compiled", COMPILED)
def test_newton_stopped_after_one_step_is_caught(monkeypatch, compiled):
    data = experiment.r_of_k(200, 30, 8, 2, seed=6)
    monkeypatch.setattr(fast_pumma, "NEWTON_MAX_STEPS", 1)
    monkeypatch.setattr(fast_pumma, "NEWTON_TOLERANCE", math.inf)   # and no finishing pass
    residuals = _pair_residuals(data.X, data.y, 2 * math.log(30), compiled=compiled)
    assert max(residuals) > NEWTON_TOLERANCE


@pytest.mark.parametrize("compiled", COMPILED)
def test_newton_stopped_after_one_step_is_finished(monkeypatch, compiled):
    """Newton cut to one step stops short of the KKT point: the finishing pass (the
    reference's damped Newton, ``PNormSpace._finish``) is reached, on both engines, and
    brings every pair within the tolerance."""
    data = experiment.r_of_k(200, 30, 8, 2, seed=6)
    monkeypatch.setattr(fast_pumma, "NEWTON_MAX_STEPS", 1)
    finished = []
    real = fast_pumma.PNormSpace._finish
    monkeypatch.setattr(fast_pumma.PNormSpace, "_finish",
                        lambda self, *args: finished.append(1) or real(self, *args))
    residuals = _pair_residuals(data.X, data.y, 2 * math.log(30), compiled=compiled)
    assert len(finished) > 10
    assert max(residuals) <= NEWTON_TOLERANCE


@pytest.mark.parametrize("engine", ENGINES)
def test_p_above_2_matches_the_reference_on_integer_data_with_exact_case_ties(engine):
    """Integer data gives exact ties in the case test; f maps a zero coordinate of w to a
    zero of theta but a tiny one to a large one (|w_i|^(q-1)), so the tie must go to case
    (i) as in exact arithmetic (fast.pumma.CASE_TIE)."""
    X = np.array([[0, -2, 0, 0], [0, -2, 2, -2], [-2, -1, 0, -2], [0, -1, 0, -2],
                  [0, 1, 0, -1], [0, 2, 1, -2], [-1, 1, 1, -2], [1, -2, -2, 1],
                  [-1, 1, 2, -1], [2, 0, 2, 1]], dtype=float)
    y = np.array([-1, -1, 1, 1, 1, -1, -1, 1, 1, 1])
    expected = reference_pumma(X, y, p="9.21034", delta="1/10", epochs=2, record_scores=True)
    actual = fast_pumma.primal(X, y, p="9.21034", delta="1/10", epochs=2, engine=engine)
    result = compare(expected, actual, X)
    assert result.ok, result.describe()


@pytest.mark.parametrize("p", [4, "5/2"])
@pytest.mark.parametrize("engine", ENGINES)
def test_p_above_2_newton_starts_where_the_hessian_is_singular(p, engine):
    """Pair (x_1, x_0) gives theta = (0, t); the next z = (-2, 0) has the other support, so
    at Newton's start (0, 1) the Hessian of the dual is singular (f^-1 is flat at 0)."""
    X = np.array([[-2, -1], [-2, -2], [2, 0], [0, 1], [2, 0], [0, -2], [0, -2], [1, 2],
                  [2, -2], [2, -2], [1, 2], [2, -2]], dtype=float)
    y = np.array([-1, 1, -1, -1, -1, -1, 1, -1, -1, -1, 1, 1])
    expected = reference_pumma(X, y, p=p, delta="1/10", epochs=2, record_scores=True)
    assert 5 in expected.updates
    actual = fast_pumma.primal(X, y, p=p, delta="1/10", epochs=2, engine=engine)
    result = compare(expected, actual, X)
    assert result.ok, result.describe()


def test_nearly_equal_pair_is_not_taken_for_x_pos_equal_x_neg():
    """z = x_pos - x_neg of size 1e-8 is a feasible pair: the primal forms z itself rather
    than k(p,p) + k(n,n) - 2 k(p,n), which cancels to below its rounding."""
    X = np.array([[0.5635710241696787, 0.13030790121999866],
                  [-0.3653463184636186, -0.1303079288399478],
                  [0.4299464719175512, 0.13030791991490323],
                  [0.4029844499119395, 0.47387383481238854],
                  [-0.22346774238960987, 0.8201841263186456],
                  [-0.959315602009897, -0.1303078458528789],
                  [-1.8230894526595902e-08, -0.1303079800670785],
                  [-0.9437231250874198, -0.16936715271645642],
                  [0.43630311369740205, -0.8353833434298799],
                  [2.7372416524728565e-74, -0.19331595655321343],
                  [-8.879522208169743e-09, -0.13030798000023952]])
    y = np.array([-1, 1, -1, -1, 1, 1, -1, 1, 1, 1, 1])
    expected = reference_pumma(X, y, delta="1/4", record_scores=True)
    assert 10 in expected.updates
    result = compare(expected, fast_pumma.primal(X, y, delta="1/4"), X)
    assert result.ok, result.describe()


# -- section 5.1 at a size CI affords -------------------------------------------------------

def test_r_of_k_data_is_balanced_and_labelled_by_the_threshold_function():
    data = experiment.r_of_k(400, 40, 16, 1, seed=7)
    assert abs(int(np.sum(data.y > 0)) - 200) < 60
    relevant = data.X[:, data.relevant]
    assert np.all((np.sum(relevant > 0, axis=1) >= 1) == (data.y > 0))
    assert data.bias == 15


def test_pumma_needs_fewer_updates_than_romma_with_augmentation_at_large_bias():
    """The paper's finding (section 5.1), and Theorem 3's margin on the way."""
    rows = experiment.experiment(n_examples=300, n=40, k=16, rs=(1,), ps=("2",), runs=1,
                                 seed=3)
    by = {row["algorithm"]: row for row in rows}
    assert by["pumma"]["converged"] and by["romma+aug"]["converged"]
    assert by["pumma"]["updates"] < 0.8 * by["romma+aug"]["updates"]
    # converged: every example has y (w.x + b) >= 1 - delta, so the margin is at least
    # (1 - delta) / ||w||_q >= (1 - delta) times the generator's margin (Lemma 5)
    assert by["pumma"]["margin"] >= 0.9 * by["pumma"]["target_margin"]


@pytest.mark.parametrize("engine", ENGINES)
def test_near_parallel_pair_is_feasible(engine):
    """z = (0, 0.116) against theta ~ (5e-10, -0.063): sin^2 of their angle ~ 6e-17 is below
    what ||z||^2 ||theta||^2 - (z.theta)^2 resolves in float64; the residual form of the
    determinant (fast.maximum_margin.step2) resolves it, and the update happens as in exact
    arithmetic."""
    X = np.array([[0.813845757258564, 0.0], [-0.5000000000386606, 1.1773123518303916e-45],
                  [-0.5000000005, 0.264102288658999], [0.5000000004, 0.20049954391052016],
                  [-0.5, -0.010743283396344117], [0.5000000005, -0.1397673606518104],
                  [-0.6881023163482678, -0.9632775429237537],
                  [-0.5000000001385676, 0.3275358208090944], [-1.0, -0.7921256282178732],
                  [0.5000000002260254, 0.214572952242561],
                  [-0.6796688095496117, 0.021021242029547027], [-0.5, 2.7051211369381043e-272],
                  [-0.5000000005, 0.06284109952448058],
                  [0.5000000004960572, -0.13376384276685171],
                  [-0.5000000005, 0.8274651057845159], [-0.5000000003092988, 1e-09],
                  [0.9495672279385667, 0.7473778084508775],
                  [-0.5000000005, 0.1791191753066761]])
    y = np.array([-1, 1, -1, -1, 1, 1, 1, -1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1])
    expected = reference_pumma(X, y, p=3, delta="1/4", record_scores=True)
    assert 17 in expected.updates
    result = compare(expected, fast_pumma.primal(X, y, p=3, delta="1/4", engine=engine), X)
    assert result.ok, result.describe()


@pytest.mark.parametrize("engine", ENGINES)
def test_p_above_2_newton_finishes_on_the_kkt_residual(monkeypatch, engine):
    """Found by the differential suite (ci profile): on this small-integer sequence with
    p = 5/2 the vectorised Newton stopped at the update on trial 20 with a KKT residual ~1
    (w feasible but not optimal); every later decision matched by luck and the final w was
    20% off.  The fast form now finishes with the reference's damped Newton whenever its
    residual exceeds NEWTON_TOLERANCE."""
    X = np.zeros((31, 2))
    for t, row in {7: (0, 1), 15: (1, 0), 17: (2, 2), 18: (1, 2), 20: (-1, 2),
                   24: (0, -1)}.items():
        X[t] = row
    y = -np.ones(31, dtype=np.int64)
    y[[7, 15, 18, 19]] = 1
    expected = reference_pumma(X, y, p="5/2", record_scores=True)
    finished = []
    real = fast_pumma.PNormSpace._finish
    monkeypatch.setattr(fast_pumma.PNormSpace, "_finish",
                        lambda self, *args: finished.append(1) or real(self, *args))
    result = compare(expected, fast_pumma.primal(X, y, p="5/2", engine=engine), X)
    assert result.ok, result.describe()
    assert finished   # the Newton (either engine's) stops short here: the finish is reached
    assert max(_pair_residuals(X, y, 2.5, compiled=engine == "numba")) <= NEWTON_TOLERANCE


@pytest.mark.parametrize("engine", ENGINES)
def test_p_above_2_soft_margin_optimum_with_w_zero(engine):
    """Found by the differential suite (ci profile): with C = 1 the update on trial 7 has its
    optimum at w = 0 (the slacks carry both constraints); the vectorised Newton called that
    point infeasible (phi = 0) and skipped an update the reference takes."""
    X = np.zeros((8, 3))
    X[6, 2], X[7, 2] = 1, -1
    y = np.array([-1] * 6 + [1, 1])
    expected = reference_pumma(X, y, p="5/2", C=1, record_scores=True)
    assert 7 in expected.updates
    result = compare(expected, fast_pumma.primal(X, y, p="5/2", C=1, engine=engine), X)
    assert result.ok, result.describe()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_nearly_infeasible_update_is_fragile(engine):
    """p = 5/2 on small integers (SPEC.md 14.5): after trial 12 the exact w is (0, -1), and
    trial 13's z = (0, 2) = -2 th makes problem (3) infeasible; the fast primal's th_0 ~ 1e-8
    makes it feasible.  The reference flags the trial, and the comparison accepts it."""
    X = np.array([[-1.0, 2], [0, -1], [0, 0], [2, -1], [0, 1]] + [[0, 0]] * 6
                 + [[-2, 0], [0, 0], [0, -2], [0, 0], [0, 0], [0, 0], [1, 0]])
    y = np.array([-1] * 11 + [1, 1] + [-1] * 4 + [1])
    expected = reference_pumma(X, y, epochs=3, p=Fraction(5, 2), record_scores=True)
    actual = fast_pumma.primal(X, y, epochs=3, p=Fraction(5, 2), engine=engine)
    assert 13 not in expected.updates and 13 in expected.fragile
    assert compare(expected, actual, X).ok


@pytest.mark.parametrize("engine", ENGINES)
def test_p_above_2_newton_after_an_update_on_a_tiny_z(engine):
    """Found by the differential suite (thorough profile, label noise, p = 5/2): the update
    on trial 8 has z = (2.6e-23, 0), so w = (7.6e22, 0); trial 10's problem (3) then has its
    optimum at lam ~ 8.8e22, eta ~ 2.3, w ~ (7.6e22, -7.6e22).  The vectorised Newton's first
    step overshoots beyond its line search's floor, and the finishing pass could not bring
    |2 - w.z| below 2^-40 where w.z = 2 cancels terms of 7.6e22 (float64 leaves ~1e6): it
    raised, and the form kept (lam, eta) = (0.57, 0.5), w.z = -3.8e22, calling trial 11 a
    mistake (exact score -3.8e22, not fragile).  The residual is now taken relative to the
    magnitude of its terms (``reference.pumma_newton.kkt_scale``)."""
    a = [7.987985094321049e-69, 0.5000000005]
    X = np.array([a] * 8 + [[2.6225836722847088e-23, 0.5000000005], a,
                            [-1.0, -0.5000000005], [0.0, 1.0]] + [a] * 5)
    y = np.array([-1] * 8 + [1, -1, 1, -1] + [-1] * 5)
    expected = reference_pumma(X, y, p="5/2", record_scores=True)
    actual = fast_pumma.primal(X, y, p="5/2", record_scores=True, engine=engine)
    assert 11 not in expected.fragile and 11 not in expected.mistakes
    assert 11 not in actual.mistakes
    assert actual.scores[11] == pytest.approx(float(expected.scores[11]), rel=1e-9)
    result = compare(expected, actual, X)
    assert result.ok, result.describe()


def _tiny_z_duplicates():
    """31 rows of the differential suite's ``duplicates`` strategy (thorough profile):
    x_0 and x_21 differ by 4.9e-118 in their second coordinate, so the update on trial 21
    has lam ~ 1.7e235 and an exact w ~ (4.1e117, 4.1e117)."""
    X = np.tile([0.5000000005, -9.69435245e-155], (31, 1))
    X[[12, 21], 1] = -4.8703433e-118
    X[[15, 29]] = [-0.5000000005, 1.0]
    y = np.ones(31, dtype=np.int64)
    y[[15, 21, 29]] = -1
    return X, y


def test_pumma_primal_adds_z_once():
    """The primal form added lam x_pos and -lam x_neg one after the other: with lam x ~ 8e234
    in the first coordinate, eta w_0 = 4.1e117 vanished (w_0 = 0 against the exact 4.1e117),
    and the run later stopped with a NaN score (FloatRangeError at trial 30) where the
    reference flags trials 16-30.  z = x_pos - x_neg is now formed and added once."""
    X, y = _tiny_z_duplicates()
    expected = reference_pumma(X[:22], y[:22])
    actual = fast_pumma.primal(X[:22], y[:22])
    assert actual.updates == expected.updates == [0, 15, 21]
    assert np.allclose(actual.final["w"], [float(v) for v in expected.final["w"]],
                       rtol=1e-12, atol=0)
    assert actual.final["b"] == pytest.approx(float(expected.final["b"]), rel=1e-12)
    expected = reference_pumma(X, y, record_scores=True)
    assert expected.fragile == list(range(16, 31))
    for form in ("primal", "dual"):
        result = compare(expected, getattr(fast_pumma, form)(X, y), X)
        assert result.ok, f"{form}: {result.describe()}"


# -- shadow runs with a soft margin (SPEC.md 14.5) -----------------------------------------

@pytest.mark.parametrize("form", ["primal", "dual"])
def test_forced_run_reports_the_update_tests_left_side(form):
    """``fast.pumma.forced_run`` along a form's own updates changes no decision: the same
    mistakes and updates as the plain run, the scores equal up to the last bits (a block of
    another length goes through another BLAS kernel); and the left side it reports is the one
    the form decides on: an update test is passed (no update) iff the value is >= 1 - delta,
    nan exactly at start-up and for the pair members."""
    X, y = noisy_uniform(80, 5, 3, offset=0.3)
    params = dict(p=2, delta=0.25, C=0.5, numbers="auto")
    plain = getattr(fast_pumma, form)(X, y, epochs=2, record_scores=True, **params)
    shadow, tested = fast_pumma.forced_run(form, X, y, 2, "linear", params, plain.updates)
    assert (shadow.mistakes, shadow.updates) == (plain.mistakes, plain.updates)
    assert np.allclose(shadow.scores, plain.scores, rtol=1e-12, atol=1e-12)
    assert len(tested) == len(plain.scores)
    made = [t for t, v in enumerate(tested) if not math.isnan(v)]
    assert 0 < len(made) < len(tested)
    for t in made:
        assert (tested[t] < 0.75) == (t in plain.updates)
    assert set(plain.updates) - set(made) <= set(plain.updates[:2])   # start-up's two


def test_a_shadow_run_whose_state_overflows_still_measures():
    """A shadow run (``forced_updates``) goes on past a state beyond float64's range: the
    last update, on x_11 = (1e-155, 0, 0), takes lam ~ 1/||x_11||^2 = inf, so the forms'
    final w is not finite.  The errors measured before stay (a rounding's size); the run's
    end must not stop on its final state, which lost the whole shadow (every a-priori flag
    of the run kept)."""
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, (12, 3))
    y = np.where(X @ np.array([1.0, -1.0, 0.5]) > 0, 1, -1)
    X[11] = [1e-155, 0.0, 0.0]
    expected = reference_romma(X, y, record_scores=True)
    assert expected.updates[-1] == 11
    with warnings.catch_warnings():          # a plain run stops there, one error, no warning
        warnings.simplefilter("error")
        for form in (fast_romma.primal, fast_romma.dual):
            with pytest.raises(FloatRangeError):
                form(X, y, engine="numpy")
    errors = shadow_errors(get("romma").shadow_runs, X, y, 1, "linear",
                           {"delta": 0, "numbers": "auto"}, expected)
    assert errors is not None and max(errors[:11]) < 1e-15
