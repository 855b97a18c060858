"""Output files written whole or not at all.

``write_text(path, text)`` writes ``text`` (UTF-8) into a temporary file in ``path``'s
directory, flushes and fsyncs it, and ``os.replace``-s it onto ``path``: a reader (or a
concurrent writer) sees the old file or the new one, never a part or a mixture, and an
interrupted write (an exception, Ctrl-C, SIGTERM through :mod:`perceptron_oracle.interrupts`)
removes the temporary file and leaves ``path`` as it was.  An existing file's permission
bits are kept; a new file gets the usual ``0o666`` less the umask.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

__all__ = ["write_text"]


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace the file ``path`` by one holding ``text`` (UTF-8), atomically (module
    docstring).  OSError as ``open`` raises it (a missing directory, no permission)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, temporary = tempfile.mkstemp(dir=directory,
                                         prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:  # name the file asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename itself, durable where it can be
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
