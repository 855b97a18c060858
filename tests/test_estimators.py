"""The scikit-learn estimators (perceptron_oracle/estimators.py) and one-vs-rest
(fast/multiclass.py): scikit-learn's own checks, training equal to ``run`` trial for trial,
every Perceptron hypothesis equal to ``reference.perceptron.predict`` on held-out data, and
the one-vs-rest learners equal to the binary runs on relabelled data.

Data are small integers and parameters dyadic, so float64 is exact and every comparison is
an equality (SPEC.md section 3, "Exact float64 runs").
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fixtures import assert_same_trace
from perceptron_oracle import run
from perceptron_oracle.errors import OracleInputError
from perceptron_oracle.fast.multiclass import PerceptronOvR, relabel
from perceptron_oracle.multiclass import one_vs_rest
from perceptron_oracle.reference import perceptron as ref_perceptron
from perceptron_oracle.trace import plain_value

sklearn = pytest.importorskip("sklearn", reason="scikit-learn (the peers extra) is not "
                              "installed: the estimators need it")
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from perceptron_oracle import estimators as est  # noqa: E402

MODES = ref_perceptron.PREDICTION_MODES
KERNEL_FORMS = [("primal", "linear"), ("dual", "linear"), ("dual", "poly:degree=2")]

# -- scikit-learn's checks ----------------------------------------------------------------------

_NOT_CENTRED = ("one-vs-rest of a hard-margin classifier on the check's three blobs: the "
                "middle blob against the rest is not linearly separable")
EXPECTED_FAILURES = {
    ("HigherOrderPerceptron", "linear"): {
        name: "HO_p on raw instances leaves float64's range (FloatRangeError); the paper "
              "defines it on normalised instances (preprocessing.normalize)"
        for name in ("check_fit_idempotent", "check_fit_check_is_fitted",
                     "check_n_features_in")},
    ("ROMMA", "linear"): {"check_classifiers_train": "ROMMA is homogeneous (no bias): "
                          + _NOT_CENTRED},
    ("PUMMA", "linear"): {"check_classifiers_train": "PUMMA with C=None: " + _NOT_CENTRED},
}


def _instances() -> list:
    out = []
    for name, cls in est.ESTIMATORS.items():
        out.append(cls(epochs=2))
        if name != "pnorm_perceptron":
            out.append(cls(epochs=2, kernel="rbf:gamma=1/2"))
    out.append(est.Perceptron(epochs=2, hypothesis="voted"))
    out.append(est.Perceptron(epochs=2, hypothesis="averaged", kernel="poly:degree=2"))
    return out


def _expected_failed(estimator) -> dict[str, str]:
    kernel = "linear" if estimator.kernel == "linear" else "kernel"
    return EXPECTED_FAILURES.get((type(estimator).__name__, kernel), {})


@parametrize_with_checks(_instances(), expected_failed_checks=_expected_failed)
def test_sklearn_checks(estimator, check):
    check(estimator)


def test_every_registered_family_has_an_estimator():
    from perceptron_oracle.registry import ALGORITHMS

    assert set(est.ESTIMATORS) == set(ALGORITHMS)
    for name, cls in est.ESTIMATORS.items():
        assert set(cls().get_params()) == set(ALGORITHMS[name].params.params) | {
            "kernel", "epochs", "form", "keep_trace"} | (
            {"hypothesis"} if name == "perceptron" else set())


# -- data ---------------------------------------------------------------------------------------

def _rows(draw, T: int, n: int) -> np.ndarray:
    values = draw(st.lists(st.integers(-3, 3), min_size=T * n, max_size=T * n))
    return np.array(values, dtype=np.float64).reshape(T, n)


@st.composite
def binary_runs(draw):
    T, n = draw(st.integers(2, 12)), draw(st.integers(1, 3))
    X, X_test = _rows(draw, T, n), _rows(draw, 6, n)
    y = np.array(draw(st.lists(st.sampled_from([-1, 1]), min_size=T, max_size=T)))
    y[:2] = draw(st.sampled_from([[1, -1], [-1, 1]]))  # both classes present
    params = dict(eta=draw(st.sampled_from([1, 0.5, 2])),
                  b0=draw(st.sampled_from([0, 1, -0.5])),
                  C=draw(st.sampled_from([0, 1, 0.25])),
                  tau=draw(st.sampled_from([0, 1, 2.5])),
                  lam=draw(st.sampled_from([0, 0.5])),
                  alpha_bound=draw(st.sampled_from([None, 1, 2])))
    form, kernel = draw(st.sampled_from(KERNEL_FORMS))
    return X, y, X_test, params, form, kernel, draw(st.integers(1, 3))


@st.composite
def multiclass_runs(draw):
    T, n = draw(st.integers(3, 14)), draw(st.integers(1, 3))
    K = draw(st.integers(3, 4))
    X = _rows(draw, T, n)
    labels = np.array(draw(st.lists(st.integers(0, K - 1), min_size=T, max_size=T)))
    labels[:3] = [0, 1, 2]
    params = dict(eta=draw(st.sampled_from([1, 0.5])), b0=draw(st.sampled_from([0, -1])),
                  C=draw(st.sampled_from([0, 1])), tau=draw(st.sampled_from([0, 1.5])),
                  lam=draw(st.sampled_from([0, 0.5])),
                  alpha_bound=draw(st.sampled_from([None, 1])))
    form, kernel = draw(st.sampled_from(KERNEL_FORMS))
    return X, labels, params, form, kernel, draw(st.integers(1, 3))


# -- the Perceptron: training and every hypothesis -------------------------------------------

@given(binary_runs())
def test_perceptron_trains_as_run_and_predicts_as_the_reference(case):
    X, y, X_test, params, form, kernel, epochs = case
    model = est.Perceptron(**params, kernel=kernel, form=form, epochs=epochs,
                           keep_trace=True).fit(X, np.where(y > 0, "pos", "neg"))
    assert list(model.classes_) == ["neg", "pos"]
    assert_same_trace(model.trace_, run("perceptron", X, y, impl="fast", form=form, kernel=kernel,
                                epochs=epochs, **params))
    reference = run("perceptron", X, y, kernel=kernel, epochs=epochs, **params)
    assert model.trace_.mistakes == reference.mistakes
    assert model.trace_.updates == reference.updates
    for mode in MODES:
        model.set_params(hypothesis=mode)
        want = ref_perceptron.predict(reference, X, y, X_test, mode=mode)
        assert np.sign(model.decision_function(X_test)).astype(int).tolist() == want, mode
        assert model.predict(X_test).tolist() == [
            "pos" if v > 0 else "neg" for v in want], mode


@given(binary_runs())
def test_partial_fit_continues_the_run(case):
    X, y, _, params, form, kernel, _ = case
    half = X.shape[0] // 2
    model = est.Perceptron(**params, kernel=kernel, form=form, keep_trace=True)
    model.partial_fit(X[:half + 1], y[:half + 1], classes=[-1, 1])
    model.partial_fit(X[half + 1:], y[half + 1:]) if half + 1 < X.shape[0] else None
    assert_same_trace(model.trace_, run("perceptron", X, y, impl="fast", form=form, kernel=kernel,
                                **params))


def test_partial_fit_after_fit_continues_with_new_examples():
    X = np.array([[1.0, 2], [-1, 1], [2, -1], [0, 1], [-2, -2]])
    y = np.array([1, -1, 1, 1, -1])
    model = est.Perceptron(epochs=2, tau=1, keep_trace=True).fit(X, y)
    model.partial_fit(X, y)
    want = run("perceptron", np.vstack([X, X, X]), np.concatenate([y, y, y]),
               impl="fast", tau=1)
    assert model.trace_.mistakes == want.mistakes and model.trace_.updates == want.updates
    assert model.coef_.tolist() == [plain_value(want.final["w"])]
    assert model.intercept_.tolist() == [want.final["b"]]


def test_voted_score_is_the_running_sum():
    """The voted score is sum_k c_k sign(s_k(x)): on a run with three updates, by hand."""
    X = np.array([[1.0, 0], [0, 1], [-1, 0], [1, 1]])
    y = np.array([1, 1, -1, 1])
    model = est.Perceptron(epochs=1, hypothesis="voted", keep_trace=True).fit(X, y)
    votes = model.trace_.final["votes"]
    x = np.array([[-1.0, 0.5]])
    # h_1 = x_0, h_2 = x_0 + x_1 (updates at trials 0 and 1), ...
    ws = np.cumsum([y[t % 4] * X[t % 4] for t in model.trace_.updates], axis=0)
    want = sum(c * np.sign(w @ x[0]) for c, w in zip(votes[1:], ws))
    assert model.decision_function(x).tolist() == [want]


# -- one-vs-rest ----------------------------------------------------------------------------------

@given(multiclass_runs())
def test_one_vs_rest_learners_are_the_binary_runs(case):
    X, labels, params, form, kernel, epochs = case
    model = est.Perceptron(**params, kernel=kernel, form=form, epochs=epochs,
                           keep_trace=True).fit(X, labels)
    classes, Y = relabel(labels)
    assert model.classes_.tolist() == classes.tolist()
    for k, trace in enumerate(model.traces_):
        assert_same_trace(trace, run("perceptron", X, Y[:, k], impl="fast", form=form,
                             kernel=kernel, epochs=epochs, **params))
    scores = model.decision_function(X)
    assert model.predict(X).tolist() == classes[np.argmax(scores, axis=1)].tolist()


def test_one_vs_rest_function_for_every_family():
    X = np.array([[1.0, 2], [-1, 1], [2, -1], [0, 1], [-2, -2], [1, -3], [3, 1]])
    labels = np.array(["a", "b", "c", "a", "b", "c", "a"])
    for algorithm in est.ESTIMATORS:
        classes, traces = one_vs_rest(algorithm, X, labels, epochs=2)
        assert classes.tolist() == ["a", "b", "c"]
        for k, trace in enumerate(traces):
            want = run(algorithm, X, np.where(labels == classes[k], 1, -1), impl="fast",
                       epochs=2)
            assert (trace.mistakes, trace.updates) == (want.mistakes, want.updates)


def test_shared_pass_learners_match_independent_engines():
    """K learners in one pass equal K one-learner engines (the shared product is only a
    shortcut), on float data away from ties."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 6))
    labels = rng.integers(0, 4, 400)
    classes, Y = relabel(labels)
    for form, kernel in (("primal", "linear"), ("dual", "rbf:gamma=1/4")):
        shared = PerceptronOvR(6, 4, form=form, kernel=kernel, tau=0.5)
        shared.train(X, Y, 2)
        for k, trace in enumerate(shared.traces()):
            alone = run("perceptron", X, Y[:, k], impl="fast", form=form, kernel=kernel,
                        epochs=2, tau=0.5)
            assert (trace.mistakes, trace.updates) == (alone.mistakes, alone.updates)
            assert np.allclose(trace.final["b"], alone.final["b"])


