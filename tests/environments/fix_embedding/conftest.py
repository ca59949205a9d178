"""Shared fixtures: the cpu profile prepared once per session (in the session's cache)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.prepare import prepare_environment
from rebench.sandbox import Isolation
from rebench.scoring.context import ScoringContext


@pytest.fixture(scope="session")
def fe_spec() -> EnvironmentSpec:
    return load_spec("fix_embedding")


@pytest.fixture(scope="session")
def fe_cpu(fe_spec: EnvironmentSpec) -> Profile:
    return fe_spec.profile("cpu")


@pytest.fixture(scope="session")
def fe_assets(fe_spec: EnvironmentSpec, fe_cpu: Profile) -> Path:
    """The prepared cpu assets (about 1-2 minutes on 2 cores, once per session)."""
    return prepare_environment(fe_spec, fe_cpu)


@pytest.fixture
def fe_score(
    fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path
) -> Callable[[Path], ScoreResult]:
    """The environment's scorer called directly on a solution folder. It runs no solution
    code, so calling it in the test process is the same computation as an official score,
    minus the process start."""
    from rebench.environments.fix_embedding import scoring

    def run(solution: Path) -> ScoreResult:
        scratch = tmp_path / "scratch"
        scratch.mkdir(exist_ok=True)
        ctx = ScoringContext(fe_spec, fe_cpu, solution, fe_assets, scratch, Isolation.LOCAL)
        return scoring.score(ctx)

    return run
