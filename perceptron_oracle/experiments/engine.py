"""Running an experiment's independent runs: a plain loop, joblib's local processes, or a dask
cluster through joblib's dask backend, with a progress bar on stderr.

Every experiment is written as a list of tasks (a module-level function and its arguments,
each task carrying its own explicit seeds) whose results come back in the order of the list.
The numbers therefore do not depend on how many workers ran the tasks or where.  Each task
runs with OpenBLAS at one thread, so a matrix product is summed the same way in the main
process, in a joblib worker and on a dask worker.

joblib and dask.distributed are optional: without them ``--jobs 1`` runs the plain loop, and
asking for more stops with one line naming what to install (:class:`MissingExtra`).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from ..errors import OracleInputError
from ..fast.blas_threads import OneBlasThread

BACKENDS = ("loky", "dask")


class MissingExtra(OracleInputError):
    """An optional package the requested mode of running needs is not installed."""


def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    with OneBlasThread():
        return fn(*args)


class Progress:
    """A one-line progress bar on ``stream``, drawn only once the work has lasted
    ``after`` seconds (short runs stay silent) and at most ten times a second."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None,
                 after: float = 1.0, enabled: bool = True):
        self.label, self.total = label, total
        self.stream = stream if stream is not None else sys.stderr
        self.after, self.enabled = after, enabled
        self.start = time.monotonic()
        self.last = 0.0
        self.done = 0
        self.drawn = False
        self.last_done = -1

    def step(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if not self.enabled or now - self.start < self.after:
            return
        if self.done < self.total and now - self.last < 0.1:
            return
        self.last = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        elapsed = now - self.start
        eta = (elapsed / self.done * (self.total - self.done)) if self.done else 0.0
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] "
                          f"{self.done}/{self.total} {elapsed:6.1f}s (left ~{eta:5.1f}s)")
        self.stream.flush()
        self.drawn = True
        self.last_done = self.done

    def close(self) -> None:
        if self.drawn:
            if self.last_done != self.done:
                self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()


class Engine:
    """Where the tasks run: ``jobs`` workers with joblib's ``backend`` ("loky": local
    processes; "dask": a dask.distributed cluster, the one at ``scheduler`` or a LocalCluster
    of ``jobs`` single-threaded workers started for the duration of the :meth:`session`)."""

    def __init__(self, jobs: int = 1, backend: str = "loky", scheduler: str | None = None,
                 progress: bool = True, stream: TextIO | None = None):
        if jobs < 1:
            raise OracleInputError(f"--jobs must be at least 1, got {jobs}")
        if backend not in BACKENDS:
            raise OracleInputError(f"unknown --backend {backend!r} (loky, dask)")
        if scheduler is not None and backend != "dask":
            raise OracleInputError("--scheduler needs --backend dask")
        self.jobs, self.backend, self.scheduler = jobs, backend, scheduler
        self.progress, self.stream = progress, stream
        self.client: Any = None
        self._joblib: Any = None
        self._check_extras()

    @property
    def plain(self) -> bool:
        return self.backend == "loky" and self.jobs == 1

    def _check_extras(self) -> None:
        if self.plain:
            return
        try:
            import joblib
        except ImportError:
            raise MissingExtra(f"--jobs {self.jobs} needs joblib: pip install joblib "
                               "(or perceptron-oracle[experiments])") from None
        self._joblib = joblib
        if self.backend == "dask":
            try:
                import distributed  # noqa: F401
            except ImportError:
                raise MissingExtra("--backend dask needs dask.distributed: pip install "
                                   "'dask[distributed]' (or perceptron-oracle[dask])") from None

    @contextlib.contextmanager
    def session(self) -> Iterator[Engine]:
        """Start (and afterwards stop) the dask client and cluster, if any."""
        if self.backend != "dask":
            yield self
            return
        import logging

        from distributed import Client, LocalCluster

        logging.getLogger("distributed").setLevel(logging.ERROR)
        if self.scheduler is not None:
            try:
                client = Client(self.scheduler, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise OracleInputError(f"cannot reach the dask scheduler at "
                                       f"{self.scheduler}: {exc}") from None
            cluster = None
        else:
            cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.ERROR)
            client = Client(cluster)
        self.client = client
        try:
            yield self
        finally:
            self.client = None
            client.close()
            if cluster is not None:
                cluster.close()

    def map(self, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]],
            label: str = "runs") -> list[Any]:
        """``[fn(*task) for task in tasks]``, on this engine's workers, in the tasks' order."""
        bar = Progress(label, len(tasks), self.stream, enabled=self.progress)
        results: list[Any] = []
        try:
            if self.plain:
                for task in tasks:
                    results.append(_call(fn, task))
                    bar.step()
                return results
            joblib = self._joblib
            calls = (joblib.delayed(_call)(fn, task) for task in tasks)
            if self.backend == "dask":
                if self.client is None:
                    raise RuntimeError("Engine.map with the dask backend outside session()")
                with joblib.parallel_config(backend="dask"):
                    outputs = joblib.Parallel(n_jobs=-1, return_as="generator")(calls)
                    for out in outputs:
                        results.append(out)
                        bar.step()
            else:
                outputs = joblib.Parallel(n_jobs=self.jobs, backend="loky",
                                          return_as="generator")(calls)
                for out in outputs:
                    results.append(out)
                    bar.step()
            return results
        finally:
            bar.close()
