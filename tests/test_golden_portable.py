"""The golden files are the same bytes on every machine (SPEC.md, "Portable golden files"),
and ``perceptron-oracle golden`` interrupted leaves a complete set behind.

Regeneration: the committed files against a fresh generation in this process, and in
subprocesses under other BLAS kernels (``OPENBLAS_CORETYPE``, only those this CPU runs,
checked through threadpoolctl's ``architecture``), other OpenBLAS thread counts, and
numpy's SIMD dispatch switched off (``NPY_DISABLE_CPU_FEATURES`` = every dispatch target,
checked through ``__cpu_features__``).  Before the generator's floats came from correctly
rounded operations, ``OPENBLAS_CORETYPE=Prescott`` alone changed alma.json and the SIMD
switch higher_order.json.  A generation takes ~10 s, so by default three subprocess
configurations run (the oldest kernel; no kernel forced, 2 threads, no SIMD dispatch; the
newest kernel, 1 thread); with ``HYPOTHESIS_PROFILE=thorough`` or
``PERCEPTRON_ORACLE_PORTABLE=all`` every kernel this CPU runs, at 1 and 2 threads, and the
SIMD switch alone.  The BLAS configurations are skipped where numpy's BLAS is not OpenBLAS
(or threadpoolctl is missing), the SIMD one where numpy has no dispatch targets.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import platform
import shutil
import signal
import subprocess
import sys
from typing import Any

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp

from perceptron_oracle import golden, preprocessing, rounding
from perceptron_oracle.golden import GoldenFileError

try:
    from numpy._core import _multiarray_umath
except ImportError:   # numpy 1.x
    from numpy.core import _multiarray_umath  # type: ignore[no-redef]

GOLDEN = golden.default_directory()
NAMES = [e["path"] for e in json.loads((GOLDEN / "manifest.json").read_text())["files"]]
NAMES.append("manifest.json")

#: The OpenBLAS kernels tried, oldest first, with the numpy CPU features each needs and
#: the names threadpoolctl may report for it (OpenBLAS calls its Prescott kernel Katmai).
CORETYPES = {
    "Prescott": ((), {"Prescott", "Katmai"}),
    "Nehalem": (("SSE42",), {"Nehalem"}),
    "Sandybridge": (("AVX",), {"Sandybridge"}),
    "Haswell": (("AVX2", "FMA3"), {"Haswell"}),
    "SkylakeX": (("AVX512F", "AVX512BW", "AVX512DQ", "AVX512VL"), {"SkylakeX"}),
}

#: Run in the subprocess: report the BLAS kernel, threads and SIMD targets in effect, then
#: generate the golden files into argv[1].
PROBE = """
import json, sys
try:
    from numpy._core._multiarray_umath import __cpu_features__
except ImportError:   # numpy 1.x
    from numpy.core._multiarray_umath import __cpu_features__
try:
    from threadpoolctl import threadpool_info
    blas = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
except ImportError:
    blas = []
from perceptron_oracle import golden
golden.generate(__import__("pathlib").Path(sys.argv[1]))
print(json.dumps({"architecture": sorted({str(i.get("architecture")) for i in blas}),
                  "threads": sorted({i.get("num_threads") for i in blas}),
                  "features": sorted(k for k, v in __cpu_features__.items() if v)}))
