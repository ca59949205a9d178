"""The trusted side's view of the prepared assets: the world and the judge built on it."""

from __future__ import annotations

import json
from pathlib import Path

from rebench.core.paths import Endpoint
from rebench.environments.nanogpt_chat_rl.fluency import FluencyModel
from rebench.environments.nanogpt_chat_rl.judge import EndpointJudge, Judge, OfflineJudge
from rebench.environments.nanogpt_chat_rl.tasks import KnowledgeBase
from rebench.scoring.kit import protected_dir


def load_judge(assets_dir: Path, endpoint: Endpoint | None) -> Judge:
    """The endpoint judge when one is configured (judge.judge_endpoint), else the offline
    judge over the prepared world and fluency LM. The endpoint judge gets the world too
    when it is prepared (its trusted pre-screen knows the capitals then)."""
    if endpoint is not None:
        return EndpointJudge(endpoint.base_url, endpoint.model, endpoint.api_key,
                             kb=load_world(assets_dir))
    kb = load_world(assets_dir)
    if kb is None:
        raise FileNotFoundError(f"no prepared world in {assets_dir}")
    return OfflineJudge(kb, FluencyModel.load(protected_dir(assets_dir) / "fluency.npz"))


def load_world(assets_dir: Path) -> KnowledgeBase | None:
    """The prepared world (countries' capitals, people's trades), or None if absent."""
    path = protected_dir(assets_dir) / "world.json"
    if not path.is_file():
        return None
    return KnowledgeBase.from_json(json.loads(path.read_text()))
