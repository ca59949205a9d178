"""Shared fixtures: the cpu profile prepared once per session (in the session's cache), and
the scorer called directly on an answer (it runs no solution code: answer.json is data)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.prepare import prepare_environment
from rebench.sandbox import Isolation
from rebench.scoring import ScoreKind, ScoringContext

ENV = "small_scaling_law"
ScoreFn = Callable[..., ScoreResult]


@pytest.fixture(scope="session")
def ssl_spec() -> EnvironmentSpec:
    return load_spec(ENV)


@pytest.fixture(scope="session")
def ssl_cpu(ssl_spec: EnvironmentSpec) -> Profile:
    return ssl_spec.profile("cpu")


@pytest.fixture(scope="session")
def ssl_assets(ssl_spec: EnvironmentSpec, ssl_cpu: Profile) -> Path:
    """The prepared cpu assets (the shared corpus shards, then seconds), once per session."""
    return prepare_environment(ssl_spec, ssl_cpu)


@pytest.fixture
def score_folder(ssl_spec: EnvironmentSpec, ssl_cpu: Profile, ssl_assets: Path,
                 tmp_path: Path) -> Callable[[Path, ScoreKind], ScoreResult]:
    """The environment's scorer on a solution folder, in this process."""
    from rebench.environments.small_scaling_law import scoring

    def run(solution: Path, kind: ScoreKind = ScoreKind.FINAL) -> ScoreResult:
        scratch = tmp_path / "scratch"
        scratch.mkdir(exist_ok=True)
        ctx = ScoringContext(ssl_spec, ssl_cpu, solution, ssl_assets, scratch,
                             Isolation.LOCAL, kind=kind)
        return scoring.score(ctx)

    return run


@pytest.fixture
def score_answer(score_folder: Callable[[Path, ScoreKind], ScoreResult],
                 tmp_path: Path) -> ScoreFn:
    """Score answer.json holding `text` (a string, written as is) or `answer` (JSON)."""
    counter = iter(range(1000))

    def run(answer: object, kind: ScoreKind = ScoreKind.FINAL) -> ScoreResult:
        folder = tmp_path / f"solution{next(counter)}"
        folder.mkdir()
        text = answer if isinstance(answer, str) else json.dumps(answer)
        (folder / "answer.json").write_text(text)
        return score_folder(folder, kind)

    return run


@pytest.fixture
def replay_agent(tmp_path: Path) -> Callable[[list[dict[str, object]]], str]:
    """A replay agent's name for a list of actions."""

    def make(actions: list[dict[str, object]]) -> str:
        path = tmp_path / "actions.jsonl"
        path.write_text("".join(json.dumps(a) + "\n" for a in actions))
        return f"replay:{path}"

    return make
