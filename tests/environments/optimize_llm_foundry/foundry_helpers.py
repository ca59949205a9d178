"""Shared types for the optimize_llm_foundry tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.sandbox import Isolation

CHEATS = Path(__file__).parent / "cheats"


@dataclass(frozen=True)
class CpuEnv:
    """The prepared cpu profile of optimize_llm_foundry."""

    spec: EnvironmentSpec
    profile: Profile
    isolation: Isolation


# Score a named solution ("starting", "reference"), or the starting solution with a cheat's
# finetune.sh in place; extra files (relative path -> bytes) are added to the workspace.
Scorer = Callable[..., ScoreResult]
