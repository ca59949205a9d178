"""The trusted side's view of the prepared assets: the world and the judge built on it."""

from __future__ import annotations

import json
from pathlib import Path

from rebench.environments.nanogpt_chat_rl.fluency import FluencyModel
from rebench.environments.nanogpt_chat_rl.judge import Judge, OfflineJudge, endpoint_from_env
from rebench.environments.nanogpt_chat_rl.tasks import KnowledgeBase


def load_judge(assets_dir: Path) -> Judge:
    """The endpoint judge when REBENCH_CHAT_JUDGE_BASE_URL is set, else the offline judge
    over the prepared world and fluency LM."""
    endpoint = endpoint_from_env()
    if endpoint is not None:
        return endpoint
    protected = assets_dir / "protected"
    kb = KnowledgeBase.from_json(json.loads((protected / "world.json").read_text()))
    return OfflineJudge(kb, FluencyModel.load(protected / "fluency.npz"))
