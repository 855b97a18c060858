"""The worked outside example: a JavaScript implementation passes ``verify --results``."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from perceptron_oracle.cli import main

ROOT = pathlib.Path(__file__).parent.parent


@pytest.mark.skipif(shutil.which("node") is None, reason="node (JavaScript) is not installed")
def test_javascript_perceptron_passes_verify(tmp_path, capsys):
    done = subprocess.run(["node", str(ROOT / "examples" / "javascript" / "perceptron.mjs"),
                           str(ROOT / "conformance_data"), str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert main(["verify", "--results", str(tmp_path), "--algorithm", "perceptron",
                 "--quiet"]) == 0
    assert " 0 failed" in capsys.readouterr().out
