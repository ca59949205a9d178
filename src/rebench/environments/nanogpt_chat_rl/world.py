"""The trusted side's view of the prepared assets: the world and the judge built on it."""

from __future__ import annotations

import json
from pathlib import Path

from rebench.core.paths import Endpoint
from rebench.environments.nanogpt_chat_rl.fluency import FluencyModel
from rebench.environments.nanogpt_chat_rl.judge import EndpointJudge, Judge, OfflineJudge
from rebench.environments.nanogpt_chat_rl.tasks import KnowledgeBase


def load_judge(assets_dir: Path, endpoint: Endpoint | None) -> Judge:
    """The endpoint judge when one is configured (judge.judge_endpoint), else the offline
    judge over the prepared world and fluency LM."""
    if endpoint is not None:
        return EndpointJudge(endpoint.base_url, endpoint.model, endpoint.api_key)
    protected = assets_dir / "protected"
    kb = KnowledgeBase.from_json(json.loads((protected / "world.json").read_text()))
    return OfflineJudge(kb, FluencyModel.load(protected / "fluency.npz"))