"""


def _cpu_features() -> dict[str, bool]:
    return dict(_multiarray_umath.__cpu_features__)


def _dispatch_targets() -> list[str]:
    return list(_multiarray_umath.__cpu_dispatch__)


def _openblas() -> bool:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return False
    return any(i.get("internal_api") == "openblas" for i in threadpool_info())


def _coretypes() -> list[str]:
    """The kernels this CPU runs, oldest first (none off x86-64 or without OpenBLAS)."""
    if platform.machine().lower() not in ("x86_64", "amd64") or not _openblas():
        return []
    features = _cpu_features()
    return [name for name, (needs, _) in CORETYPES.items()
            if all(features.get(f) for f in needs)]


def _thorough() -> bool:
    return (os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
            or os.environ.get("PERCEPTRON_ORACLE_PORTABLE") == "all")


def _configurations() -> list[Any]:
    """(id, environment changes: a value None removes the variable, expected kernel)."""
    kernels = _coretypes()
    nosimd = ",".join(_dispatch_targets())
    configs = []
    if _thorough():
        for name in kernels:
            for threads in ("1", "2"):
                configs.append((f"{name}-{threads}thread",
                                {"OPENBLAS_CORETYPE": name, "OPENBLAS_NUM_THREADS": threads},
                                name))
        if nosimd:
            configs.append(("nosimd", {"NPY_DISABLE_CPU_FEATURES": nosimd}, None))
    else:
        if kernels:
            configs.append((f"{kernels[0]}", {"OPENBLAS_CORETYPE": kernels[0]}, kernels[0]))
        configs.append(("unset-2threads-nosimd",
                        {"OPENBLAS_CORETYPE": None, "OPENBLAS_L2_SIZE": None,
                         "OPENBLAS_NUM_THREADS": "2",
                         "NPY_DISABLE_CPU_FEATURES": nosimd or None}, None))
        if len(kernels) > 1:
            configs.append((f"{kernels[-1]}-1thread",
                            {"OPENBLAS_CORETYPE": kernels[-1], "OPENBLAS_NUM_THREADS": "1"},
                            kernels[-1]))
    return [pytest.param(env, kernel, id=name) for name, env, kernel in configs]


def _differing(directory: pathlib.Path) -> list[str]:
    return [name for name in NAMES
            if (directory / name).read_bytes() != (GOLDEN / name).read_bytes()]


def test_regeneration_is_byte_identical():
    """In this process, under the environment the tests run in."""
    assert golden.check_generated(GOLDEN) == []


@pytest.mark.parametrize("changes, kernel", _configurations())
def test_regeneration_is_byte_identical_under(changes, kernel, tmp_path):
    env = dict(os.environ)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    out = tmp_path / "golden"
    done = subprocess.run([sys.executable, "-c", PROBE, str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # the configuration took effect
    if kernel is not None:
        assert set(seen["architecture"]) <= CORETYPES[kernel][1], seen["architecture"]
    if "OPENBLAS_NUM_THREADS" in changes and seen["architecture"]:
        assert seen["threads"] == [int(changes["OPENBLAS_NUM_THREADS"])], seen["threads"]
    for target in (changes.get("NPY_DISABLE_CPU_FEATURES") or "").split(","):
        if target:
            assert target not in seen["features"], (target, seen["features"])
    assert _differing(out) == []


# -- the operations the generator's floats come from ------------------------------------

def _nearest(value: mpmath.mpf) -> float:
    return float(mpmath.libmp.to_float(value._mpf_, rnd=mpmath.libmp.round_nearest))


def test_norms_powers_and_dots_are_correctly_rounded():
    """rounding.pnorm (integer p: exact, rounded once), power and exact_dot against mpmath
    at 2000 bits, on values across float64's range (subnormals and near-overflow too);
    normalize divides by that norm, dense and sparse alike."""
    rng = np.random.default_rng(2024)
    with mpmath.workprec(2000):
        for _ in range(400):
            n = int(rng.integers(1, 9))
            x = (rng.standard_normal(n) * 2.0 ** rng.integers(-1070, 1000, size=n)).tolist()
            for p in (1, 2, 3, 4, 7):
                exact = mpmath.fsum(abs(mpmath.mpf(v)) ** p for v in x) ** (mpmath.mpf(1) / p)
                expected = _nearest(exact) if exact < mpmath.mpf(2) ** 1024 else math.inf
                assert rounding.pnorm(x, p) == expected, (x, p)
            assert rounding.pnorm(x, math.inf) == max(abs(v) for v in x)
            z = (rng.standard_normal(n) * 2.0 ** rng.integers(-500, 500, size=n)).tolist()
            dot = mpmath.fsum(mpmath.mpf(a) * mpmath.mpf(b) for a, b in zip(x, z))
            if abs(dot) < mpmath.mpf(2) ** 1024:
                assert rounding.exact_dot(x, z) == _nearest(dot)
            base, exponent = abs(float(rng.standard_normal())) * 8, float(rng.uniform(-3, 9))
            assert rounding.power(base, exponent) == _nearest(mpmath.mpf(base) **
                                                              mpmath.mpf(exponent))
    X = rng.standard_normal((50, 7)) * 2.0 ** rng.integers(-60, 60, size=(50, 1))
    X[3] = 0.0
    for p in (2, 3, math.inf):
        norms = [rounding.pnorm(row, p) for row in X.tolist()]
        dense = preprocessing.normalize(X, p)
        expected = np.array([[v / m if m else 0.0 for v in row]
                             for row, m in zip(X.tolist(), norms)])
        assert np.array_equal(dense, expected)
        assert np.array_equal(preprocessing.normalize(sp.csr_matrix(X), p).toarray(), dense)


def test_largest_eigenvalue_is_an_upper_bound():
    rng = np.random.default_rng(7)
    with mpmath.workprec(600):
        for n in (1, 2, 3, 5):
            for _ in range(10):
                M = rng.standard_normal((n, n))
                Q = M @ M.T   # symmetric: the helper is given its doubles
                bound = rounding.largest_eigenvalue(Q)
                exact = max(mpmath.eigsy(mpmath.matrix(Q.tolist()), eigvals_only=True))
                assert mpmath.mpf(bound) >= exact
                assert mpmath.mpf(bound) <= exact * (1 + mpmath.mpf(2) ** -50)
    assert rounding.largest_eigenvalue(np.zeros((3, 3))) == 0.0
    assert rounding.largest_eigenvalue(np.array([[math.inf]])) == math.inf


# -- an interrupted `golden` leaves the old complete set or the new one -------------------

def _old_set(tmp_path: pathlib.Path) -> tuple[pathlib.Path, dict[str, bytes]]:
    """A copy of the golden directory whose golden files are a complete set that differs
    from what generation writes: one header line changed, the manifest's sha256 with it."""
    target = tmp_path / "golden"
    shutil.copytree(GOLDEN, target)
    path = target / NAMES[0]
    before = path.read_text(encoding="utf-8")
    text = before.replace('"header": [', '"header": ["an older generation", ', 1)
    assert text != before
    path.write_text(text, encoding="utf-8")
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["files"][0]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (target / "manifest.json").write_text(golden.dumps(manifest))
    golden.load(target)   # a valid set
    return target, {name: (target / name).read_bytes() for name in NAMES}


