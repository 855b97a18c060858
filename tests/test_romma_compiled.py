"""ROMMA's fast forms on both engines against the reference, the dual form's running products
and kernel cache, and CSR input taken without a copy.

``engine="numba"`` (the compiled per-trial loop of ``fast._compiled_romma``) and
``engine="numpy"`` (the block-ahead driver) of the primal form, on dense and CSR input, and
of the dual form (the linear kernel: the primal's loop, or windows of kernel blocks), each
run on the same drawn sequence and parameters as the exact reference and
must pass ``compare`` as in tests/test_differential.py (the same mistakes and updates trial
for trial, a divergence only at a fragile trial; the final state within the reference's
bounds).  Without numba the compiled items are skipped (reason stated); the ParamError for
``engine="numba"`` without numba is tested either way.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fast_protocol import (
    ENGINES,
    KERNEL_EXAMPLES,
    SHARE,
    assert_bad_value_named,
    assert_engines_stop_alike,
    needs_numba,
)
from fast_protocol import check_run as _check_run
from perceptron_oracle.data import validate
from perceptron_oracle.errors import DataError, ParamError
from perceptron_oracle.fast import _compiled, _compiled_romma
from perceptron_oracle.fast import romma as fr
from perceptron_oracle.fast.driver import forced_updates, run_blocks
from perceptron_oracle.properties.strategies import KERNELS, PARAMS, SEQUENCES
from perceptron_oracle.reference.romma import romma as reference


@needs_numba
@pytest.mark.parametrize("strategy", list(SEQUENCES))
@settings(max_examples=max(10, settings.default.max_examples // SHARE))
@given(data=st.data())
def test_primal_engines_and_dual_match_reference(strategy, data):
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    params = data.draw(PARAMS["romma"](), label="params")
    epochs = data.draw(st.integers(1, 3), label="epochs")
    expected = reference(seq.X, seq.y, epochs=epochs, record_scores=True, **params)
    for engine in ENGINES:
        for X, kind in ((seq.X, "dense"), (sp.csr_matrix(seq.X), "csr")):
            _check_run(expected, partial(fr.primal, X, seq.y, epochs=epochs, engine=engine,
                                         **params), seq.X, f"primal {kind} {engine}")
        _check_run(expected, partial(fr.dual, seq.X, seq.y, epochs=epochs, engine=engine,
                                     **params), seq.X, f"dual {engine}")


@needs_numba
def test_the_linear_dual_runs_the_primal_loop():
    """With the linear kernel the dual form's compiled run is the primal's loop (the same
    trace but its form); with another kernel ``engine`` leaves the windows in charge."""
    X, y = _noisy(400, 6, seed=3)
    primal = fr.primal(X, y, delta="1/10", engine="numba", record_scores=True)
    dual = fr.dual(X, y, delta="1/10", engine="numba", record_scores=True)
    assert dual.form == "dual" and primal.form == "primal"
    assert (dual.mistakes, dual.updates, dual.scores, dual.final) == \
        (primal.mistakes, primal.updates, primal.scores, primal.final)
    windows = fr.dual(X, y, delta="1/10", engine="numpy", record_scores=True)
    assert windows.updates == dual.updates and windows.scores != dual.scores
    rbf = {e: fr.dual(X[:60], y[:60], kernel="rbf:gamma=1", engine=e) for e in ENGINES}
    assert rbf["numba"].final == rbf["numpy"].final


@pytest.mark.parametrize("family", ["poly", "rbf"])
@settings(max_examples=max(5, settings.default.max_examples // (4 * SHARE)))
@given(data=st.data())
def test_kernel_dual_matches_reference(family, data):
    strategy = data.draw(st.sampled_from(sorted(SEQUENCES)), label="strategy")
    seq = data.draw(SEQUENCES[strategy](), label="sequence")
    kernel = data.draw(KERNELS[family], label="kernel")
    params = data.draw(PARAMS["romma"](), label="params")
    epochs = data.draw(st.integers(1, 2), label="epochs")
    X, y = seq.X[:KERNEL_EXAMPLES], seq.y[:KERNEL_EXAMPLES]
    expected = reference(X, y, epochs=epochs, kernel=kernel, record_scores=True, **params)
    _check_run(expected, partial(fr.dual, X, y, epochs=epochs, kernel=kernel, **params), X,
               f"dual {kernel}")


def _noisy(T: int, n: int, seed: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (T, n)) * scale
    y = np.where(X @ rng.standard_normal(n) + 0.2 > 0, 1, -1)
    return X, np.where(rng.random(T) < 0.1, -y, y).astype(np.int64)


@needs_numba
def test_engines_agree_on_a_longer_run():
    """Some thousands of trials, dense and CSR, delta > 0: identical decisions, scores and
    final w to rounding; the dual's too, on a prefix."""
    X, y = _noisy(1500, 12, seed=1)
    Xs = sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X))
    for data in (X, Xs):
        a = fr.primal(data, y, epochs=2, delta="1/10", engine="numpy", record_scores=True)
        b = fr.primal(data, y, epochs=2, delta="1/10", engine="numba", record_scores=True)
        assert a.mistakes == b.mistakes and a.updates == b.updates
        assert len(a.updates) > 300
        assert np.allclose(a.scores, b.scores, rtol=1e-9, atol=1e-9)
        assert np.allclose(a.final["w"], b.final["w"], rtol=1e-8, atol=1e-8)
    # the dual on a prefix: further on, on these non-separable data, ||w|| grows to 1e9 and
    # the dual's cancelling coefficients part from the primal (a fragile stretch)
    d = fr.dual(X[:500], y[:500], delta="1/10", engine="numpy")
    a = fr.primal(X[:500], y[:500], delta="1/10", engine="numba")
    assert d.updates == a.updates and d.mistakes == a.mistakes and len(a.updates) > 100
    assert np.allclose(d.final["w"], a.final["w"], rtol=1e-8, atol=1e-8)