# -- the other families ----------------------------------------------------------------------

FAMILY_CASES = {
    "higher_order": dict(c=0.25), "pnorm_perceptron": dict(p=2),
    "second_order": dict(a=1), "romma": dict(delta=0), "pumma": dict(delta=0.25),
    "alma": dict(alpha=0.5),
}


@pytest.mark.parametrize("algorithm", sorted(FAMILY_CASES))
def test_family_fit_is_the_fast_run_and_forms_agree(algorithm):
    cls = est.ESTIMATORS.get(algorithm)
    if cls is None:
        pytest.skip(f"{algorithm} is not registered")
    X = np.array([[1.0, 2], [-1, 1], [2, -1], [0, 1], [-2, -2], [1, -3], [3, 1], [-1, -1]])
    y = np.array([1, -1, 1, 1, -1, -1, 1, -1])
    X_test = np.array([[0.5, 1], [-2, 1], [1, -1], [2, 2]])
    params = FAMILY_CASES[algorithm]
    forms = est.get(algorithm).forms_for("linear", params)
    decisions = {}
    for form in forms:
        model = cls(**params, form=form, epochs=3, keep_trace=True).fit(X, y)
        want = run(algorithm, X, y, impl="fast", form=form, epochs=3, **params)
        assert (model.trace_.mistakes, model.trace_.updates) == (want.mistakes,
                                                                 want.updates)
        decisions[form] = model.decision_function(X_test)
    if "dual" in forms:  # the kernel expansion's score against the dual form's w
        kmodel = cls(**params, form="dual", kernel="poly:degree=1,coef0=0",
                     epochs=3).fit(X, y)
        assert np.allclose(kmodel.decision_function(X_test), decisions["dual"])
        assert kmodel.dual_coef_.shape == (1, kmodel.support_.shape[0])
        assert np.array_equal(kmodel.support_vectors_, X[kmodel.support_])
    for form in forms[1:]:  # the forms run the same trials here, so predict alike
        assert np.sign(decisions[form]).tolist() == np.sign(decisions[forms[0]]).tolist()


