"""The spec and instructions are sound. The golden bands (with anchors timed on this
machine, a fresh scoring of the start about 0, the reference about 1, the expert at least
0.8) are declared in degenerate.py (GOLDEN) and checked by the generic test,
tests/environments/test_golden_all_environments.py."""

from __future__ import annotations

from triton_cumsum_helpers import CpuEnv

from rebench.core.discovery import validate_environment
from rebench.core.instructions import render_instructions
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