@needs_numba
@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_overflow_names_the_same_trial_in_both_engines(kind):
    X, y = _noisy(40, 3, seed=2, scale=1e-160)
    X[5] = 0.0
    X[5, 0] = 1e-300  # w ~ 1e300 after this update, scores overflow at the next ones
    data = sp.csr_matrix(X) if kind == "csr" else X
    assert_engines_stop_alike(lambda engine: fr.primal(data, y, epochs=2, engine=engine))


@needs_numba
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_infinity_in_x_is_validates_data_error(bad):
    X, y = _noisy(50, 4, seed=3)
    X[30, 2] = bad
    assert_bad_value_named(lambda data, engine: fr.primal(data, y, engine=engine), X, bad)


@needs_numba
def test_forced_updates_take_the_numpy_path(monkeypatch):
    """Shadow runs: the forced update trials are imposed whatever the engine asked."""
    X, y = _noisy(60, 4, seed=4)
    free = fr.primal(X, y, epochs=2, engine="numpy")
    forced = sorted(set(free.updates[::2]))
    monkeypatch.setattr(_compiled_romma, "loops", lambda: pytest.fail("compiled under forcing"))
    with forced_updates(forced):
        trace = fr.primal(X, y, epochs=2, engine="numba", record_scores=True)
    assert trace.updates == forced and len(trace.scores) == 120


def test_engine_numba_without_numba_is_one_param_error(monkeypatch):
    monkeypatch.setattr(_compiled, "available", lambda: False)
    X, y = _noisy(20, 3, seed=5)
    with pytest.raises(ParamError, match="needs numba") as info:
        fr.primal(X, y, engine="numba")
    assert "\n" not in str(info.value)
    assert fr.primal(X, y, engine="auto").updates == fr.primal(X, y, engine="numpy").updates
    with pytest.raises(ParamError, match="engine must be one of"):
        fr.primal(X, y, engine="fortran")


# -- the dual form: running products and the kernel cache -------------------------------------

def _dual_model(X, y, kernel, epochs=1):
    model, _, Xv, yv, epochs = fr.setup("dual", X, y, epochs, kernel, {})
    run_blocks(model, yv, epochs)
    return model.space


@pytest.mark.parametrize("kernel", ["linear", "rbf:gamma=1/2", "poly:degree=2,coef0=1"])
def test_dual_running_products_equal_a_fresh_gram_product(kernel, monkeypatch):
    """The dots w.x_e carried through the updates for the last update's examples, and
    ||v||^2, equal G a recomputed from the kernel, also with the refresh that bounds their
    rounding switched off (to 1e-10 of the magnitude of their terms: on these data the
    coefficients grow to 1e6 and cancel)."""
    X, y = _noisy(400, 5, seed=6)
    for refresh in (fr.DualSpace.REFRESH, 10**9):
        monkeypatch.setattr(fr.DualSpace, "REFRESH", refresh)
        space = _dual_model(X, y, kernel)
        S = len(space.support)
        assert S > 50
        a = space.coef[:S]
        G = space.kernel.matrix(X[space.support], X[space.support])
        Ga = G @ a
        size = np.abs(G) @ np.abs(a)  # the terms' magnitude: both sides' rounding scale
        carried = dict(space.vx)
        assert carried
        for e, value in carried.items():
            s = int(space.slot[e])
            assert abs(value - Ga[s]) <= 1e-10 * size[s]
        assert abs(space.norm2() - a @ Ga) <= 1e-10 * (np.abs(a) @ size)


