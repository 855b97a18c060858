"""One-vs-rest (fast/multiclass.py, fast/_compiled_multiclass.py) on the differential suite's
strategies, by both engines: each learner of the shared pass against the reference's binary
run on its relabelled data (``compare``: trial for trial, a divergence only on a fragile
trial, the final state within the reference's bounds) and, where float64 is exact, equal to
the fast binary run in every field of its trace; every prediction mode of the estimator
against ``reference.perceptron.predict`` on held-out points; and the compiled pass's own
paths (the K = 1 loops, the support store's growth, runs over several calls, CSR, NaN and
overflow).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from fixtures import assert_same_trace, gaussian_blobs
from perceptron_oracle import run
from perceptron_oracle.compare import compare
from perceptron_oracle.errors import DataError, OracleInputError
from perceptron_oracle.fast import _compiled
from perceptron_oracle.fast.driver import FloatRangeError
from perceptron_oracle.fast.multiclass import PerceptronOvR, relabel
from perceptron_oracle.kernels import parse_kernel
from perceptron_oracle.multiclass import one_vs_rest
from perceptron_oracle.numbers import to_fraction
from perceptron_oracle.properties.strategies import SEQUENCES, kernel_specs, perceptron_params
from perceptron_oracle.reference import perceptron as ref_perceptron
from perceptron_oracle.trace import plain_value

NUMBA = pytest.mark.skipif(not _compiled.available(),
                           reason="numba (the fast extra) is not installed: the compiled "
                                  "one-vs-rest loops need it")
ENGINES = ["numpy", pytest.param("numba", marks=NUMBA)]
ENGINE_NAMES = ("numpy", "numba") if _compiled.available() else ("numpy",)
#: As in tests/test_differential.py: kernel items on the first 8 examples, <= 2 epochs.
KERNEL_EXAMPLES = 8
ITEMS = [pytest.param(strategy, family, id=f"{family}:{strategy}")
         for family in ("linear", "poly", "rbf") for strategy in SEQUENCES]


def _exact_inputs(X: np.ndarray, params: dict, kernel: str) -> bool:
    """Integer data, dyadic parameters, a rational kernel with dyadic parameters: float64
    computes every score of these small runs exactly, whatever the summation order."""
    kern = parse_kernel(kernel)
    values = [to_fraction(v) for v in params.values() if v is not None]
    if kern.value_exponent(0) is None:   # values off every dyadic grid: the Gaussian
        return False                     # kernel, a polynomial one with gamma or coef0 not dyadic
    return bool(np.all(X == np.round(X))) and all(
        v.denominator & (v.denominator - 1) == 0 for v in values)


@st.composite
def multiclass_draws(draw, strategy: str, family: str):
    seq = draw(SEQUENCES[strategy](), label="sequence")
    kernel = draw(kernel_specs(family), label="kernel")
    # dyadic parameters in half the draws: with integer data, float64 is then exact
    params = draw(perceptron_params(dyadic_only=draw(st.booleans(), label="dyadic")),
                  label="params")
    linear = family == "linear"
    X = seq.X if linear else seq.X[:KERNEL_EXAMPLES]
    K = draw(st.integers(2, 4), label="classes")
    labels = np.array(draw(st.lists(st.integers(0, K - 1), min_size=X.shape[0],
                                    max_size=X.shape[0]), label="labels"))
    if labels.shape[0] > 1 and np.all(labels == labels[0]):
        labels[-1] = (labels[0] + 1) % K  # at least two classes
    epochs = draw(st.integers(1, 3 if linear else 2), label="epochs")
    form = draw(st.sampled_from(["primal", "dual"]), label="form") if linear else "dual"
    return X, labels, kernel, params, epochs, form


# -- training: each learner is the binary run ---------------------------------------------

@pytest.mark.parametrize("strategy, family", ITEMS)
@settings(max_examples=10)
@given(data=st.data())
def test_shared_pass_learners_are_the_binary_runs(strategy, family, data):
    X, labels, kernel, params, epochs, form = data.draw(multiclass_draws(strategy, family))
    assume(np.unique(labels).shape[0] >= 2)
    classes, Y = relabel(labels)
    exact = _exact_inputs(X, params, kernel)
    passes = {}
    for engine in ENGINE_NAMES:
        model = PerceptronOvR(X.shape[1], Y.shape[1], form=form, kernel=kernel,
                              engine=engine, **params)
        model.train(X, Y, epochs)
        passes[engine] = model.traces()
    for k in range(Y.shape[1]):
        reference = run("perceptron", X, Y[:, k], kernel=kernel, epochs=epochs,
                        record_scores=True, **params)
        for engine, traces in passes.items():
            result = compare(reference, traces[k], X)
            assert result.ok, f"{engine}, class {classes[k]}: {result.describe()}"
            if result.excused:
                event("a learner diverged at a fragile trial (accepted)")
            if exact:  # float64 is exact: the whole trace is the fast binary run's
                assert_same_trace(traces[k], run("perceptron", X, Y[:, k], impl="fast", form=form,
                                           kernel=kernel, epochs=epochs, engine=engine,
                                           **params))
    event(f"exact inputs: {exact}")


# -- prediction: every mode against the reference's hypotheses ----------------------------

def _robust(model_scores, mode, reference, X, y, X_test, params, kernel, exact):
    """Which held-out points a float64 score decides for sure: all of them on exact inputs;
    otherwise those whose every partial score s_k(x) = b0 + sum_{u <= k} eta y_u (k(x_u, x)
    + C) that the mode reads is larger than 1e-9 times the sum of the terms' magnitudes (far
    above any float64 rounding of these short sums)."""
    if exact:
        return np.ones(X_test.shape[0], dtype=bool)
    p = ref_perceptron.PARAMS.resolve(params)
    eta, b0, C = float(p["eta"]), float(p["b0"]), float(p["C"])
    order = [t % X.shape[0] for t in reference.updates]
    G = parse_kernel(kernel).matrix(X_test, X[order]) if order else np.zeros((len(X_test), 0))
    steps = eta * y[order] * (G + C)
    s = b0 + np.concatenate([np.zeros((len(X_test), 1)), np.cumsum(steps, axis=1)], axis=1)
    tol = 1e-9 * (abs(b0) + np.sum(abs(eta) * (np.abs(G) + abs(C)), axis=1))
    votes = np.asarray(reference.final["votes"], dtype=np.float64)
    if mode == "last":
        return np.abs(s[:, -1]) > tol
    if mode == "longest_survivor":
        return np.abs(s[:, reference.final["longest_survivor"]["index"]]) > tol
    if mode == "voted":
        return np.all(np.abs(s[:, 1:]) > tol[:, None], axis=1)
    return np.abs(s @ votes) > tol * votes.sum()


@pytest.mark.parametrize("strategy, family", ITEMS)
@settings(max_examples=6)
@given(data=st.data())
def test_every_prediction_mode_is_the_references(strategy, family, data):
    est = pytest.importorskip("perceptron_oracle.estimators",
                              reason="scikit-learn (the peers extra) is not installed")
    X, labels, kernel, params, epochs, form = data.draw(multiclass_draws(strategy, family))
    assume(np.unique(labels).shape[0] >= 2)
    integers = strategy in ("small_integers", "duplicates") and np.all(X == np.round(X))
    new = data.draw(st.lists(st.lists(st.integers(-2, 2) if integers else
                                      st.floats(-1, 1, allow_nan=False),
                                      min_size=X.shape[1], max_size=X.shape[1]),
                             min_size=1, max_size=4), label="held-out points")
    X_test = np.concatenate([np.array(new, dtype=np.float64), X[:2]])
    classes, Y = relabel(labels)
    exact = _exact_inputs(np.concatenate([X, X_test]), params, kernel)
    model = est.Perceptron(**params, kernel=kernel, form=form, epochs=epochs,
                           keep_trace=True).fit(X, labels)
    traces = model.traces_
    for k in range(len(traces)):
        y = Y[:, k] if Y.shape[1] > 2 else np.where(labels == classes[1], 1, -1)
        reference = run("perceptron", X, y, kernel=kernel, epochs=epochs, **params)
        if (traces[k].mistakes, traces[k].updates) != (reference.mistakes, reference.updates):
            event("a fragile divergence: the hypotheses differ, not compared")
            continue
        for mode in ref_perceptron.PREDICTION_MODES:
            model.set_params(hypothesis=mode)
            scores = model.decision_function(X_test)
            scores = scores if scores.ndim == 1 else scores[:, k]
            want = np.array(ref_perceptron.predict(reference, X, y, X_test, mode=mode))
            sure = _robust(scores, mode, reference, X, y, X_test, params, kernel, exact)
            assert np.sign(scores)[sure].tolist() == want[sure].tolist(), mode
            if len(traces) == 1:  # two classes: predict maps a positive score to classes_[1]
                assert model.predict(X_test)[sure].tolist() == [
                    classes[1] if v > 0 else classes[0] for v in want[sure]], mode
            event(f"points decided for sure: {int(sure.sum())} of {len(sure)}")


# -- the compiled pass's own paths ----------------------------------------------------------

@NUMBA
@pytest.mark.parametrize("form, kernel", [("primal", "linear"), ("dual", "linear"),
                                          ("dual", "rbf:gamma=1/4"),
                                          ("dual", "poly:degree=2,coef0=1,gamma=1/4")])
def test_two_classes_run_the_binary_compiled_loop(form, kernel):
    """K = 1 takes fast._compiled's binary arithmetic: on float data the run is the
    compiled binary run, its b (and the primal's w) to the last bit."""
    X, labels = gaussian_blobs(300, 5, 2, seed=3)
    y = np.where(labels == 1, 1, -1)
    params = dict(tau=0.5, C=0.25, lam=0.5, eta=0.3)
    model = PerceptronOvR(5, 1, form=form, kernel=kernel, engine="numba", **params)
    model.train(X, y[:, None], 3)
    got = model.traces()[0]
    want = run("perceptron", X, y, impl="fast", form=form, kernel=kernel, epochs=3,
               engine="numba", **params)
    assert (got.mistakes, got.updates) == (want.mistakes, want.updates)
    assert len(got.updates) > 30
    assert got.final["b"] == want.final["b"]
    assert plain_value(got.final["votes"]) == plain_value(want.final["votes"])
    if form == "primal":
        assert plain_value(got.final["w"]) == plain_value(want.final["w"])
    for mode in ("longest_survivor", "averaged"):  # sums of the same terms, another order
        assert plain_value(got.final[mode]["alpha"]) == plain_value(want.final[mode]["alpha"])
        assert np.isclose(got.final[mode]["b"], want.final[mode]["b"])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kernel", ["rbf:gamma=1/4", "poly:degree=2,coef0=1,gamma=1/4"])
def test_two_classes_over_several_calls_are_the_binary_run(engine, kernel):
    """One learner (two classes), dual, three calls of train: the compiled walk starts each
    later call on the supports of the earlier ones; the run is the binary run over all
    the rows, with its alpha and votes, and the averaged hypothesis scores new data as
    the reference's averaged hypothesis from the same updates."""
    X, labels = gaussian_blobs(500, 5, 2, seed=9)
    y = np.where(labels == 1, 1, -1)
    model = PerceptronOvR(5, 1, form="dual", kernel=kernel, engine=engine, tau=0.5, C=0.25)
    for lo, hi in ((0, 120), (120, 330), (330, 500)):
        model.train(X[lo:hi], y[lo:hi, None], 1)
    got = model.traces()[0]
    want = run("perceptron", X, y, impl="fast", form="dual", kernel=kernel, tau=0.5, C=0.25)
    assert (got.mistakes, got.updates) == (want.mistakes, want.updates)
    assert len(got.updates) > 60 and model.n_support > 40
    assert plain_value(got.final["alpha"]) == plain_value(want.final["alpha"])
    assert plain_value(got.final["votes"]) == plain_value(want.final["votes"])
    assert got.final["b"] == want.final["b"]
    X_test, _ = gaussian_blobs(30, 5, 2, seed=10)
    kern = parse_kernel(kernel)
    averaged = np.array(want.final["averaged"]["alpha"], dtype=float)
    expected = kern.matrix(X_test, X) @ (averaged * y) + want.final["averaged"]["b"]  # eta 1
    assert np.allclose(model.decision(X_test, "averaged")[:, 0], expected)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("form, kernel", [("primal", "linear"), ("dual", "rbf:gamma=1/4")])
def test_several_calls_are_one_run_and_the_store_grows(engine, form, kernel):
    """Three calls of train are the run over their rows in order (each row a new example);
    hundreds of supports grow the store from its 16 first places (the compiled dual loop
    returns and resumes).  Float data away from ties: both engines and the binary runs
    decide alike."""
    X, labels = gaussian_blobs(600, 6, 4, seed=7)
    classes, Y = relabel(labels)
    model = PerceptronOvR(6, 4, form=form, kernel=kernel, engine=engine, tau=0.5,
                          alpha_bound=2)
    for lo, hi in ((0, 150), (150, 400), (400, 600)):
        model.train(X[lo:hi], Y[lo:hi], 1)
    assert model.n_support > 100
    for k, trace in enumerate(model.traces()):
        want = run("perceptron", X, Y[:, k], impl="fast", form=form, kernel=kernel,
                   tau=0.5, alpha_bound=2)
        assert (trace.mistakes, trace.updates) == (want.mistakes, want.updates)
        assert plain_value(trace.final["votes"]) == plain_value(want.final["votes"])
        assert plain_value(trace.final["alpha"]) == plain_value(want.final["alpha"])
        assert np.isclose(trace.final["b"], want.final["b"])


@NUMBA
def test_engines_agree_on_csr_and_on_every_mode():
    X, labels = gaussian_blobs(400, 8, 3, seed=11)
    X[np.abs(X) < 1.0] = 0.0
    _, Y = relabel(labels)
    fitted = {}
    for name, data, engine in (("numpy", X, "numpy"), ("numba", X, "numba"),
                               ("numba-csr", sp.csr_matrix(X), "numba")):
        model = PerceptronOvR(8, 3, engine=engine, tau=1.0, C=0.5)
        model.train(data, Y, 2)
        fitted[name] = model
    X_test, _ = gaussian_blobs(50, 8, 3, seed=12)
    base = fitted["numpy"]
    for name, model in fitted.items():
        for got, want in zip(model.traces(), base.traces()):
            assert (got.mistakes, got.updates) == (want.mistakes, want.updates), name
        for mode in ref_perceptron.PREDICTION_MODES:
            assert np.allclose(model.decision(X_test, mode), base.decision(X_test, mode)), \
                (name, mode)


def _sparse_blobs(T, n, K, seed):
    """T rows of n features, 4 stored entries each: a class's own feature (2.0) and three
    random ones (noise), labels 0 .. K-1, some flipped (frequent updates)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, K, size=T)
    X = sp.lil_matrix((T, n))
    for t in range(T):
        X[t, labels[t]] = 2.0
        X[t, rng.choice(np.arange(K, n), size=3, replace=False)] = rng.normal(size=3)
    flip = rng.random(T) < 0.2
    labels[flip] = rng.integers(0, K, size=int(flip.sum()))
    return sp.csr_matrix(X), labels


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("K, L", [(2, 1), (3, 3)])
@pytest.mark.parametrize("form, kernel", [("primal", "linear"), ("dual", "poly:degree=2")])
def test_support_rows_of_csr_data_stay_sparse(engine, K, L, form, kernel):
    """The supports' rows are kept as the data came: from CSR data a CSR matrix holding
    their stored entries only (not S x n floats), across calls that mix CSR and dense
    rows (the compiled dual takes a dense store for its dense call); the traces and every
    mode's scores are those of the same run on dense rows.  K classes, L learners (one
    for two classes, the binary run)."""
    X, labels = _sparse_blobs(300, 2000, K, seed=K)
    Y = relabel(labels)[1][:, :L]
    parts = [slice(0, 100), slice(100, 200), slice(200, 300)]
    sparse, dense = (PerceptronOvR(2000, L, engine=engine, form=form, kernel=kernel)
                     for _ in range(2))
    for i, part in enumerate(parts):
        sparse.train(X[part] if i != 1 else X[part].toarray(), Y[part], 2)
        dense.train(X[part].toarray(), Y[part], 2)
    rows = sparse.support_rows()
    assert sp.issparse(rows) and rows.shape == (sparse.n_support, 2000)
    assert sparse.n_support > 50 and rows.nnz == 4 * sparse.n_support
    # the same rows, by the example each came from (the engines number a block's new
    # supports in different orders)
    by_origin = [np.argsort(m.origin[:m.n_support]) for m in (sparse, dense)]
    assert (rows.toarray()[by_origin[0]] == dense.support_rows()[by_origin[1]]).all()
    for got, want in zip(sparse.traces(), dense.traces()):
        assert (got.mistakes, got.updates) == (want.mistakes, want.updates)
        key = "w" if form == "primal" else "alpha"
        assert np.allclose(got.final["averaged"][key], want.final["averaged"][key])
    X_test, _ = _sparse_blobs(40, 2000, K, seed=10 + K)
    for mode in ref_perceptron.PREDICTION_MODES:
        assert np.allclose(sparse.decision(X_test, mode), dense.decision(X_test, mode)), mode


def test_predictions_take_new_rows_in_blocks_within_the_kernel_cap(monkeypatch):
    """A prediction's temporaries (kernel values against the supports, the voted run's
    scores) grow with the supports and updates: the rows of new data go in blocks that
    keep them within KERNEL_CACHE_BYTES (here 1 MiB; 1024 rows would take about 15), with
    the scores of one block of 1024 rows."""
    import tracemalloc

    from perceptron_oracle.fast import multiclass
    X, labels = gaussian_blobs(900, 4, 3, seed=5)
    model = PerceptronOvR(4, 3, engine="numpy", form="dual", kernel="rbf:gamma=1")
    model.train(X, relabel(labels)[1], 3)
    X_test, _ = gaussian_blobs(1024, 4, 3, seed=6)
    width = 2 * model.n_support + max(len(log.arrays()[1]) for log in model.logs)
    assert 1024 * width * 8 > 12 * 2**20
    whole = {mode: model.decision(X_test, mode) for mode in ("voted", "averaged")}
    monkeypatch.setattr(multiclass, "KERNEL_CACHE_BYTES", 2**20)
    for mode, want in whole.items():
        tracemalloc.start()
        try:
            got = model.decision(X_test, mode)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 * 2**20, (mode, peak)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-9), mode


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("layout", [np.asarray, sp.csr_matrix])
@pytest.mark.parametrize("K", [2, 3])
def test_nan_in_x_is_named(engine, layout, K):
    """A NaN in X is named, dense or CSR, one learner or three, by either engine (the
    compiled primal's own scoring pass is the check)."""
    X, labels = gaussian_blobs(50, 3, K, seed=1)
    X[20, 1] = np.nan
    Y = relabel(labels)[1][:, :1 if K == 2 else K]
    with pytest.raises(DataError, match="X contains NaN") as info:
        PerceptronOvR(3, Y.shape[1], engine=engine).train(layout(X), Y, 1)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("form, kernel", [("primal", "linear"),
                                          ("dual", "poly:degree=3,coef0=1,gamma=1")])
def test_overflow_names_the_first_trial_any_learner_overflows(engine, form, kernel):
    """The shared pass stops where the first of the K binary runs would: a learner whose own
    support leaves the kernel value infinite stops it, another learner's zero coefficient
    against that support does not (no 0 * inf)."""
    X = np.array([[1.0, 0.0], [0.0, 1e160], [1.0, 1.0], [2.0, 0.5], [0.0, 1e160],
                  [1.0, -1.0]])
    labels = np.array([0, 1, 2, 0, 1, 2])
    _, Y = relabel(labels)
    first = []
    for k in range(3):
        try:
            run("perceptron", X, Y[:, k], impl="fast", form=form, kernel=kernel, epochs=2,
                engine=engine)
        except FloatRangeError as e:
            first.append(int(str(e).split()[1]))
    assert first, "no binary run overflows: the case tests nothing"
    model = PerceptronOvR(2, 3, form=form, kernel=kernel, engine=engine)
    with pytest.raises(FloatRangeError, match=f"^trial {min(first)} ") as info:
        model.train(X, Y, 2)
    assert "\n" not in str(info.value)
    # the supports the stopped run counted keep their rows
    assert (model.support_rows() == X[model.origin[:model.n_support]]).all()


@pytest.mark.parametrize("engine", ["fast", "cuda"])
def test_bad_engine_is_one_line(engine):
    with pytest.raises(OracleInputError, match="engine") as info:
        PerceptronOvR(2, 3, engine=engine)
    assert "\n" not in str(info.value)


@NUMBA
def test_one_vs_rest_takes_the_engine():
    X, labels = gaussian_blobs(200, 4, 3, seed=2)
    got = {engine: one_vs_rest("perceptron", X, labels, form="dual", kernel="rbf:gamma=1/2",
                               engine=engine, tau=Fraction(1, 2))
           for engine in ("numpy", "numba")}
    for a, b in zip(got["numpy"][1], got["numba"][1]):
        assert (a.mistakes, a.updates) == (b.mistakes, b.updates)
