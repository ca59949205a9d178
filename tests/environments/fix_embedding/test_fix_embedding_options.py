"""`--corpus` and `--base-model`: a user's GPT-2-tokenized corpus and weights replace the
offline defaults (tiny shapes here so the test is fast)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from rebench.assets.gpt import GPTConfig
from rebench.assets.train import new_model
from rebench.assets.weights import save_state
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.prepare import prepare_environment
from rebench.sandbox import Isolation
from rebench.scoring.context import ScoringContext


def _tiny(profile: Profile) -> Profile:
    params = {
        **profile.params, "block_size": 32, "batch_size": 4, "eval_windows": 16,
        "small_n_layer": 1, "small_n_head": 1, "small_n_embd": 16, "small_steps": 3,
    }
    return dataclasses.replace(profile, name="tiny-options", params=params)


def test_user_corpus_and_base_model(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, tmp_path: Path
) -> None:
    corpus = tmp_path / "owt"
    corpus.mkdir()
    rng = np.random.default_rng(0)
    rng.integers(0, 50257, 40_000).astype("<u2").tofile(corpus / "train.bin")
    rng.integers(0, 50257, 24_000).astype("<u2").tofile(corpus / "val.bin")
    base_cfg = GPTConfig(vocab_size=50257, block_size=64, n_layer=1, n_head=1, n_embd=64)
    save_state(new_model(base_cfg, seed=0), tmp_path / "base.pth")

    profile = _tiny(fe_cpu)
    options = {"corpus": str(corpus), "base_model": str(tmp_path / "base.pth")}
    assets = prepare_environment(fe_spec, profile, options)
    record = json.loads((assets / "protected" / "eval.json").read_text())
    assert record["config"]["n_embd"] == 64 and record["config"]["block_size"] == 32
    assert record["tokenizer"] == "gpt2"
    # With user assets, c follows the paper's ratio to the measured clean loss.
    assert record["loss_floor"] == pytest.approx(0.59 * record["losses"]["clean"], abs=1e-3)
    config = json.loads((assets / "public" / "config.json").read_text())
    assert config["vocab_size"] == 50257 and not (assets / "public" / "tokenizer.json").exists()

    from rebench.environments.fix_embedding import scoring

    solution = tmp_path / "solution"
    solution.mkdir()
    (solution / "fixed_model.pth").write_bytes((assets / "public" / "large_model.pth").read_bytes())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = scoring.score(ScoringContext(fe_spec, profile, solution, assets, scratch,
                                          Isolation.LOCAL))
    assert result.valid
    assert math.isclose(result.details["loss"], record["losses"]["corrupted"], rel_tol=1e-6)


def test_instructions_render_for_every_profile(fe_spec: EnvironmentSpec) -> None:
    from rebench.core.instructions import leftovers, render_instructions

    for profile in fe_spec.profiles.values():
        rendered = render_instructions(fe_spec, profile)
        assert leftovers(rendered) == []
        assert str(profile.typed.loss_floor) in rendered
        assert f"about {profile.instruction_text['clean_loss']} (nats" in rendered


def test_prepare_prints_a_line_per_step_when_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a log (no terminal) the live bar shows nothing, so each step is printed."""
    from click.testing import CliRunner

    from rebench import cli
    from rebench.harness import prepare as harness_prepare

    def fake_prepare(spec, profile, options, progress, force):  # type: ignore[no-untyped-def]
        progress("tokenizing the train, validation and test splits", 0.1)
        progress("training the large model: step 60/300", 0.4)
        return Path("/nowhere")

    monkeypatch.setattr(harness_prepare, "prepare_environment", fake_prepare)
    result = CliRunner().invoke(cli.main, ["prepare", "fix_embedding"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "fix_embedding: tokenizing the train, validation and test splits" in text
    assert "fix_embedding: training the large model: step 60/300" in text
