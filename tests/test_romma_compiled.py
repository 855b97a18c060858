"""ROMMA's compiled loops and dual form: what only they do, and CSR input taken without a
copy.

The linear dual's compiled run is the primal's loop; the kernel dual's compiled blocks
(updates inside a block, case (i) dropping a support inside one, an overflow, CSR X and
shadow runs taking the numpy engine's windows); the dual form's running products and kernel
cache; ``data.validate`` taking canonical CSR input without a copy and copying any other.
Without numba the compiled items are skipped (reason stated).  Both engines against the
reference under every kernel, overflow, NaN and infinity in X, shadow runs and
``engine="numba"`` without numba: tests/test_engines.py; both engines on longer runs:
tests/test_long_engine_runs.py; CSR input against dense for every form:
tests/test_fast_forms.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fast_protocol import (
    assert_engines_stop_alike,
    needs_numba,
)
from fast_protocol import check_run as _check_run
from fixtures import noisy_uniform
from perceptron_oracle.data import validate
from perceptron_oracle.errors import DataError
from perceptron_oracle.fast import maximum_margin
from perceptron_oracle.fast import romma as fr
from perceptron_oracle.fast.driver import forced_updates, run_blocks
from perceptron_oracle.registry import get
from perceptron_oracle.trace import plain_value

# the exact runs as the registry gives them: with their shadow runs (SPEC.md section 3)
reference = get("romma").implementation("reference")


@needs_numba
def test_the_linear_dual_runs_the_primal_loop():
    """With the linear kernel the dual form's compiled run is the primal's loop (the same
    trace but its form)."""
    X, y = noisy_uniform(400, 6, seed=3)
    primal = fr.primal(X, y, delta="1/10", engine="numba", record_scores=True)
    dual = fr.dual(X, y, delta="1/10", engine="numba", record_scores=True)
    assert dual.form == "dual" and primal.form == "primal"
    assert (dual.mistakes, dual.updates, dual.scores, plain_value(dual.final)) == \
        (primal.mistakes, primal.updates, primal.scores, plain_value(primal.final))
    windows = fr.dual(X, y, delta="1/10", engine="numpy", record_scores=True)
    assert windows.updates == dual.updates and windows.scores != dual.scores


# -- the kernel dual's compiled blocks (fr._dual_compiled) ------------------------------------

def _fixed_blocks(monkeypatch, length):
    """The compiled dual's blocks fixed at ``length`` examples (the adaptive length puts few
    updates inside the blocks of a short run); records each block's (lo, hi)."""
    blocks = []
    kernel_block = fr._DualStore.kernel_block

    def spy(self, A, sq_a, lo, hi, sq, B):
        if B is self.X:
            blocks.append((lo, hi))
        return kernel_block(self, A, sq_a, lo, hi, sq, B)

    monkeypatch.setattr(fr, "_dual_block_length", lambda *args: length)
    monkeypatch.setattr(fr._DualStore, "kernel_block", spy)
    return blocks


def _numpy_cases(monkeypatch):
    """eta of each update of the numpy engine's runs (0: case (i)), from ``step2``."""
    etas = []
    step2 = fr.step2

    def spy(*args, **kw):
        out = step2(*args, **kw)
        if out is not None:
            etas.append(out[1])
        return out

    monkeypatch.setattr(fr, "step2", spy)
    return etas


def _check_blocks(expected, actual, X, label):
    _check_run(expected, lambda: actual, X, label)
    assert actual.mistakes == expected.mistakes and actual.updates == expected.updates
    assert np.allclose(actual.scores, [float(s) for s in expected.scores], rtol=1e-12,
                       atol=1e-12)
    assert np.allclose(actual.final["alpha"], [float(a) for a in expected.final["alpha"]],
                       rtol=1e-12, atol=1e-12)


@needs_numba
@pytest.mark.parametrize("kernel", ["rbf:gamma=1/2", "poly:degree=2,coef0=1"])
def test_compiled_dual_updates_inside_a_block_change_its_later_scores(monkeypatch, kernel):
    """Blocks of 7 holding several updates each, over three epochs (a support's second
    update inside a block reads its row of the block's kernel values; a new support's
    values are computed in the walk): the reference's decisions, scores and alpha."""
    rng = np.random.default_rng(12)
    T = 42
    X = rng.integers(-3, 4, size=(T, 3)).astype(float)
    y = np.where(rng.random(T) < 0.5, 1, -1)
    blocks = _fixed_blocks(monkeypatch, 7)
    expected = reference(X, y, epochs=3, kernel=kernel, record_scores=True)
    actual = fr.dual(X, y, epochs=3, kernel=kernel, engine="numba", record_scores=True)
    _check_blocks(expected, actual, X, f"dual {kernel}, blocks of 7")
    assert blocks[:6] == [(lo, lo + 7) for lo in range(0, T, 7)]
    for lo, hi in blocks:
        inside = [u for u in actual.updates if lo <= u % T < hi - 1]
        assert len(inside) >= 2, (lo, hi, actual.updates)
    first = {u % T: u for u in reversed(actual.updates)}
    assert any(u != first[u % T] and u % T % 7 != 6 for u in actual.updates)


