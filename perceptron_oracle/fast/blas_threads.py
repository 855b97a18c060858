"""OpenBLAS held at one thread around a run (``OneBlasThread``).

The fast forms make many small BLAS calls: the O(n^2) in-place updates of the Higher-Order
and Second-Order Perceptrons (level-2 calls of a few hundred microseconds) and the compiled
kernel Perceptron's block products.  OpenBLAS hands each to its thread pool, and on a busy
machine every hand-off can cost milliseconds (measured: dsyr2 at n = 100 took 24 ms with the
default threads, 68 us with one, while other processes loaded both cores; the kernel
Perceptron's blocks, 5,000 x 50, took 27-53 us per trial against 0.4-2.5 with one).  A run
therefore holds both OpenBLAS copies (numpy's and scipy's) at one thread and restores their
settings afterwards.
IMPLEMENTING.md, "In-place BLAS for the O(n^2) updates", says the same for other languages.
"""

from __future__ import annotations

from typing import Any

_THREAD_CONTROLS: list[tuple[Any, Any]] | None = None


def _thread_controls() -> list[tuple[Any, Any]]:
    global _THREAD_CONTROLS
    if _THREAD_CONTROLS is None:
        _THREAD_CONTROLS = []
        try:
            import ctypes
            with open("/proc/self/maps") as maps:
                paths = sorted({line.split()[-1] for line in maps
                                if "openblas" in line.split()[-1].lower()})
            for path in paths:
                lib = ctypes.CDLL(path)
                for suffix in ("", "64_"):
                    get = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None)
                    put = getattr(lib, f"scipy_openblas_set_num_threads{suffix}", None)
                    if get is not None and put is not None:
                        _THREAD_CONTROLS.append((get, put))
        except OSError:  # no /proc (not Linux) or a library that will not load: leave it
            pass
    return _THREAD_CONTROLS


class OneBlasThread:
    """Context manager: OpenBLAS at one thread inside, the previous settings restored after."""

    def __enter__(self) -> None:
        self.saved = [(put, get()) for get, put in _thread_controls()]
        for put, _ in self.saved:
            put(1)

    def __exit__(self, *exc: Any) -> None:
        for put, threads in self.saved:
            put(threads)


