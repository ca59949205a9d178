"""Shared fixtures: the cpu profile prepared once per session (in the session's cache), and
a scorer for any solution folder."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from mlm_cheats import CHEATS

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.prepare import prepare_environment
from rebench.sandbox import Isolation, default_isolation
from rebench.scoring.context import ScoringContext


@pytest.fixture(scope="session")
def mlm_spec() -> EnvironmentSpec:
    return load_spec("restricted_mlm")


@pytest.fixture(scope="session")
def mlm_cpu(mlm_spec: EnvironmentSpec) -> Profile:
    return mlm_spec.profile("cpu")


@pytest.fixture(scope="session")
def mlm_assets(mlm_spec: EnvironmentSpec, mlm_cpu: Profile) -> Path:
    """The prepared cpu assets (the shared BPE shards are built once per session)."""
    return prepare_environment(mlm_spec, mlm_cpu)


@pytest.fixture(scope="session")
def mlm_isolation() -> Isolation:
    return default_isolation()


@pytest.fixture(scope="session")
def mlm_score(
    mlm_spec: EnvironmentSpec, mlm_cpu: Profile, mlm_assets: Path, mlm_isolation: Isolation,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[Path], ScoreResult]:
    """The environment's scorer called in the test process on a solution folder; the
    solution's code runs only in the scorer's sandboxed child, as in an official score."""
    from rebench.environments.restricted_mlm import scoring

    def run(solution: Path) -> ScoreResult:
        scratch = tmp_path_factory.mktemp("mlm-scratch")
        ctx = ScoringContext(mlm_spec, mlm_cpu, solution, mlm_assets, scratch, mlm_isolation)
        try:
            return scoring.score(ctx)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)  # the suite's disk

    return run


@pytest.fixture
def cheat_solution(mlm_assets: Path, tmp_path: Path) -> Callable[[str], Path]:
    """A solution folder holding cheats/<name> as model.py, next to the public config."""

    def make(name: str) -> Path:
        folder = tmp_path / "solution"
        folder.mkdir()
        shutil.copyfile(CHEATS / name, folder / "model.py")
        shutil.copyfile(mlm_assets / "public" / "config.json", folder / "config.json")
        return folder

    return make
