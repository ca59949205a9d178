"""Both pipelines produce the reference weights; the spec, instructions and assets are
sound. The golden bands (against anchors timed in this session, the start about 0, the
reference about 1) are declared in degenerate.py (GOLDEN) and checked by the generic test,
tests/environments/test_golden_all_environments.py."""

from __future__ import annotations

import math

import pytest
from foundry_helpers import CpuEnv

from rebench.core.discovery import validate_environment
from rebench.core.instructions import render_instructions
from rebench.core.paths import env_cache_dir
from rebench.core.score import ScoreResult
from rebench.core.spec import Direction
from rebench.environments.optimize_llm_foundry.environment import SPEC


def test_environment_folder_is_complete() -> None:
    assert validate_environment("optimize_llm_foundry") == []


def test_instructions_fill_every_placeholder() -> None:
    for profile in SPEC.profiles.values():
        text = render_instructions(SPEC, profile)
        assert "{" not in text.replace('{"prompt"', ""), text
        assert str(profile.typed.norm_threshold) in text


def test_anchors_keep_the_papers_direction_and_ratio() -> None:
    assert SPEC.direction is Direction.LOWER
    assert SPEC.paper_reference_raw is not None and SPEC.paper_starting_raw is not None
    assert SPEC.paper_reference_raw < SPEC.paper_starting_raw
    cpu = SPEC.profile("cpu")
    # the cpu reference must be at least twice as fast as the start
    assert cpu.starting_raw - cpu.reference_raw >= math.log(2)


def test_prepared_assets_are_split(cpu_env: CpuEnv) -> None:
    assets = env_cache_dir(cpu_env.spec.id, cpu_env.profile.name)
    public = {p.relative_to(assets / "public").as_posix()
              for p in (assets / "public").rglob("*") if p.is_file()}
    assert {"base_model/model.safetensors", "tokenizer.json", "finetune.yaml",
            "train_data.jsonl", "foundry/model.py"} <= public
    protected = assets / "protected"
    heldout = (protected / "heldout_data.jsonl").read_text()
    assert heldout != (assets / "public" / "train_data.jsonl").read_text()
    assert len(heldout.splitlines()) == cpu_env.profile.typed.rows
    assert (protected / "reference_model.safetensors").is_file()


def _check(result: ScoreResult, threshold: float) -> None:
    assert result.valid, result.message
    assert result.details["norm"] < threshold
    # details keep the seconds rounded to the millisecond
    assert math.isclose(math.log(result.details["seconds"]), result.raw, abs_tol=1e-4)


@pytest.mark.slow
def test_start_and_reference_train_the_reference_weights(
        start_result: ScoreResult, reference_result: ScoreResult, cpu_env: CpuEnv) -> None:
    threshold = cpu_env.profile.typed.norm_threshold
    _check(start_result, threshold)
    _check(reference_result, threshold)
