"""Both engines of every fast form that takes ``engine``, on longer runs: the same decisions
and the same final state to rounding.

The forms are read from the registry (every ``(algorithm, form)`` of
``family.engine_forms``); each runs some thousands of trials (two epochs) with
``engine="numpy"`` (the block-ahead driver) and ``engine="numba"`` (the compiled per-trial
loop), under the linear kernel on dense X, and on CSR X where the form takes CSR X and the
linear kernel only; under the polynomial and Gaussian kernels where the form takes any
kernel (such a form's CSR run is its dense run in each engine: tests/test_fast_forms.py).
The two runs must make the same mistakes and updates, record scores equal to rounding, and
end in the same final state: every entry, integers exactly, floats to rounding.  Each run
must have exercised the loops (a least number of updates, and what :data:`LONG_RUNS` asks
besides).

:data:`LONG_RUNS` holds, per family, the data, the parameter regimes whose loops differ,
the kernels and the tolerances; a family without an entry runs with :data:`DEFAULT`, so a
newly registered family or form is tested here without a line added.  Without numba every
item is skipped (reason stated): there is one engine.  The reference comparisons on drawn
data: tests/test_engines.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from fast_protocol import needs_numba
from fixtures import assert_final_close, noisy_uniform, random_labels, sparse_hyperplane
from perceptron_oracle.registry import ALGORITHMS
from perceptron_oracle.trace import Trace

pytestmark = needs_numba


@dataclass(frozen=True)
class Regime:
    """One parameter set of a long run, and what the numba engine's run must show it did
    besides enough updates (``exercised``: a test of its trace, None: nothing more)."""

    params: dict[str, Any] = field(default_factory=dict)
    exercised: Callable[[Trace], bool] | None = None

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.params.items()) or "defaults"


@dataclass(frozen=True)
class LongEngineRun:
    """A family's long runs: ``data()`` (X, y), its parameter ``regimes``, the ``kernels``
    its kernel forms run besides the linear one, and the tolerances (rtol; atol the same,
    times max(1, max |score|) where ``scale_scores``; ``state``: (rtol, atol) per final
    entry, "*" for the others; ``exact``: float entries that must be equal).  CSR X is
    ``data()``'s X with the entries of size below ``sparsify`` set to zero."""

    data: Callable[[], tuple[np.ndarray, np.ndarray]] = lambda: noisy_uniform(1000, 12, seed=1)
    regimes: tuple[Regime, ...] = (Regime(),)
    kernels: tuple[str, ...] = ("rbf:gamma=1/2", "poly:degree=3,coef0=1,gamma=1/4")
    scores: float = 1e-9
    scale_scores: bool = False
    state: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"*": (1e-8, 1e-8)})
    exact: tuple[str, ...] = ()
    min_updates: int = 300
    sparsify: float = 0.5
    prefix: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)


#: ROMMA's and PUMMA's dual forms under the linear kernel: on numba the primal's loop, on
#: numpy the dual's coefficients.  Further on, on these non-separable data, ||w|| grows to
#: 1e9 and the dual's cancelling coefficients part from the primal (a fragile stretch, where
#: two float64 forms may part): compared on the first 500 examples, one epoch.
LINEAR_DUAL_PREFIX = {("dual", "linear"): (500, 1, 100)}


#: PUMMA's dual under a kernel: the cost of a run grows with the square of its updates (the
#: numpy engine's kernel blocks over every support): the first 600 examples, two epochs.
PUMMA_PREFIX = LINEAR_DUAL_PREFIX | {("dual", kernel): (600, 2, 300)
                                     for kernel in LongEngineRun().kernels}


def _slacks_taken(trace: Trace) -> bool:
    return int(np.count_nonzero(trace.final["xi"])) > 100


#: A family without an entry here.
DEFAULT = LongEngineRun()

