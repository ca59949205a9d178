"""Shared fixtures: a small offline judge (no prepare), the cpu profile prepared once per
session, and the scorer called directly on a solution folder (it runs no solution code:
model.pth is data)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.environments.nanogpt_chat_rl.fluency import FluencyModel
from rebench.environments.nanogpt_chat_rl.judge import OfflineJudge
from rebench.environments.nanogpt_chat_rl.tasks import KnowledgeBase, make_knowledge_base
from rebench.harness.prepare import prepare_environment
from rebench.sandbox import Isolation
from rebench.scoring import ScoreKind, ScoringContext

ENV = "nanogpt_chat_rl"
ScoreFn = Callable[[Path], ScoreResult]

# Plain English for a fluency model that trains in milliseconds.
PROSE = ("The river ran past the old mill and the green field. The king rode to the town "
         "with his men, and the people came out of their houses to see him. A small bird "
         "sang in the tree by the gate. She said that the bread was good and the water was "
         "cold. They walked along the road until the sun went down over the hills. ") * 40


@pytest.fixture(scope="session")
def kb() -> KnowledgeBase:
    return make_knowledge_base(np.random.default_rng(0), 10, 10)


@pytest.fixture(scope="session")
def fluency() -> FluencyModel:
    return FluencyModel.train(PROSE)


@pytest.fixture(scope="session")
def judge(kb: KnowledgeBase, fluency: FluencyModel) -> OfflineJudge:
    return OfflineJudge(kb, fluency)


@pytest.fixture(scope="session")
def chat_spec() -> EnvironmentSpec:
    return load_spec(ENV)


@pytest.fixture(scope="session")
def chat_cpu(chat_spec: EnvironmentSpec) -> Profile:
    return chat_spec.profile("cpu")


@pytest.fixture(scope="session")
def chat_assets(chat_spec: EnvironmentSpec, chat_cpu: Profile) -> Path:
    """The prepared cpu assets (a few minutes on 2 cores, once per session)."""
    return prepare_environment(chat_spec, chat_cpu)


@pytest.fixture
def chat_score(chat_spec: EnvironmentSpec, chat_cpu: Profile, chat_assets: Path,
               tmp_path: Path) -> ScoreFn:
    """The environment's scorer on a solution folder, in this process."""
    from rebench.environments.nanogpt_chat_rl import scoring

    def run(solution: Path) -> ScoreResult:
        scratch = tmp_path / "scratch"
        scratch.mkdir(exist_ok=True)
        ctx = ScoringContext(chat_spec, chat_cpu, solution, chat_assets, scratch,
                             Isolation.LOCAL, kind=ScoreKind.FINAL)
        return scoring.score(ctx)

    return run
