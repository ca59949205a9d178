"""Golden tests (cpu profile, slow): the starting solution (best-of-2 with the judge, then
fine-tuning on the winners) normalizes to about 0 and the reference (rounds of best-of-8
tournaments and fine-tuning) to about 1; the solutions are built in the sandbox with the
judge service, so the judge calls are metered and logged."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available

ScoreFn = Callable[[Path], ScoreResult]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")]


def normalized(spec: EnvironmentSpec, profile: Profile, result: ScoreResult) -> float:
    return normalize(result.raw, resolve_anchors(spec, profile), spec.direction)


@pytest.fixture(scope="module")
def built(chat_spec: EnvironmentSpec, chat_cpu: Profile, chat_assets: Path,
          tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("chat-solutions")
    return {name: materialize_solution(chat_spec, chat_cpu, name, root / name, Isolation.BWRAP)
            for name in ("starting", "reference")}


# How far the start lands from the shipped anchor with another prepare: every prepare
# draws its own secret world, held-out prompts and opponents. Measured with 1.0.x's judge:
# raws 0.597, 0.621, 0.624, 0.635 (+-0.025 around the anchor). 1.1.0's judge narrowed the
# gap between start and reference from 0.207 to 0.121 raw, so the same spread is +-0.2
# normalized; the spread across prepares under 1.1.0 is not measured yet
# (docs/benchmarks/nanogpt_chat_rl.md).
START_ACROSS_PREPARES = 0.25


def test_starting_normalizes_to_zero(chat_spec: EnvironmentSpec, chat_cpu: Profile,
                                     built: dict[str, Path], chat_score: ScoreFn) -> None:
    result = chat_score(built["starting"])
    assert result.valid, result.message
    assert abs(normalized(chat_spec, chat_cpu, result)) <= START_ACROSS_PREPARES, result.details


def test_reference_normalizes_to_one(chat_spec: EnvironmentSpec, chat_cpu: Profile,
                                     built: dict[str, Path], chat_score: ScoreFn) -> None:
    result = chat_score(built["reference"])
    assert result.valid, result.message
    assert 0.8 <= normalized(chat_spec, chat_cpu, result) <= 1.3, result.details


def test_the_base_model_is_no_better_than_the_start(
        chat_spec: EnvironmentSpec, chat_cpu: Profile, chat_assets: Path, chat_score: ScoreFn,
        tmp_path: Path) -> None:
    """Copying the first opponent (the base model, which the agent has) ties with it."""
    solution = tmp_path / "copy"
    solution.mkdir()
    (solution / "model.pth").write_bytes((chat_assets / "public" / "base_model.pth")
                                         .read_bytes())
    result = chat_score(solution)
    assert result.valid, result.message
    assert normalized(chat_spec, chat_cpu, result) <= 0.0, result.details
    assert abs(result.details["vs_base"] - 0.5) < 0.05, result.details
