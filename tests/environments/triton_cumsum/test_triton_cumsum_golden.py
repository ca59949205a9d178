"""Golden tests (cpu profile): with anchors calibrated on this machine, a fresh scoring of
the starting solution normalizes to 0 and the reference to about 1; the expert beats the
reference; the spec and instructions are sound."""

from __future__ import annotations

import math

import pytest
from triton_cumsum_helpers import CpuEnv, Scorer

from rebench.core.discovery import validate_environment
from rebench.core.instructions import render_instructions
from rebench.core.normalize import Anchors, normalize
from rebench.core.spec import Direction


def test_environment_folder_is_complete() -> None:
    assert validate_environment("triton_cumsum") == []


def test_instructions_fill_every_placeholder(cpu_env: CpuEnv) -> None:
    for name in ("cpu", "gpu"):
        text = render_instructions(cpu_env.spec, cpu_env.spec.profile(name))
        assert "{" not in text, text
        assert "prefix_sum" in text


def test_default_anchors_keep_the_papers_direction(cpu_env: CpuEnv) -> None:
    spec = cpu_env.spec
    assert spec.direction is Direction.LOWER
    assert spec.paper_reference_raw is not None and spec.paper_starting_raw is not None
    assert spec.paper_reference_raw < spec.paper_starting_raw
    for profile in spec.profiles.values():
        assert profile.reference_raw < profile.starting_raw


def test_starting_normalizes_to_zero(score_solution: Scorer, local_anchors: Anchors,
                                     cpu_env: CpuEnv) -> None:
    result = score_solution("starting")
    assert result.valid, result.message
    assert abs(normalize(result.raw, local_anchors, cpu_env.spec.direction)) <= 0.05
    assert result.message["ms"] > 0 and math.isclose(math.log(result.message["ms"]),
                                                     result.raw, abs_tol=1e-3)


def test_reference_normalizes_to_one(score_solution: Scorer, local_anchors: Anchors,
                                     cpu_env: CpuEnv) -> None:
    result = score_solution("reference")
    assert result.valid, result.message
    assert 0.8 <= normalize(result.raw, local_anchors, cpu_env.spec.direction) <= 1.3


@pytest.mark.slow
def test_expert_is_valid_and_far_ahead_of_the_start(score_solution: Scorer,
                                                    local_anchors: Anchors,
                                                    cpu_env: CpuEnv) -> None:
    result = score_solution("expert")
    assert result.valid, result.message
    assert normalize(result.raw, local_anchors, cpu_env.spec.direction) >= 0.8