@needs_numba
def test_compiled_dual_case_one_drops_the_support_inside_a_block(monkeypatch):
    """Case (i) (eta = 0) at updates after the first, inside a block of 7 (rows of small
    integers scaled by powers of 2, the homogeneous quadratic kernel: a short row aligned
    with w gives case (i)): the old support leaves, the block's later scores are
    lambda y_j k(x_j, x) alone, as the reference's."""
    rng = np.random.default_rng(6)
    T, kernel = 40, "poly:degree=2,coef0=0"
    X = rng.integers(-3, 4, size=(T, 3)) * 2.0 ** -rng.integers(0, 3, size=(T, 1))
    y = np.where(rng.random(T) < 0.5, 1, -1)
    etas = _numpy_cases(monkeypatch)
    windows = fr.dual(X, y, epochs=2, kernel=kernel, engine="numpy")
    case_one = [u for u, eta in zip(windows.updates, etas) if eta == 0.0]
    blocks = _fixed_blocks(monkeypatch, 7)
    expected = reference(X, y, epochs=2, kernel=kernel, record_scores=True)
    actual = fr.dual(X, y, epochs=2, kernel=kernel, engine="numba", record_scores=True)
    _check_blocks(expected, actual, X, "dual poly, case (i) in a block")
    assert actual.updates == windows.updates
    within = [u for u in case_one[1:] if any(lo <= u % T < hi - 1 for lo, hi in blocks)]
    assert within
    dropped = ({u % T for u in actual.updates if u < within[0]}
               - {u % T for u in actual.updates if u >= within[0]})
    assert dropped and all(actual.final["alpha"][e] == 0.0 for e in dropped)


@needs_numba
def test_kernel_dual_overflow_names_the_same_trial_in_both_engines():
    X, y = noisy_uniform(30, 3, seed=14)
    X[10] *= 1e200  # k(x_s, x_10) ~ 1e400 under the quadratic kernel: the score overflows
    assert_engines_stop_alike(lambda engine: fr.dual(X, y, epochs=2, engine=engine,
                                                     kernel="poly:degree=2"))
    assert fr.dual(X[:10], y[:10], kernel="poly:degree=2").updates


@needs_numba
def test_kernel_dual_csr_and_forced_runs_take_the_windows(monkeypatch):
    """CSR X with a non-linear kernel, and shadow runs, take the numpy engine's windows
    whatever ``engine`` asked (documented fallbacks)."""
    X, y = noisy_uniform(80, 5, seed=16)
    X[np.abs(X) < 0.4] = 0.0
    windows = fr.dual(X, y, kernel="rbf:gamma=1", engine="numpy", record_scores=True)
    monkeypatch.setattr(fr, "_dual_walk", lambda *a: pytest.fail("compiled dual ran"))
    sparse = fr.dual(sp.csr_matrix(X), y, kernel="rbf:gamma=1", engine="numba",
                     record_scores=True)
    assert sparse.updates == windows.updates and sparse.mistakes == windows.mistakes
    with forced_updates(windows.updates[::2]):
        forced = fr.dual(X, y, kernel="rbf:gamma=1", engine="numba", record_scores=True)
    assert forced.updates == windows.updates[::2] and len(forced.scores) == 80


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
    X, y = noisy_uniform(400, 5, seed=6)
    for refresh in (maximum_margin.DualSpace.REFRESH, 10**9):
        monkeypatch.setattr(maximum_margin.DualSpace, "REFRESH", refresh)
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
    X, y = noisy_uniform(300, 4, seed=7)
    full = fr.dual(X, y, kernel="rbf:gamma=1", epochs=2, engine="numpy")
    monkeypatch.setattr(maximum_margin, "KERNEL_CACHE_BYTES", 40 * 8 * 300)
    space = _dual_model(X, y, "rbf:gamma=1", epochs=2)
    assert len(space.support) > 40
    assert sum(c.nbytes for c in space.chunks) <= 40 * 8 * 300
    capped = fr.dual(X, y, kernel="rbf:gamma=1", epochs=2, engine="numpy")
    assert capped.updates == full.updates and capped.mistakes == full.mistakes
    assert np.allclose(capped.final["alpha"], full.final["alpha"], rtol=1e-9, atol=1e-12)


# -- CSR input: validate() without a copy -----------------------------------------------------

def test_canonical_csr_is_taken_without_a_copy():
    X, y = noisy_uniform(30, 5, seed=9)
    X[np.abs(X) < 0.5] = 0.0
    A = sp.csr_matrix(X)
    out, _ = validate(A, y)
    assert out is A


@pytest.mark.parametrize("change", ["unsorted", "duplicates", "float32", "int64 indices",
                                    "csc"])
def test_other_sparse_input_is_copied_to_canonical_csr_and_left_alone(change):
    X, y = noisy_uniform(30, 5, seed=10)
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
    X, y = noisy_uniform(20, 4, seed=11)
    X[7, 1] = bad
    with pytest.raises(DataError, match="X contains") as info:
        validate(sp.csr_matrix(X), y)
    assert "\n" not in str(info.value)