def test_family_partial_fit_replays_the_run():
    X = np.array([[1.0, 2], [-1, 1], [2, -1], [0, 1], [-2, -2], [1, -3], [3, 1], [-1, -1]])
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    model = est.SecondOrderPerceptron(keep_trace=True)
    model.partial_fit(X[:5], labels[:5], classes=[0, 1, 2])
    model.partial_fit(X[5:], labels[5:])
    for k, trace in enumerate(model.traces_):
        want = run("second_order", X, np.where(labels == k, 1, -1), impl="fast")
        assert (trace.mistakes, trace.updates) == (want.mistakes, want.updates)


# -- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("make, message", [
    (lambda: est.Perceptron(eta=-1), "eta"),
    (lambda: est.Perceptron(hypothesis="best"), "hypothesis"),
    (lambda: est.PUMMA(form="implicit"), "form"),
    (lambda: est.Perceptron(epochs=0), "epochs"),
    (lambda: est.Perceptron(kernel="cosine"), "kernel"),
])
def test_bad_parameters_name_the_problem(make, message):
    X, y = np.array([[1.0], [-1.0]]), np.array([1, -1])
    with pytest.raises(OracleInputError, match=message) as info:
        make().fit(X, y)
    assert "\n" not in str(info.value)


def test_partial_fit_needs_classes_first():
    with pytest.raises(OracleInputError, match="classes"):
        est.Perceptron().partial_fit(np.array([[1.0], [-1.0]]), np.array([1, -1]))


def test_import_without_scikit_learn_names_what_to_install():
    code = ("import sys; sys.modules['sklearn'] = None\n"
            "try:\n    import perceptron_oracle.estimators\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ("perceptron_oracle.estimators needs scikit-learn: "
                   "pip install 'perceptron-oracle[peers]'")
