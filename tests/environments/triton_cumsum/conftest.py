"""Shared fixtures for triton_cumsum tests: a prepared cpu profile, a way to score any
solution file officially, and anchors calibrated on this machine once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from env_bench import EnvBench
from triton_cumsum_helpers import CpuEnv, Scorer

from rebench.core.discovery import load_spec
from rebench.core.normalize import Anchors
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
def score_solution(
    cpu_env: CpuEnv, tmp_path_factory: pytest.TempPathFactory
) -> Scorer:
    """Score a named solution ("starting", "reference", "expert") or a solution file."""

    def run(solution: str | Path) -> ScoreResult:
        tmp = tmp_path_factory.mktemp("tc-score")
        workspace = tmp / "workspace"
        if isinstance(solution, Path):
            workspace.mkdir()
            (workspace / "solution.py").write_text(solution.read_text())
        else:
            materialize_solution(cpu_env.spec, cpu_env.profile, solution, workspace,
                                 Isolation.LOCAL)
        snapshot = tmp / "snapshot"
        snapshot_solution(cpu_env.spec, workspace, snapshot)
        return official_score(cpu_env.spec, cpu_env.profile, snapshot, cpu_env.isolation)

    return run


@pytest.fixture(scope="session")
def local_anchors(env_bench: EnvBench) -> Anchors:
    """Start and reference timed on this machine, the better of two scorings each (on a
    shared machine interference only ever slows a run down, and the cpu raw score is itself
    the fastest of the timed calls): the same anchors the generic golden test uses
    (tests/env_bench.py, GOLDEN.anchor_repeats), measured once per session."""
    return env_bench.anchors("triton_cumsum")
