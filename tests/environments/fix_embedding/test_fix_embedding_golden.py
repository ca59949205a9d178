"""The prepared models are sound and a second prepare keeps them. The golden bands (the
start about 0, the reference about 1) are declared in degenerate.py (GOLDEN) and checked by
the generic test, tests/environments/test_golden_all_environments.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rebench.core.spec import EnvironmentSpec, Profile


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
