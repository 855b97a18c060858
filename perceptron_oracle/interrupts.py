"""Interrupts end a command with one line: SIGINT (Ctrl-C) and SIGTERM.

:func:`one_line` wraps a command's ``main``: while it runs, SIGTERM raises
:class:`Terminated` (a ``KeyboardInterrupt``) in the main thread, so ``finally`` blocks and
context managers (``tempfile.TemporaryDirectory``, :mod:`perceptron_oracle.atomic`) clean up
as they do for Ctrl-C; then the command prints ``PROGRAM: interrupted`` (or ``terminated``)
on stderr and returns 130 (SIGINT) or 143 (SIGTERM: 128 + 15), the shells' statuses for
those signals, instead of a traceback.

The handler belongs to the process that installed it: a worker forked from it (a
multiprocessing pool) that receives SIGTERM restores the default action and terminates as if
no handler were there.  Outside the main thread, or inside an already wrapped ``main`` (the
forwarded commands of ``perceptron-oracle``), the wrapper adds nothing: the outer one reports.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import ParamSpec

#: The exit statuses: 128 + the signal's number.
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM

_P = ParamSpec("_P")

#: How many wrapped mains are running (an inner one leaves the interrupt to the outer).
_depth = 0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised by the handler :func:`one_line` installs."""


def _terminate(signum: int, frame: FrameType | None, *, owner: int) -> None:
    if os.getpid() != owner:  # a forked worker: the default action (terminate)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise Terminated()


def one_line(program: str) -> Callable[[Callable[_P, int]], Callable[_P, int]]:
    """Decorate a ``main`` returning an exit status (module docstring)."""

    def decorate(main: Callable[_P, int]) -> Callable[_P, int]:
        @functools.wraps(main)
        def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> int:
            global _depth
            if _depth or threading.current_thread() is not threading.main_thread():
                return main(*args, **kwargs)
            handler = functools.partial(_terminate, owner=os.getpid())
            installed = signal.signal(signal.SIGTERM, handler)
            interrupt = signal.getsignal(signal.SIGINT)
            _depth += 1
            try:
                return main(*args, **kwargs)
            except KeyboardInterrupt as exc:
                # a second signal while the line is written would be a traceback
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                terminated = isinstance(exc, Terminated)
                print(f"{program}: {'terminated' if terminated else 'interrupted'}",
                      file=sys.stderr, flush=True)
                return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
            finally:
                _depth -= 1
                signal.signal(signal.SIGTERM, installed)
                signal.signal(signal.SIGINT, interrupt)

        return wrapped

    return decorate
