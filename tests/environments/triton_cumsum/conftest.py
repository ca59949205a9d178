"""Shared fixtures for triton_cumsum tests: the cpu and the small test profile prepared,
and a way to score any solution file officially on either. (The start and the reference
timed on this machine are the session's: tests/env_bench.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from triton_cumsum_helpers import CpuEnv, Scorer

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation, default_isolation


@pytest.fixture(scope="session")
def cpu_env(rebench_dirs: Path) -> CpuEnv:
    spec = load_spec("triton_cumsum")
    profile = spec.profile("cpu")
    prepare_environment(spec, profile)
    return CpuEnv(spec, profile, default_isolation())


@pytest.fixture(scope="session")
def small_env(rebench_dirs: Path) -> CpuEnv:
    """The small `test` profile (N = 1e6, 3 s per call), prepared: for what does not depend
    on the cpu profile's size (environment.py, TEST)."""
    spec = load_spec("triton_cumsum")
    profile = spec.profile("test")
    prepare_environment(spec, profile)
    return CpuEnv(spec, profile, default_isolation())


def _scorer(env: CpuEnv, tmp_path_factory: pytest.TempPathFactory) -> Scorer:
    def run(solution: str | Path) -> ScoreResult:
        tmp = tmp_path_factory.mktemp("tc-score")
        workspace = tmp / "workspace"
        if isinstance(solution, Path):
            workspace.mkdir()
            (workspace / "solution.py").write_text(solution.read_text())
        else:
            materialize_solution(env.spec, env.profile, solution, workspace, Isolation.LOCAL)
        snapshot = tmp / "snapshot"
        try:
            snapshot_solution(env.spec, workspace, snapshot)
            return official_score(env.spec, env.profile, snapshot, env.isolation)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # the suite's disk

    return run


@pytest.fixture(scope="session")
def score_solution(
    cpu_env: CpuEnv, tmp_path_factory: pytest.TempPathFactory
) -> Scorer:
    """Score a named solution ("starting", "reference", "expert") or a solution file (cpu)."""
    return _scorer(cpu_env, tmp_path_factory)


@pytest.fixture(scope="session")
def score_small(small_env: CpuEnv, tmp_path_factory: pytest.TempPathFactory) -> Scorer:
    """The same on the small test profile."""
    return _scorer(small_env, tmp_path_factory)
