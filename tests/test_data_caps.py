"""Data files that would cost more than they are worth are refused in one line, before the
cost: a CSV field over csv's limit, an .npz archive that inflates beyond data.py's caps (a
zip bomb), an archive of pickled objects, an .npy header that claims more than its member
holds."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from perceptron_oracle import cli, data
from perceptron_oracle.errors import DataError


def test_csv_field_over_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wide.csv"
    path.write_text("1.0,2.0,1\n1.0," + "1" * (csv.field_size_limit() + 1) + ",-1\n")
    assert cli.main(["run", "perceptron", "--data", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"perceptron-oracle: error: {path}:2: a field longer than "
                   f"{csv.field_size_limit()} characters (the limit)\n")


def test_csv_malformed_line(tmp_path: Path) -> None:
    path = tmp_path / "nul.csv"
    path.write_bytes(b"1.0,2.0,1\n1.0,\x00,-1\n")
    with pytest.raises(DataError, match=r"nul.csv:2: "):
        data.load(path)


def _bomb(path: Path, rows: int) -> None:
    """X: rows x 1024 zeros, compressed about a thousand times."""
    np.savez_compressed(path, X=np.zeros((rows, 1024)), y=np.ones(rows))


def test_npz_zip_bomb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bomb.npz"
    _bomb(path, 4096)  # 32 MiB of zeros in about 32 KiB
    assert path.stat().st_size < 2**20
    monkeypatch.setattr(data, "NPZ_RATIO_FLOOR", 2**20)  # the cap at this file's scale
    assert cli.main(["run", "perceptron", "--data", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perceptron-oracle: error: {path}: its arrays would inflate to "
                          "32 MiB, beyond the limit of ") and err.count("\n") == 1, err
    monkeypatch.setattr(data, "NPZ_RATIO_FLOOR", 256 * 2**20)
    monkeypatch.setattr(data, "NPZ_MAX_BYTES", 16 * 2**20)  # the absolute cap
    with pytest.raises(DataError, match="would inflate"):
        data.load(path)
    monkeypatch.setattr(data, "NPZ_MAX_BYTES", 2**30)
    assert data.load(path).X.shape == (4096, 1024)  # within both caps: read


def test_npz_ordinary_archive_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.npz"
    rng = np.random.default_rng(0)
    np.savez_compressed(path, X=rng.standard_normal((50, 4)), y=np.where(rng.random(50) < .5,
                                                                           1, -1))
    assert data.load(path).X.shape == (50, 4)


def _archive(path: Path, arrays: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, payload in arrays.items():
            archive.writestr(f"{name}.npy", payload)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def test_npz_object_arrays_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "pickle.npz"
    _archive(path, {"X": _npy(np.array([[1.0, None]], dtype=object)),
                    "y": _npy(np.array([1]))})
    with pytest.raises(DataError, match="array X holds Python objects"):
        data.load(path)


def test_npz_header_claiming_more_than_its_member(tmp_path: Path) -> None:
    path = tmp_path / "liar.npz"
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**6, 10**6)})
    _archive(path, {"X": header.getvalue() + b"\0" * 64, "y": _npy(np.array([1]))})
    with pytest.raises(DataError, match=r"array X declares 8000000000000 bytes of data but "
                                        r"its member holds \d+"):
        data.load(path)
