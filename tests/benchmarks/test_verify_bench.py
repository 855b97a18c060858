"""Benchmark: the verifier's overhead on the whole golden set for a conforming implementation
(tests/conforming_impl.py: the project's fast forms), through the sandbox
(perceptron_oracle/sandbox.py) as ``verify --impl`` runs it, against the same callable
called in this process with its Trace taken as it is (how ``verify --impl`` ran before the
sandbox).  By hand:

    pytest tests/benchmarks/test_verify_bench.py --benchmark-enable -s

prints both and their ratio (``extra_info["ratio"]``), which must stay within 1.5.  In CI
(``--benchmark-disable``) each runs once, as a correctness check: every case passes both
ways and the ratio is not asserted (a loaded CI machine times noise).
"""

from __future__ import annotations

import sys
import time

import pytest

from conforming_impl import run
from perceptron_oracle import golden, verify
from perceptron_oracle.sandbox import Sandbox

MAX_RATIO = 1.5


@pytest.fixture(scope="module")
def cases():
    return golden.load()


@pytest.fixture(scope="module")
def box():
    """The worker imports conforming_impl as this process does (tests/ is on sys.path)."""
    with Sandbox("conforming_impl:run") as sandbox:
        yield sandbox


def _in_process(cases):
    return verify.verify(cases, lambda c: run(c.algorithm, c.X.copy(), c.y.copy(),
                                              epochs=c.epochs, kernel=c.kernel,
                                              params=dict(c.params)))


def _sandboxed(cases, box):
    return verify.verify(cases, verify.sandboxed(box, cases))


def _best(function, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def test_sandboxed_verify_overhead(benchmark, cases, box):
    results = _sandboxed(cases, box)        # warm: numba compiles in the worker
    assert all(r.ok for r in results), [r.message for r in results if not r.ok][:3]
    assert all(r.ok for r in _in_process(cases))
    results = benchmark(_sandboxed, cases, box)
    assert all(r.ok for r in results)
    if benchmark.disabled:
        return
    old, new = _best(lambda: _in_process(cases)), _best(lambda: _sandboxed(cases, box))
    benchmark.extra_info.update(in_process=old, sandboxed=new, ratio=new / old)
    print(f"\n{len(cases)} cases: in process {old:.3f} s, sandboxed {new:.3f} s, "
          f"ratio {new / old:.2f}", file=sys.stderr)
    assert new / old <= MAX_RATIO