def test_dual_kernel_cache_stays_within_its_cap(monkeypatch):
    """A cap of 40 kernel rows: the chunks never hold more, rows beyond it are computed per
    block, and the run is the uncapped run."""
    X, y = _noisy(300, 4, seed=7)
    full = fr.dual(X, y, kernel="rbf:gamma=1", epochs=2)
    monkeypatch.setattr(fr, "KERNEL_CACHE_BYTES", 40 * 8 * 300)
    space = _dual_model(X, y, "rbf:gamma=1", epochs=2)
    assert len(space.support) > 40
    assert sum(c.nbytes for c in space.chunks) <= 40 * 8 * 300
    capped = fr.dual(X, y, kernel="rbf:gamma=1", epochs=2)
    assert capped.updates == full.updates and capped.mistakes == full.mistakes
    assert np.allclose(capped.final["alpha"], full.final["alpha"], rtol=1e-9, atol=1e-12)


def test_dual_on_csr_input_is_the_dense_run():
    X, y = _noisy(200, 6, seed=8)
    X[np.abs(X) < 0.4] = 0.0
    for kernel in ("linear", "rbf:gamma=1"):
        dense = fr.dual(X, y, kernel=kernel)
        sparse = fr.dual(sp.csr_matrix(X), y, kernel=kernel)
        assert dense.updates == sparse.updates and dense.mistakes == sparse.mistakes


# -- CSR input: validate() without a copy -----------------------------------------------------

def test_canonical_csr_is_taken_without_a_copy():
    X, y = _noisy(30, 5, seed=9)
    X[np.abs(X) < 0.5] = 0.0
    A = sp.csr_matrix(X)
    out, _ = validate(A, y)
    assert out is A


@pytest.mark.parametrize("change", ["unsorted", "duplicates", "float32", "int64 indices",
                                    "csc"])
def test_other_sparse_input_is_copied_to_canonical_csr_and_left_alone(change):
    X, y = _noisy(30, 5, seed=10)
    X[np.abs(X) < 0.5] = 0.0
    A = sp.csr_matrix(X)
    if change in ("unsorted", "duplicates"):
        indices, data, indptr = [], [], [0]
        for r in range(A.shape[0]):  # each row's entries reversed, or each split in halves
            lo, hi = A.indptr[r], A.indptr[r + 1]
            if change == "unsorted":
                indices += A.indices[lo:hi][::-1].tolist()
                data += A.data[lo:hi][::-1].tolist()
            else:
                indices += A.indices[lo:hi].tolist() * 2
                data += (A.data[lo:hi] / 2).tolist() * 2
            indptr.append(len(indices))
        A = sp.csr_matrix((np.array(data), np.array(indices, dtype=np.int32),
                           np.array(indptr, dtype=np.int32)), shape=X.shape)
        assert not A.has_canonical_format
        expected = X
    elif change == "float32":
        A = sp.csr_matrix(X.astype(np.float32))
        expected = X.astype(np.float32).astype(np.float64)
    elif change == "int64 indices":
        A = sp.csr_matrix(X)
        A.indices = A.indices.astype(np.int64)
        A.indptr = A.indptr.astype(np.int64)
        expected = X
    else:
        A = sp.csc_matrix(X)
        expected = X
    before = (A.data.copy(), A.indices.copy(), A.indptr.copy())
    out, _ = validate(A, y)
    assert out is not A and isinstance(out, sp.csr_matrix)
    assert out.dtype == np.float64 and out.has_canonical_format
    assert np.array_equal(out.toarray(), expected)
    for kept, now in zip(before, (A.data, A.indices, A.indptr)):
        assert np.array_equal(kept, now)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_canonical_csr_is_still_checked_for_nan_and_infinity(bad):
    X, y = _noisy(20, 4, seed=11)
    X[7, 1] = bad
    with pytest.raises(DataError, match="X contains") as info:
        validate(sp.csr_matrix(X), y)
    assert "\n" not in str(info.value)