def _assert_complete_set(target: pathlib.Path, old: dict[str, bytes]) -> str:
    """The directory holds the old set or the new one, loads, and keeps nothing temporary
    (and its other files: __init__.py, README.md, schema/)."""
    now = {name: (target / name).read_bytes() for name in NAMES}
    new = {name: (GOLDEN / name).read_bytes() for name in NAMES}
    assert now in (old, new), [n for n in NAMES if now[n] != old[n] and now[n] != new[n]]
    golden.load(target)
    assert not [p.name for p in target.iterdir() if p.name.startswith(golden.TEMPORARY_PREFIX)]
    for other in ("__init__.py", "README.md", "schema"):
        assert (target / other).exists()
    return "old" if now == old else "new"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_generation_leaves_a_complete_set(signum, tmp_path):
    """The CLI interrupted once it has written the first file: the old set stays, and the
    temporary directory goes (SIGTERM: cli.main turns it into an exception, so that the
    ``finally`` blocks run)."""
    target, old = _old_set(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-u", "-c", "import sys; from perceptron_oracle.cli import main; "
         "sys.exit(main())", "golden", "--golden", str(target)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()   # "perceptron.json: 44 cases in ..": the first file is
    assert line.startswith(NAMES[0]), line   # written, the second family under way
    assert any(p.name.startswith(golden.TEMPORARY_PREFIX) for p in target.iterdir())
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, err[-2000:]   # 130, 143: cli.main's statuses
    assert _assert_complete_set(target, old) == "old"


def _fake_generation(monkeypatch):
    """``generate`` writing the committed files (as a generation does, fast): the tests of
    the commit below need a new set, not the ten seconds of a real one."""
    def copy(directory, log, families=None):
        for name in NAMES:
            shutil.copyfile(GOLDEN / name, directory / name)
        return list(NAMES)
    monkeypatch.setattr(golden, "_generate_into", copy)


def test_generation_over_an_old_set_replaces_it(tmp_path):
    target, old = _old_set(tmp_path)
    golden.generate(target)
    assert _assert_complete_set(target, old) == "new"


def test_an_exception_during_the_commit_puts_the_old_set_back(tmp_path, monkeypatch):
    """os.replace failing half-way through moving the files in: the old set stays."""
    _fake_generation(monkeypatch)
    target, old = _old_set(tmp_path)
    real = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == 3:   # two files moved in, the first of them changed
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(golden.os, "replace", flaky)
    with pytest.raises(OSError, match="No space"):
        golden.generate(target)
    monkeypatch.setattr(golden.os, "replace", real)
    assert len(calls) > 3   # the rollback moved files back
    assert _assert_complete_set(target, old) == "old"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_commit_waits_for_the_new_set(signum, tmp_path, monkeypatch):
    """A signal arriving while the files are moved in is held until the new set is
    complete, then raised to its own handler (here one that raises)."""
    _fake_generation(monkeypatch)
    target, old = _old_set(tmp_path)
    real = os.replace
    calls = []

    class Stop(Exception):
        pass

    def handler(number, frame):
        raise Stop(number)

    def signalling(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            signal.raise_signal(signum)
        real(src, dst)

    previous = signal.signal(signum, handler)
    try:
        monkeypatch.setattr(golden.os, "replace", signalling)
        with pytest.raises(Stop):
            golden.generate(target)
    finally:
        signal.signal(signum, previous)
    monkeypatch.setattr(golden.os, "replace", real)
    assert len(calls) == len(NAMES)   # every file moved in after the signal came
    assert _assert_complete_set(target, old) == "new"


def test_check_generated_removes_its_directory_on_an_exception(tmp_path, monkeypatch):
    monkeypatch.setattr(golden.tempfile, "tempdir", str(tmp_path))
    real = golden._generate_into

    def interrupted(directory, log, families=None):
        (directory / "partial.json").write_text("{")
        raise KeyboardInterrupt

    monkeypatch.setattr(golden, "_generate_into", interrupted)
    with pytest.raises(KeyboardInterrupt):
        golden.check_generated(GOLDEN)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(golden, "_generate_into", real)


def test_a_manifest_listing_a_file_twice_is_refused(tmp_path):
    target = tmp_path / "golden"
    shutil.copytree(GOLDEN, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["files"].append(dict(manifest["files"][0]))
    (target / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(GoldenFileError, match=f"lists {NAMES[0]} twice"):
        golden.load(target)
