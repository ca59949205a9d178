"""Golden tests on the cpu profile: the starting solution normalizes to 0, the reference to
about 1 (official scoring in a fresh scorer process, local isolation)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import normalize
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation


def _official(spec: EnvironmentSpec, profile: Profile, name: str, tmp: Path) -> float:
    workspace = materialize_solution(spec, profile, name, tmp / "ws", Isolation.LOCAL)
    snapshot_solution(spec, workspace, tmp / "snap")
    result = official_score(spec, profile, tmp / "snap", Isolation.LOCAL)
    assert result.valid, result
    return normalize(result.raw, resolve_anchors(spec, profile), spec.direction)


def test_prepared_models_are_sound(fe_assets: Path, fe_cpu: Profile) -> None:
    record = json.loads((fe_assets / "protected" / "eval.json").read_text())
    losses = record["losses"]
    # The large model must be clearly better than the small one, or the task is trivial.
    assert losses["clean"] < losses["small"] - 0.15, losses
    assert losses["corrupted"] > losses["small"] + 1.0, losses
    # The start lands on the paper's corrupted-to-uniform ratio: never worse than uniform.
    from rebench.environments.fix_embedding.corruption import CORRUPTED_TO_UNIFORM

    assert losses["uniform"] == pytest.approx(math.log(2048))
    assert losses["corrupted"] == pytest.approx(CORRUPTED_TO_UNIFORM * losses["uniform"],
                                                abs=0.011)
    assert losses["corrupted"] < losses["uniform"]
    # c is about 0.59 x the clean loss, as in the paper.
    assert abs(record["loss_floor"] / losses["clean"] - 0.59) < 0.03
    assert record["loss_floor"] == fe_cpu.typed.loss_floor
    public = {p.name for p in (fe_assets / "public").rglob("*") if p.is_file()}
    assert {"large_model.pth", "small_correct_model.pth", "model.py", "config.json",
            "train.bin", "val.bin", "tokenizer.json"} <= public
    assert not public & {"test.bin", "secret.bin", "permutation.npy", "eval.json",
                         "corpus.json"}


def test_prepare_is_idempotent(fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path) -> None:
    from rebench.harness.prepare import prepare_environment

    before = (fe_assets / "prepared.json").read_text()
    secret = (fe_assets / "protected" / "secret.bin").read_bytes()
    messages: list[str] = []
    prepare_environment(fe_spec, fe_cpu, progress=lambda m, f: messages.append(m))
    # A second prepare keeps the secret and every asset (prepared.json holds checksums).
    assert (fe_assets / "prepared.json").read_text() == before
    assert (fe_assets / "protected" / "secret.bin").read_bytes() == secret
    assert "assets already prepared" in messages


def test_starting_solution_scores_zero(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> None:
    assert abs(_official(fe_spec, fe_cpu, "starting", tmp_path)) <= 0.05


@pytest.mark.slow
def test_reference_solution_scores_about_one(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path,
) -> None:
    # The recipe runs `python fix.py`; the sandbox puts this interpreter first on PATH, so
    # this passes with the venv not activated too (`.venv/bin/python -m pytest`).
    value = _official(fe_spec, fe_cpu, "reference", tmp_path)
    assert 0.8 <= value <= 1.3, value
    assert math.isfinite(value)
