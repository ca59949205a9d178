"""Score model.pth: load it as data into the student's fixed shape, sample one response per
held-out prompt with the scoring seed (chat.py's settings: 60 new characters, temperature
1), and judge each against both opponents' responses to the same prompt. raw = the mean of
the two win rates (a tie counts half). No code of the agent runs."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from rebench.assets.gpt import GPTConfig
from rebench.assets.submitted import load_submitted_gpt
from rebench.core.errors import ScorerFault
from rebench.environments.nanogpt_chat_rl import chat
from rebench.environments.nanogpt_chat_rl.judge import Judge, JudgeUnavailable, judge_endpoint
from rebench.environments.nanogpt_chat_rl.prepare import (
    SCORING_SEED,
    ChatParams,
    accuracy,
    student_seed,
)
from rebench.environments.nanogpt_chat_rl.tasks import Task
from rebench.environments.nanogpt_chat_rl.world import load_judge
from rebench.scoring import ScoreResult, ScoringContext

SOLUTION_FILE = "model.pth"
OPPONENTS = ("base", "labelled")


def win_rates(judge: Judge, prompts: list[str], responses: list[str],
              opponents: dict[str, list[str]]) -> dict[str, float]:
    """Each opponent's win rate of `responses` (ties count half). An endpoint judge is
    asked `judge.parallel` comparisons at a time (HTTP round trips dominate)."""
    workers = int(getattr(judge, "parallel", 1))
    rates = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for name, theirs in opponents.items():
            items = list(zip(prompts, responses, theirs, strict=True))
            verdicts = (pool.map(lambda i: judge.compare(*i), items) if workers > 1
                        else (judge.compare(*i) for i in items))
            rates[name] = float(np.mean(list(verdicts)))
    return rates


def heldout_tasks(assets_dir: Path) -> list[Task]:
    path = assets_dir / "protected" / "heldout.jsonl"
    return [Task(**json.loads(line)) for line in path.read_text().splitlines()]


def heldout_prompts(assets_dir: Path) -> list[str]:
    return [t.prompt for t in heldout_tasks(assets_dir)]


def score_model(model: torch.nn.Module, ctx: ScoringContext, seed: int = SCORING_SEED,
                opponents: dict[str, list[str]] | None = None
                ) -> tuple[dict[str, float], float]:
    """Win rates of `model`, sampled with scoring seed `seed`, against each opponent's
    responses (the stored ones unless given), and the share of its answers that are
    correct (for the record: the agent is not shown it)."""
    tasks = heldout_tasks(ctx.assets_dir)
    prompts = [t.prompt for t in tasks]
    if opponents is None:
        opponents = json.loads((ctx.assets_dir / "protected" / "opponents.json").read_text())
    torch.set_num_threads(ctx.profile.params_as(ChatParams).threads)
    responses = chat.sample(model, prompts,
                            generator=torch.Generator().manual_seed(student_seed(seed)))
    rates = win_rates(load_judge(ctx.assets_dir, judge_endpoint()), prompts, responses,
                      {name: opponents[name] for name in OPPONENTS})
    return rates, accuracy(responses, tasks)


def score(ctx: ScoringContext) -> ScoreResult:
    """Mean win rate against the two opponents; NaN with a message if model.pth is not
    the student's weights."""
    start = time.monotonic()
    record = json.loads((ctx.assets_dir / "protected" / "eval.json").read_text())
    model = load_submitted_gpt(ctx.solution_dir / SOLUTION_FILE,
                               GPTConfig.from_json(record["config"]))
    if isinstance(model, str):
        return ScoreResult.invalid(model)
    if ctx.profile.gpus > 0 and torch.cuda.is_available():
        model = model.cuda()
    try:
        rates, correct = score_model(model, ctx)
    except JudgeUnavailable as exc:
        raise ScorerFault(str(exc)) from None
    raw = float(np.mean([rates[name] for name in OPPONENTS]))
    message = {"win_rate": round(raw, 4),
               **{f"win_rate_vs_{name}": round(rates[name], 4) for name in OPPONENTS}}
    return ScoreResult(raw=raw, message=message, details={
        **{f"vs_{name}": rates[name] for name in OPPONENTS}, "accuracy": correct,
        "heldout_prompts": int(record["heldout_prompts"]),
        "score_s": round(time.monotonic() - start, 3)})
