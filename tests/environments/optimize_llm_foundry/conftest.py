"""Shared fixtures: one prepared cpu profile per test session, a way to score a named
solution or a cheat officially, and anchors measured on this machine once per session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from env_bench import EnvBench
from foundry_helpers import CpuEnv, Scorer

from rebench.core.discovery import load_spec
from rebench.core.normalize import Anchors
from rebench.core.score import ScoreResult
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation, default_isolation


@pytest.fixture(scope="session")
def cpu_env(rebench_dirs: Path) -> CpuEnv:
    spec = load_spec("optimize_llm_foundry")
    profile = spec.profile("cpu")
    prepare_environment(spec, profile)
    return CpuEnv(spec, profile, default_isolation())


@pytest.fixture(scope="session")
def score_solution(cpu_env: CpuEnv, tmp_path_factory: pytest.TempPathFactory) -> Scorer:
    """Score "starting", "reference", or a cheat (a path to a finetune.sh replacing the
    one of solution `base`), with optional extra workspace files."""

    def run(solution: str | Path, extra: dict[str, bytes] | None = None,
            base: str = "starting") -> ScoreResult:
        tmp = tmp_path_factory.mktemp("foundry-score")
        workspace = tmp / "workspace"
        name = solution if isinstance(solution, str) else base
        materialize_solution(cpu_env.spec, cpu_env.profile, name, workspace, Isolation.LOCAL)
        if isinstance(solution, Path):
            (workspace / "finetune.sh").write_bytes(solution.read_bytes())
        for rel, data in (extra or {}).items():
            (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            (workspace / rel).write_bytes(data)
        snapshot = tmp / "snapshot"
        try:
            snapshot_solution(cpu_env.spec, workspace, snapshot)
            return official_score(cpu_env.spec, cpu_env.profile, snapshot,
                                  cpu_env.isolation)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # the suite's disk

    return run


@pytest.fixture(scope="session")
def start_result(env_bench: EnvBench) -> ScoreResult:
    return env_bench.anchor_results("optimize_llm_foundry")[0][0]


@pytest.fixture(scope="session")
def reference_result(env_bench: EnvBench) -> ScoreResult:
    return env_bench.anchor_results("optimize_llm_foundry")[1][0]


@pytest.fixture(scope="session")
def local_anchors(env_bench: EnvBench) -> Anchors:
    """Start and reference scored once each on this machine, in this session (a shared
    machine's load changes both alike): the anchors the generic golden test uses too
    (tests/env_bench.py)."""
    return env_bench.anchors("optimize_llm_foundry")