#: Per family: the data, regimes, kernels and tolerances of its long runs.
LONG_RUNS: dict[str, LongEngineRun] = {
    "perceptron": LongEngineRun(
        data=lambda: random_labels(1500, 8, seed=1),
        regimes=(Regime(dict(eta=0.5, b0=-0.25, C=1, tau=0.2, lam=0.5, alpha_bound=2),
                        lambda trace: bool(np.any(trace.final["votes"]))),),
        kernels=("rbf:gamma=0.5", "poly:degree=3,coef0=1,gamma=0.5"),
        scores=1e-12, state={"*": (1e-12, 1e-12)}, exact=("votes", "averaged.alpha"),
        min_updates=100, sparsify=0.3),
    "pnorm_perceptron": LongEngineRun(
        data=lambda: sparse_hyperplane(1000, 12, seed=8),
        regimes=tuple(Regime({"p": p}, lambda trace: trace.mistakes == trace.updates)
                      for p in (4.0, 3.5)),
        scores=1e-12, state={"*": (1e-12, 1e-14)}, exact=("v",), min_updates=100,
        sparsify=0.0),
    "romma": LongEngineRun(data=lambda: noisy_uniform(1500, 12, seed=1),
                           regimes=(Regime({"delta": "1/10"}),), prefix=LINEAR_DUAL_PREFIX),
    "pumma": LongEngineRun(
        data=lambda: noisy_uniform(1500, 12, seed=1),
        regimes=tuple(Regime({"delta": "1/10", "C": C} | ({"p": p} if p else {}),
                             _slacks_taken if C and not p else None)
                      for p in (None, Fraction(5, 2), 3, 4) for C in (None, "1/2")),
        scale_scores=True, state={"*": (1e-8, 1e-8), "xi": (1e-8, 1e-10)}, sparsify=0.3,
        prefix=PUMMA_PREFIX),
}


def _cases() -> list[Any]:
    cases = []
    for name, family in ALGORITHMS.items():
        spec = LONG_RUNS.get(name, DEFAULT)
        for form in family.engine_forms:
            declared = family.form(form)
            kernels = ("linear",) + (spec.kernels if declared.kernels == "any" else ())
            for regime in spec.regimes:
                for kernel in kernels:
                    for layout in ("dense", "csr"):
                        sparse = layout == "csr"
                        if sparse and declared.kernels == "any":
                            continue
                        if form not in family.forms_for(kernel, regime.params, sparse=sparse):
                            continue
                        cases.append(pytest.param(
                            name, form, kernel, regime, layout,
                            id=f"{name}-{form}-{kernel.split(':')[0]}-{layout}-{regime.label}"))
    return cases


@pytest.mark.parametrize("name,form,kernel,regime,layout", _cases())
def test_engines_agree_on_a_longer_run(name, form, kernel, regime, layout):
    """Some thousands of trials (two epochs; ``prefix`` runs fewer): the numba engine makes
    the numpy engine's decisions, and its scores and final state equal them to rounding."""
    spec = LONG_RUNS.get(name, DEFAULT)
    X, y = spec.data()
    rows, epochs, least = spec.prefix.get((form, kernel), (len(y), 2, spec.min_updates))
    X, y = X[:rows], y[:rows]
    if layout == "csr":
        X = sp.csr_matrix(np.where(np.abs(X) < spec.sparsify, 0.0, X))
    run = ALGORITHMS[name].form(form).run
    a, b = (run(X, y, epochs=epochs, kernel=kernel, engine=engine, record_scores=True,
                **regime.params) for engine in ("numpy", "numba"))
    assert a.mistakes == b.mistakes and a.updates == b.updates
    assert len(a.updates) > least
    size = max(1.0, float(np.max(np.abs(a.scores)))) if spec.scale_scores else 1.0
    assert np.allclose(a.scores, b.scores, rtol=spec.scores, atol=spec.scores * size)
    assert_final_close(b.final, a.final, *spec.state["*"], exact=spec.exact,
                       tolerances=spec.state)
    if regime.exercised is not None:
        assert regime.exercised(b)
