"""Types shared by the triton_cumsum tests and their fixtures (conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rebench.core.discovery import environment_dir
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.sandbox import Isolation

# The declared cheats (degenerate.py, CHEATS): the generic cheat test scores them; the
# controls of cheats/test_triton_cumsum_cheats.py show that four of them are real hacks.
CHEATS = environment_dir("triton_cumsum") / "cheats"

Scorer = Callable[[str | Path], ScoreResult]


@dataclass(frozen=True)
class CpuEnv:
    spec: EnvironmentSpec
    profile: Profile
    isolation: Isolation
