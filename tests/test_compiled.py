"""The Perceptron's compiled loops (``fast._compiled``): what only they do.

The primal loop run without building (one-vs-rest's two-class primal), the compiled dual's
checks of non-finite X under each kernel, its CSR fallback to the numpy engine, its blocks
against the reference (updates inside and at the end of a block, a non-finite score inside
one), and the purge of the loops' cache when a source changes.  Without numba the items are
skipped (reason stated).  The concerns every engine form shares (both engines against the
reference under every kernel, overflow, NaN and infinity in X, shadow runs,
``engine="numba"`` without numba): tests/test_engines.py; both engines on longer runs:
tests/test_long_engine_runs.py.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from fast_protocol import (
    ENGINES,
    assert_engines_stop_alike,
    needs_numba,
)
from fast_protocol import check_against as _check
from perceptron_oracle.errors import DataError
from perceptron_oracle.fast import _compiled
from perceptron_oracle.fast import perceptron as fp
from perceptron_oracle.reference.perceptron import perceptron as reference
from perceptron_oracle.trace import plain_value


def _data(T=200, n=6, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, n)) * scale
    y = np.where(rng.random(T) < 0.5, 1, -1)
    return X, y


@needs_numba
@pytest.mark.parametrize("layout", [np.asarray, sp.csr_matrix])
def test_primal_loop_without_build_leaves_tally_and_history_alone(layout):
    """``build=False`` (one-vs-rest's two-class primal): the loop's w, b, alpha and flags
    are those of the building run, and it writes nothing to the tally and history it is
    handed (here full size and marked, so a write would show)."""
    X, y = _data(400, 6, seed=3)
    X = layout(X)
    dense, indptr, indices, data, sparse = _compiled.csr_parts(X)
    runs = {}
    for build in (True, False):
        w, alpha = np.zeros(6), np.zeros(400, dtype=np.int64)
        state, flags = np.zeros(4), np.zeros(800, dtype=np.uint8)
        tally = np.full((2, 6, 2), 7.0)
        history = np.full((_compiled.update_history(800).shape[0], 2), 7, dtype=np.int64)
        bad = _compiled.perceptron_loops().perceptron_primal(
            dense, indptr, indices, data, sparse, y.astype(float), 2, 1.0, 0.5, 0.2,
            np.zeros(1), False, -1, w, alpha, state, flags, np.zeros(1), False, tally,
            history, 0, build)
        assert bad == -1
        runs[build] = (w, alpha, state[0], flags, tally, history)
    for got, want in zip(runs[False][:4], runs[True][:4]):
        assert np.array_equal(got, want)
    assert (runs[False][3] & _compiled.UPDATE).sum() > 50
    assert (runs[False][4] == 7.0).all() and (runs[False][5] == 7).all()
    assert not (runs[True][4] == 7.0).all()  # the building run did write there


@needs_numba
@pytest.mark.parametrize("kernel", ["linear", "poly:degree=2,coef0=1,gamma=0", "rbf:gamma=1"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["no update at all", "the last trial's first support",
                                   "a row scored against supports"])
def test_non_finite_x_is_a_data_error_in_the_compiled_dual(kernel, bad, where):
    """The compiled dual does not check dense X up front under the linear and polynomial
    kernels: its kernel values see every row scored once a support exists, and the rows
    scored before the first support are checked after the walk.  Each case fails without
    one of the two: no update ever (b0 = 1, every label +1), the only update at the last
    trial (its row never meets a kernel value), a row in the middle of the run; under the
    Gaussian kernel, where an infinity can give k = 0, X is checked up front."""
    X, y = _data(40, 3, seed=6)
    row = {"no update at all": 17, "the last trial's first support": 39,
           "a row scored against supports": 25}[where]
    params = {}
    if where != "a row scored against supports":
        y = np.ones(40, dtype=int)
        params["b0"] = 1
        if where == "the last trial's first support":
            y[39] = -1
    X[row, 1] = bad
    word = "NaN" if np.isnan(bad) else "an infinity"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for engine in ENGINES:
            with pytest.raises(DataError, match=f"X contains {word}"):
                fp.dual(X, y, engine=engine, kernel=kernel, lam=1, **params)


@needs_numba
def test_an_infinity_the_gaussian_kernel_maps_to_zero_is_a_data_error():
    """x_i = +inf where every other row is negative: each x_s . x_i is -inf, so
    |x_s|^2 + |x_i|^2 - 2 x_s . x_i = inf and k(x_s, x_i) = 0, a finite score; only the
    up-front check finds it, which the Gaussian kernel's compiled dual keeps."""
    X, y = _data(40, 3, seed=7)
    X[:, 1] = -np.abs(X[:, 1]) - 0.1
    X[25, 1] = np.inf
    for engine in ENGINES:
        with pytest.raises(DataError, match="X contains an infinity"):
            fp.dual(X, y, engine=engine, kernel="rbf:gamma=1")


@needs_numba
def test_csr_dual_falls_back_to_numpy(monkeypatch):
    X, y = _data(40, 5, seed=4)
    dense = fp.dual(X, y, engine="numba", kernel="rbf:gamma=1")
    for loops in ("kernels", "perceptron_loops"):
        monkeypatch.setattr(_compiled, loops, lambda: pytest.fail("compiled CSR dual"))
    sparse = fp.dual(sp.csr_matrix(X), y, engine="numba", kernel="rbf:gamma=1")
    assert sparse.mistakes == dense.mistakes and sparse.updates == dense.updates


def _block_walk(monkeypatch, length):
    """The compiled dual's blocks fixed at ``length`` examples (the adaptive length would
    put few updates inside the blocks of a short run); records each block's (lo, hi)."""
    blocks = []
    kernel_block = _compiled.kernel_block

    def spy(A, sq_a, B, lo, hi, *rest):
        blocks.append((lo, hi))
        return kernel_block(A, sq_a, B, lo, hi, *rest)

    monkeypatch.setattr(fp._Dual, "block_length", staticmethod(lambda *a: length))
    monkeypatch.setattr(_compiled, "kernel_block", spy)
    return blocks


@needs_numba
@pytest.mark.parametrize("kernel", ["linear", "poly:degree=2,coef0=1,gamma=1",
                                    "rbf:gamma=0.5"])
def test_perceptron_dual_blocks_follow_the_reference_exactly(monkeypatch, kernel):
    """Small integers, integer parameters: float64 is exact (SPEC 3; not the Gaussian
    kernel's exp: compared as the differential suite compares, scores to rounding), so the
    compiled dual's blocks of 7 must give the reference's decisions and scores exactly:
    updates inside a block that later trials of the block see (a new support's kernel
    values computed in the walk; an earlier support's column of the block's kernel values),
    updates at a block's last trial, three epochs, alpha-bound blocked trials, the lambda
    term, tau and C."""
    rng = np.random.default_rng(7)
    T = 40
    X = rng.integers(-3, 4, size=(T, 3)).astype(float)
    y = np.where(rng.random(T) < 0.5, 1, -1)
    params = dict(eta=1, b0=-1, C=1, tau=2, lam=1, alpha_bound=2)
    blocks = _block_walk(monkeypatch, 7)
    expected = reference(X, y, epochs=3, kernel=kernel, record_scores=True, **params)
    actual = fp.dual(X, y, epochs=3, kernel=kernel, engine="numba", record_scores=True,
                     **params)
    exact = [float(s) for s in expected.scores]
    if kernel.startswith("rbf"):
        _check(expected, actual, X, "dual rbf, blocks of 7")
        assert np.allclose(actual.scores, exact, rtol=1e-12, atol=1e-12)
    else:
        assert expected.fragile == [] and actual.scores == exact
    assert actual.mistakes == expected.mistakes and actual.updates == expected.updates
    assert plain_value(actual.final["votes"]) == plain_value(expected.final["votes"])
    assert plain_value(actual.final["alpha"]) == plain_value(expected.final["alpha"])
    # what the run exercised: blocks of every epoch, updates inside and at the end of blocks
    assert len(blocks) == 3 * 6 and blocks[:6] == blocks[6:12] == blocks[12:]
    last = {hi - 1 for _, hi in blocks}
    inside = [u for u in actual.updates if u % T not in last]
    assert inside and any(u % T in last for u in actual.updates)
    first = {u % T: u for u in reversed(actual.updates)}
    assert any(u == first[u % T] for u in inside), "no new support inside a block"
    assert any(u != first[u % T] for u in inside), "no re-update inside a block"
    blocked = 3 * T - len(actual.updates) - sum(actual.final["votes"])
    assert blocked > 0 and max(actual.final["alpha"]) == 2


@needs_numba
def test_perceptron_dual_block_stops_at_a_non_finite_score_inside_a_block(monkeypatch):
    """A score beyond float64's range at trial 10, inside the block 7 .. 13 (and after an
    update inside that block): the FloatRangeError names trial 10 in both engines."""
    X, y = _data(30, 3, seed=5)
    X[10] *= 1e200
    blocks = _block_walk(monkeypatch, 7)
    with pytest.raises(Exception, match="^trial 10"):
        fp.dual(X, y, epochs=2, engine="numba", kernel="poly:degree=2")
    assert blocks[-1] == (7, 14)
    assert any(7 <= u < 10 for u in fp.dual(X[:10], y[:10], kernel="poly:degree=2").updates)
    assert_engines_stop_alike(lambda e: fp.dual(X, y, epochs=2, engine=e,
                                                kernel="poly:degree=2"))


@needs_numba
def test_a_change_to_any_source_of_the_loops_purges_their_cache(tmp_path, monkeypatch):
    """numba keys a cached loop on its own file only: ``_numba.purge_stale_cache`` deletes
    the cached ``_numba*`` loops (and only those) when the digest of every file they are
    compiled from differs from the one kept beside them (here, in a temporary directory
    standing for numba's cache directory)."""
    nb = _compiled.kernels()
    monkeypatch.setattr(nb, "dense_dot", types.SimpleNamespace(
        _cache=types.SimpleNamespace(_cache_path=str(tmp_path))))
    loop = tmp_path / "_numba_perceptron.perceptron_primal-300.py311.1.nbc"
    other = tmp_path / "benchmarks._nb_dense-1.py311.nbi"
    loop.write_bytes(b"")
    other.write_bytes(b"")
    nb.purge_stale_cache()               # no digest yet: the loops may be of other sources
    assert not loop.exists() and other.exists()
    loop.write_bytes(b"")
    nb.purge_stale_cache()               # the digest matches the sources: kept
    assert loop.exists()
    (tmp_path / nb.SOURCES_STAMP).write_text("0" * 64)   # as after an edit of _slots.py
    nb.purge_stale_cache()
    assert not loop.exists() and other.exists()
