"""Golden tests on the cpu profile: the starting solution normalizes to 0, the reference to
about 1 (official scoring in a fresh scorer process; the model code runs only in the
scorer's sandboxed export child). Loss-based, so the machine's load does not matter."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation


def _official(spec: EnvironmentSpec, profile: Profile, name: str, tmp: Path,
              isolation: Isolation) -> tuple[float, ScoreResult]:
    workspace = materialize_solution(spec, profile, name, tmp / "ws", isolation)
    snapshot_solution(spec, workspace, tmp / "snap")
    assert not (tmp / "snap" / "data").exists()  # the token files are not part of a solution
    result = official_score(spec, profile, tmp / "snap", isolation)
    assert result.valid, result
    return normalize(result.raw, resolve_anchors(spec, profile), spec.direction), result


def test_prepared_assets(mlm_assets: Path) -> None:
    public = {p.relative_to(mlm_assets / "public").as_posix()
              for p in (mlm_assets / "public").rglob("*") if p.is_file()}
    assert public == {"data/train.bin", "data/val.bin", "tokenizer.json", "config.json",
                      "export_child.py", "graph_check.py", "graph_rules.py", "model.pt"}
    protected = mlm_assets / "protected"
    assert len((protected / "secret.bin").read_bytes()) == 32
    record = json.loads((protected / "eval.json").read_text())
    config = json.loads((mlm_assets / "public" / "config.json").read_text())
    assert record["mask_id"] == config["mask_id"] == 0  # the BPE's end-of-text id
    assert record["vocab_size"] == config["vocab_size"] == 2048
    # Enough held-out tokens for the evaluation windows, and no chunk shared with val.
    test = np.fromfile(protected / "test.bin", dtype=np.uint16)
    val = np.fromfile(mlm_assets / "public" / "data" / "val.bin", dtype=np.uint16)
    assert len(test) >= record["eval_batches"] * record["batch_size"] * record["seq_len"]
    chunk = 4096
    val_chunks = {val[i:i + chunk].tobytes() for i in range(0, len(val), chunk)}
    assert not any(test[i:i + chunk].tobytes() in val_chunks
                   for i in range(0, len(test), chunk))


def test_starting_solution_scores_zero(mlm_spec: EnvironmentSpec, mlm_cpu: Profile,
                                       mlm_assets: Path, mlm_isolation: Isolation,
                                       tmp_path: Path) -> None:
    value, result = _official(mlm_spec, mlm_cpu, "starting", tmp_path, mlm_isolation)
    assert abs(value) <= 0.05, (value, result.message)
    assert set(result.details["ops"]) == {
        "aten.embedding.default", "aten.linear.default", "aten.relu.default"}


@pytest.mark.slow
def test_reference_solution_scores_about_one(mlm_spec: EnvironmentSpec, mlm_cpu: Profile,
                                             mlm_assets: Path, mlm_isolation: Isolation,
                                             tmp_path: Path) -> None:
    value, result = _official(mlm_spec, mlm_cpu, "reference", tmp_path, mlm_isolation)
    assert 0.8 <= value <= 1.3, (value, result.message)
    assert "aten.as_strided.default" in result.details["ops"]
