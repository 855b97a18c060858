"""The worked outside example: a JavaScript implementation of the Perceptron, HO_p(c) and the
p-norm Perceptron (linear kernel) passes ``verify --results``."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from perceptron_oracle.cli import main

ROOT = pathlib.Path(__file__).parent.parent


@pytest.mark.skipif(shutil.which("node") is None, reason="node (JavaScript) is not installed")
def test_javascript_implementation_passes_verify(tmp_path, capsys):
    done = subprocess.run(["node", str(ROOT / "examples" / "javascript" / "perceptron.mjs"),
                           str(ROOT / "perceptron_oracle" / "conformance_data"), str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert main(["verify", "--results", str(tmp_path), "--algorithm", "perceptron",
                 "--quiet"]) == 0
    assert main(["verify", "--results", str(tmp_path), "--algorithm", "higher_order",
                 "--algorithm", "pnorm_perceptron", "--kernel", "linear", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.count(" 0 failed") == 2 and "golden set" in out
    written = {path.name.split("-")[0] for path in tmp_path.glob("*.json")}
    assert written == {"perceptron", "higher_order"}, written
