"""The code under test kept in its box: a Python implementation named ``MODULE:CALLABLE``
run in a worker process (CONTRACT.md, "Partial conformance").

``verify --impl``, ``verify --fuzz`` and the pytest plugin call an outside implementation
through a :class:`Sandbox`: a worker process that imports ``MODULE:CALLABLE`` itself (the
current directory first on ``sys.path``, as :func:`verify.load_callable`), is reused from
case to case, and is started again after it dies or runs out of time.  What the worker may
do to the verifier is bounded:

- time: each call has ``timeout`` seconds (``--case-timeout``); past it the worker is killed
  and the case fails ("no answer in 30 s (--case-timeout)");
- memory: the worker's data segment (heap and anonymous mappings, ``RLIMIT_DATA``) is limited
  to ``memory_mb`` MiB (``--memory-limit``); an allocation beyond it fails in the worker with
  MemoryError, and the case fails (numba's compiler, below about 512 MiB, aborts: SIGABRT).
  ``RLIMIT_DATA`` rather than ``RLIMIT_AS``: an address-space limit also counts reserved,
  untouched address space (BLAS thread stacks among others); measured, at 256 MiB of
  address space OpenBLAS's threads spun without an answer;
- exits: SystemExit, KeyboardInterrupt, ``os._exit``, a signal (SIGKILL, a segfault) end
  that case only, as a one-line failure ("exited with status 0", "killed by signal
  SIGKILL", "raised SystemExit(3)"); never the verifier's exit status or summary;
- output: the worker's file descriptors 1 and 2 go to files of the sandbox; each call's
  output is kept (shortened) in :attr:`Sandbox.output`, never mixed with the verifier's;
- the answer: the worker turns what the callable returned into JSON (a Trace through its
  fields, a dict as it is, anything else refused; integers and exact numbers beyond
  :data:`~perceptron_oracle.numbers.MAX_EXACT_DIGITS` digits, and lists of trial indices
  longer than the run's trials, refused before anything is formatted), at most
  :data:`~perceptron_oracle.trace.MAX_TRACE_BYTES` bytes; the parent parses it with the
  trace reader's defensive parser and the caller validates it as a trace file is
  (``Trace.from_dict(..., numeric_final=True)``).  The parent never unpickles what the worker
  sends.

Workers are started with multiprocessing's ``fork`` method (:data:`START_METHOD`), measured
on the Perceptron's golden cases (2 cores, Python 3.11): a worker starts in about 5 ms
and a call costs about 0.1 ms more than in-process, because the worker inherits the
verifier's imports (numpy, this package) and ``__main__`` is not run again.  ``forkserver``
and ``spawn`` import the implementation's module (and, for each worker, re-run the main
script as ``__mp_main__``: a script without ``if __name__ == "__main__":`` would run again)
and took 250-600 ms per start and 360-450 ms per restart.  The cost of fork, that a child
holds only the forking thread, does not bite here: the worker runs nothing of the parent's
but this module (the callable is imported after the fork), and OpenBLAS reinitialises its
thread pool at fork.  ``method`` selects another start method.
"""

from __future__ import annotations

import importlib
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .errors import OracleInputError, TraceFormatError
from .numbers import MAX_EXACT_DIGITS, brief, format_exact, is_mpf, to_fraction
from .trace import FORMAT, MAX_NESTING, MAX_TRACE_BYTES, Trace, parse_json

#: Seconds one call may take (``verify --case-timeout``, ``--oracle-case-timeout``).
DEFAULT_CASE_TIMEOUT = 30.0
#: The seconds one run on the user's data may take (``verify --data``, ``--oracle-data``).
DATA_RUN_TIMEOUT = 3600.0

#: MiB of data segment (RLIMIT_DATA) a worker may use (``--memory-limit``).
DEFAULT_MEMORY_MB = 4096
#: The multiprocessing start method of the workers (module docstring).
START_METHOD = "fork"
#: Bytes of each call's stdout and stderr kept in :attr:`Sandbox.output`.
OUTPUT_KEPT = 4096

