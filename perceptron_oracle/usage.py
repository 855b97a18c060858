"""The command line's argument parser class, shared by ``cli`` and the commands it forwards
to (``experiment``, ``fragility``, ``peers``, ``long-runs``, the benchmarks): a module below
all of them, so none imports ``cli`` (CONTRACT.md: bad input gets one line, exit status 2).
"""

from __future__ import annotations

import argparse
from typing import Any

from .errors import OracleInputError

__all__ = ["OneLineParser"]


class OneLineParser(argparse.ArgumentParser):
    """argparse with its usage errors as OracleInputError: ``cli.main`` prints one line
    naming the problem and exits 2 (the forwarded commands' parsers too)."""

    def error(self, message: str) -> Any:
        raise OracleInputError(message)
