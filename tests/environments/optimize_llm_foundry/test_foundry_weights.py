"""The scorer's reading of trained_model/ (fast, no prepared assets): data only, no links,
bounded size, exact tensors; and the distance that decides validity."""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch
from safetensors.torch import save_file

from rebench.environments.optimize_llm_foundry.weights import (
    WEIGHTS_FILE,
    expected_of,
    norm_distance,
    read_weights,
)

REFERENCE = {"a": torch.ones(4, 3), "b": torch.zeros(5)}


def _write(root: Path, state: dict[str, torch.Tensor]) -> Path:
    path = root / WEIGHTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path))
    return path


def test_reads_matching_weights(tmp_path: Path) -> None:
    _write(tmp_path, {"a": torch.ones(4, 3) * 2, "b": torch.zeros(5)})
    state = read_weights(tmp_path, expected_of(REFERENCE))
    assert isinstance(state, dict)
    assert math.isclose(norm_distance(state, REFERENCE), math.sqrt(12))


def test_distance_sums_per_tensor_norms() -> None:
    state = {"a": torch.ones(4, 3), "b": torch.full((5,), 2.0)}
    assert math.isclose(norm_distance(state, REFERENCE), math.sqrt(20))


def test_missing_file(tmp_path: Path) -> None:
    assert "was not written" in str(read_weights(tmp_path, expected_of(REFERENCE)))


def test_symlinked_file_and_folder_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    _write(real, dict(REFERENCE))
    (tmp_path / "trained_model").mkdir()
    os.symlink(real / WEIGHTS_FILE, tmp_path / WEIGHTS_FILE)
    assert "is a link" in str(read_weights(tmp_path, expected_of(REFERENCE)))
    other = tmp_path / "other"
    other.mkdir()
    os.symlink(real / "trained_model", other / "trained_model")
    assert "is a link" in str(read_weights(other, expected_of(REFERENCE)))


def test_wrong_names_shapes_dtypes_and_values(tmp_path: Path) -> None:
    cases = {
        "tensor names differ": {"a": torch.ones(4, 3)},
        "expected torch.float32 (4, 3)": {"a": torch.ones(4, 3).double(), "b": torch.zeros(5)},
        "expected torch.float32 (5,)": {"a": torch.ones(4, 3), "b": torch.zeros(6)},
        "NaN or infinite": {"a": torch.full((4, 3), math.nan), "b": torch.zeros(5)},
    }
    for message, state in cases.items():
        _write(tmp_path, state)
        assert message in str(read_weights(tmp_path, expected_of(REFERENCE))), message


def test_oversized_and_malformed_files(tmp_path: Path) -> None:
    path = tmp_path / WEIGHTS_FILE
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\0" * (2 << 20))
    assert "larger than" in str(read_weights(tmp_path, expected_of(REFERENCE)))
    path.write_bytes(b"not a safetensors file at all")
    assert "not a safetensors file" in str(read_weights(tmp_path, expected_of(REFERENCE)))