# The largest integer a trace may hold, in bits: MAX_EXACT_DIGITS decimal digits.
_MAX_BITS = math.ceil(MAX_EXACT_DIGITS * math.log2(10))
_MESSAGE_WIDTH = 300


class ImplementationFailed(Exception):
    """The call failed: the callable raised (``message`` "raised ValueError: ..."), or the
    worker exited, was killed, ran out of time or memory.  ``fatal`` marks the latter kind
    (and SystemExit, KeyboardInterrupt, MemoryError): a failure that says nothing about the
    data, which the fuzzer does not shrink."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.message, self.fatal = message, fatal


# -- the answer as plain data --------------------------------------------------------------

def trace_document(result: Any, trials: int) -> Any:
    """What the callable returned, as the plain data of a trace document: a Trace through
    its fields, a dict as it is (values made plain: Fractions and mpf as "p/q", numpy arrays
    and scalars as lists and numbers).  TraceFormatError, before anything large is built or
    formatted, for any other type, a list of trial indices or scores longer than ``trials``
    (the run's n_examples x epochs), an integer or exact number of more than
    MAX_EXACT_DIGITS digits, or nesting deeper than MAX_NESTING.  The result is then
    validated as a trace file is (``Trace.from_dict(..., numeric_final=True)``)."""
    if isinstance(result, Trace):
        document: dict[str, Any] = {
            "format": FORMAT, "algorithm": result.algorithm, "form": result.form,
            "kernel": result.kernel, "params": result.params,
            "n_examples": result.n_examples, "epochs": result.epochs,
            "mistakes": result.mistakes, "updates": result.updates, "final": result.final}
        for key in ("fragile", "scores"):
            if getattr(result, key) is not None:
                document[key] = getattr(result, key)
    elif isinstance(result, dict):
        document = result
    else:
        raise TraceFormatError(f"the implementation returned {_kind(result)}, not a Trace or "
                               "a dict")
    for key in ("mistakes", "updates", "fragile", "scores"):
        value: Any = document.get(key)
        if isinstance(value, (list, tuple)) and len(value) > trials:
            raise TraceFormatError(f"{key}: {len(value)} entries for a run of {trials} trials")
        if key != "scores" and _is_array(value) and value.size > trials:
            raise TraceFormatError(f"{key}: {value.size} entries for a run of {trials} trials")
    plain: dict[str, Any] = _plain(document, "trace", 0)
    return plain


def _is_array(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "size")


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _plain(value: Any, path: str, depth: int) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind in ("f", "i", "u", "b") and type(value).__module__ == "numpy":
        return value.tolist()           # floats, 64-bit integers, booleans: plain at once
    if type(value) is list:
        if all(type(v) is float for v in value):
            return value                # the common final-state vector
        if all(type(v) is int for v in value) and \
                (not value or max(max(value).bit_length(), min(value).bit_length()) <= 64):
            return value                # trial indices
    if isinstance(value, int):
        if value.bit_length() > _MAX_BITS:
            raise TraceFormatError(f"{path}: {brief(value)}, more than a trace holds "
                                   f"({MAX_EXACT_DIGITS:,} digits, SPEC.md section 5)")
        return value
    if isinstance(value, Fraction) or is_mpf(value):
        try:
            exact = to_fraction(value)
        except (ValueError, ArithmeticError) as exc:
            raise TraceFormatError(f"{path}: {exc}") from None
        if max(exact.numerator.bit_length(), exact.denominator.bit_length()) > _MAX_BITS:
            raise TraceFormatError(f"{path}: {brief(exact)}, more than a trace holds "
                                   f"({MAX_EXACT_DIGITS:,} digits, SPEC.md section 5)")
        return format_exact(exact)
    if isinstance(value, dict):
        if depth >= MAX_NESTING:
            raise TraceFormatError(f"{path}: nested more than {MAX_NESTING} levels deep")
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TraceFormatError(f"{path}: key {_kind(key)} is not a string")
            out[key] = _plain(item, f"{path}.{key[:40]}", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        if depth >= MAX_NESTING:
            raise TraceFormatError(f"{path}: nested more than {MAX_NESTING} levels deep")
        return [_plain(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _plain(value.tolist(), path, depth)
    if type(value).__name__ == "_Refused":   # a value the trace parser already refused
        return value
    raise TraceFormatError(f"{path}: {_kind(value)} (a trace holds numbers, strings, lists "
                           "and objects)")


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_WIDTH else text[:_MESSAGE_WIDTH] + "..."


def describe_exception(exc: BaseException) -> str:
    """"raised TypeError: message", on one line and at most a few hundred characters."""
    if isinstance(exc, SystemExit):
        return f"raised SystemExit({_one_line(repr(exc.code)) if exc.code is not None else ''})"
    text = _one_line(str(exc))
    return f"raised {type(exc).__name__}" + (f": {text}" if text else "")


def load_callable(spec: str) -> Callable[..., Any]:
    """``MODULE:CALLABLE`` (dots allowed in both parts), with a clear error.  The current
    directory is searched first, as pytest, uvicorn and gunicorn do (a console script does
    not put it on ``sys.path`` by itself)."""
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise OracleInputError(f"--impl expects MODULE:CALLABLE, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise OracleInputError(f"cannot import {module_name!r}: {exc}") from None
    except Exception as exc:  # the module itself fails: a syntax error, an error at import
        raise OracleInputError(f"importing {module_name!r} raised "
                               f"{type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise OracleInputError(f"{module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise OracleInputError(f"{spec} is not callable")
    function: Callable[..., Any] = target
    return function


# -- the worker ----------------------------------------------------------------------------

def _worker(conn: multiprocessing.connection.Connection, spec: str, cwd: str,
            memory_mb: int | None, stdout_path: str, stderr_path: str) -> None:
    """The worker's main loop: import ``spec``, say so, then answer one call per message
    until the pipe closes.  Replies are JSON bytes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the verifier's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # not the verifier's handler, forked
    for fd, path in ((1, stdout_path), (2, stderr_path)):
        handle = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.dup2(handle, fd)
        os.close(handle)
    os.chdir(cwd)
    if memory_mb is not None:
        limit = memory_mb * 2**20
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    try:
        impl = load_callable(spec)
    except OracleInputError as exc:
        _send(conn, {"kind": "load_error", "message": str(exc)})
        return
    except BaseException as exc:  # SystemExit at import, say
        _send(conn, {"kind": "load_error",
                     "message": f"importing {spec.partition(':')[0]!r} {describe_exception(exc)}"})
        return
    _send(conn, {"kind": "ready"})
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        reply = _answer(impl, *message)
        if reply.get("memory") and memory_mb is not None:
            reply["message"] += f" (the worker's limit is {memory_mb} MiB, --memory-limit)"
        _send(conn, reply)


def _answer(impl: Callable[..., Any], algorithm: str, X: Any, y: Any, epochs: int,
            kernel: str, params: dict[str, Any]) -> dict[str, Any]:
    try:
        try:
            result = impl(algorithm, X, y, epochs=epochs, kernel=kernel, params=params)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # a stream the callable replaced or closed
                    pass
    except NotImplementedError as exc:
        return {"kind": "not_applicable", "message": _one_line(str(exc)) or
                "NotImplementedError"}
    except (SystemExit, KeyboardInterrupt, MemoryError) as exc:
        return {"kind": "failed", "fatal": True, "message": describe_exception(exc),
                "memory": isinstance(exc, MemoryError)}
    except BaseException as exc:  # the code under test may raise anything
        return {"kind": "failed", "fatal": False, "message": describe_exception(exc)}
    try:
        document = trace_document(result, len(y) * epochs)
        text = json.dumps({"kind": "trace", "trace": document})
    except TraceFormatError as exc:
        return {"kind": "invalid", "message": str(exc)}
    except (ValueError, TypeError, RecursionError, MemoryError) as exc:
        return {"kind": "invalid", "message": f"cannot be written as JSON: "
                                              f"{describe_exception(exc)}"}
    if len(text) > MAX_TRACE_BYTES:
        return {"kind": "invalid", "message": f"{len(text)} bytes as JSON, more than a trace "
                                              f"may be ({MAX_TRACE_BYTES} bytes)"}
    return {"kind": "raw", "text": text}


def _send(conn: multiprocessing.connection.Connection, reply: dict[str, Any]) -> None:
    text = reply["text"] if reply["kind"] == "raw" else json.dumps(reply)
    conn.send_bytes(text.encode("utf-8"))


# -- the parent's side ---------------------------------------------------------------------

def _status(exitcode: int | None) -> str:
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = str(-exitcode)
        return f"killed by signal {name}"
    return f"exited with status {exitcode}"


class Sandbox:
    """``MODULE:CALLABLE`` in a worker process, called as the implementation itself is:
    ``box(algorithm, X, y, *, epochs, kernel, params)`` returns the trace's plain JSON data
    (the caller validates it), raises NotImplementedError with the implementation's reason,
    TraceFormatError for an answer that is no trace, or :class:`ImplementationFailed`.

    :meth:`start` imports the callable in a first worker: an import problem is an
    OracleInputError of one line (``verify``'s usage error), before any case runs.  Use it as
    a context manager, or call :meth:`close`."""

    def __init__(self, spec: str, *, timeout: float = DEFAULT_CASE_TIMEOUT,
                 memory_mb: int | None = DEFAULT_MEMORY_MB,
                 method: str = START_METHOD) -> None:
        module, colon, attr = spec.partition(":")
        if not colon or not module or not attr:
            raise OracleInputError(f"--impl expects MODULE:CALLABLE, got {spec!r}")
        if not timeout > 0:
            raise OracleInputError(f"the case timeout must be positive, got {timeout!r}")
        if memory_mb is not None and memory_mb < 1:
            raise OracleInputError(f"the memory limit must be at least 1 MiB, got {memory_mb}")
        self.spec, self.timeout, self.memory_mb = spec, float(timeout), memory_mb
        self.cwd = os.getcwd()
        self._context: Any = multiprocessing.get_context(method)
        if method == "forkserver":
            self._context.set_forkserver_preload(["numpy", "perceptron_oracle.sandbox"])
        self._process: Any = None
        self._ahead: tuple[Any, float] | None = None   # (key, deadline) of a request sent
        self._conn: multiprocessing.connection.Connection | None = None
        self._files: list[str] = []
        #: (stdout, stderr) of the last call, shortened to OUTPUT_KEPT bytes each.
        self.output: tuple[str, str] = ("", "")
        self.restarts = 0

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, algorithm: str, X: Any, y: Any, *, epochs: int, kernel: str,
                 params: dict[str, Any]) -> Any:
        return self.call((algorithm, X, y, epochs, kernel, params))

    def call(self, request: tuple[Any, ...], key: Any = None,
             ahead: tuple[Any, tuple[Any, ...]] | None = None) -> Any:
        """One call, ``request`` = (algorithm, X, y, epochs, kernel, params).  ``ahead`` =
        (key, request) is sent as soon as this call's answer is in, so that the worker
        computes it while the caller checks this one: a later ``call(..., key=key)`` takes
        its answer, its time limit counted from when it was sent.  (verify.sandboxed)"""
        if self._ahead is not None and (key is None or self._ahead[0] != key):
            self._kill()            # an answer nobody will take: start afresh
        if self._ahead is not None:
            deadline = self._ahead[1]
        else:
            if self._process is None:
                self._launch(during="starting it again")
            if any(self.output):
                for path in self._files:
                    os.truncate(path, 0)
            deadline = self._send(request)
        self._ahead = None
        raw = self._receive(deadline)
        self._collect_output()
        if ahead is not None and self._process is not None:
            if any(self.output):
                for path in self._files:
                    os.truncate(path, 0)
            self._ahead = (ahead[0], self._send(ahead[1]))
        reply = parse_json(raw)
        if not isinstance(reply, dict):
            raise ImplementationFailed("answered something that is not a reply", fatal=True)
        kind = reply.get("kind")
        if kind == "trace":
            return reply.get("trace")
        message = _one_line(str(reply.get("message", "")))
        if kind == "not_applicable":
            raise NotImplementedError(message)
        if kind == "invalid":
            raise TraceFormatError(message)
        raise ImplementationFailed(message or "failed", fatal=bool(reply.get("fatal", True)))

    def _send(self, request: tuple[Any, ...]) -> float:
        """Send a request; the time by which its answer is due."""
        assert self._conn is not None
        try:
            self._conn.send(request)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            pass   # it died: _receive says how
        return time.monotonic() + self.timeout

    def _receive(self, deadline: float) -> bytes:
        """The answer's bytes; ImplementationFailed when the worker dies or is late (it is
        then stopped, and the next call starts another)."""
        assert self._conn is not None and self._process is not None
        try:
            answered = self._conn.poll(max(deadline - time.monotonic(), 0))
        except (BrokenPipeError, EOFError, ConnectionResetError):
            answered = True   # it died: recv below says how
        if not answered:
            self._kill()
            self._collect_output()
            raise ImplementationFailed(f"no answer in {self.timeout:g} s (--case-timeout)",
                                       fatal=True)
        try:
            raw: bytes = self._conn.recv_bytes(MAX_TRACE_BYTES + 2**16)
        except (EOFError, ConnectionResetError, BrokenPipeError):
            self._process.join(5)
            status = _status(self._process.exitcode)
            self._kill()
            self._collect_output()
            raise ImplementationFailed(status, fatal=True) from None
        except OSError:  # longer than maxlength: the worker is not ours any more
            self._kill()
            self._collect_output()
            raise TraceFormatError(f"more than {MAX_TRACE_BYTES} bytes as JSON") from None
        return raw

    def start(self) -> None:
        """Start the worker and import the callable in it; OracleInputError (one line)
        when the import fails."""
        if self._process is None:
            try:
                self._launch(during="importing it")
            except OracleInputError:
                self.close()        # its output files too
                raise

    def _launch(self, during: str) -> None:
        if not self._files:
            for name in ("stdout", "stderr"):
                handle, path = tempfile.mkstemp(prefix=f"perceptron-oracle-{name}-")
                os.close(handle)
                self._files.append(path)
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_worker, name="perceptron-oracle-sandbox", daemon=True,
            args=(child, self.spec, self.cwd, self.memory_mb, *self._files))
        process.start()
        child.close()
        self._process, self._conn = process, parent
        message = None
        try:
            if not parent.poll(max(self.timeout, 10.0)):
                message = f"no answer in {max(self.timeout, 10.0):g} s while {during}"
            else:
                reply = json.loads(parent.recv_bytes(2**16))
                if reply.get("kind") == "load_error":
                    message = str(reply.get("message"))
                elif reply.get("kind") != "ready":
                    message = "the worker answered something that is not a reply"
        except (EOFError, OSError, ValueError, AttributeError):
            process.join(5)
            message = f"{self.spec}: {_status(process.exitcode)} while {during}"
        if message is not None:
            self._kill()
            self._collect_output()
            if during == "importing it":
                raise OracleInputError(_one_line(message))
            raise ImplementationFailed(_one_line(message), fatal=True)
        self.restarts += during != "importing it"

    def _kill(self) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        self._ahead = None
        if conn is not None:
            conn.close()
        if process is not None:
            if process.exitcode is None:
                process.kill()
            process.join(5)
            process.close()

    def _collect_output(self) -> None:
        texts = []
        for path in self._files:
            try:
                if os.stat(path).st_size == 0:
                    texts.append("")
                    continue
                with open(path, "rb") as handle:
                    data = handle.read(OUTPUT_KEPT + 1)
                    size = os.fstat(handle.fileno()).st_size
            except OSError:
                data, size = b"", 0
            text = data[:OUTPUT_KEPT].decode("utf-8", errors="replace")
            if size > OUTPUT_KEPT:
                text += f"\n... ({size} bytes in all)"
            texts.append(text)
        self.output = (texts[0], texts[1]) if len(texts) == 2 else ("", "")

    def close(self) -> None:
        """Stop the worker and remove the output files."""
        if self._conn is not None and self._process is not None:
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._process.join(1)
        self._kill()
        for path in self._files:
            try:
                os.unlink(path)
            except OSError:
                pass
        self._files = []
