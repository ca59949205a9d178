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
from rebench.environments.nanogpt_chat_rl.relevance import Dependence, prompt_dependence
from rebench.environments.nanogpt_chat_rl.tasks import KnowledgeBase, Task
from rebench.environments.nanogpt_chat_rl.world import load_judge, load_world
from rebench.scoring import ScoreResult, ScoringContext
from rebench.scoring.kit import protected_dir, torch_device

SOLUTION_FILE = "model.pth"
OPPONENTS = ("base", "labelled")


def win_rates(judge: Judge, prompts: list[str], responses: list[str],
              opponents: dict[str, list[str]], forfeit: list[bool] | None = None
              ) -> dict[str, float]:
    """Each opponent's win rate of `responses` (ties count half); a response marked in
    `forfeit` loses without being judged. An endpoint judge is asked `judge.parallel`
    comparisons at a time (HTTP round trips dominate)."""
    workers = int(getattr(judge, "parallel", 1))
    lost = forfeit if forfeit is not None else [False] * len(prompts)
    keep = [i for i, gone in enumerate(lost) if not gone]
    rates = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for name, theirs in opponents.items():
            if not len(theirs) == len(responses) == len(lost) == len(prompts):
                raise ValueError("one response (and one forfeit mark) per prompt")
            items = [(prompts[i], responses[i], theirs[i]) for i in keep]
            verdicts = (pool.map(lambda i: judge.compare(*i), items) if workers > 1
                        else (judge.compare(*i) for i in items))
            rates[name] = float(np.sum(list(verdicts))) / len(prompts)
    return rates


def heldout_tasks(assets_dir: Path) -> list[Task]:
    path = protected_dir(assets_dir) / "heldout.jsonl"
    return [Task(**json.loads(line)) for line in path.read_text().splitlines()]


def heldout_prompts(assets_dir: Path) -> list[str]:
    return [t.prompt for t in heldout_tasks(assets_dir)]


def judge_responses(assets_dir: Path, tasks: list[Task], responses: list[str],
                    opponents: dict[str, list[str]]) -> tuple[dict[str, float], Dependence]:
    """Win rates of `responses` (one per held-out task) against each opponent's, by the
    run's judge, with the degenerate ones forfeited (module docstring), and how they
    depend on their prompts."""
    return forfeiting_win_rates(load_judge(assets_dir, judge_endpoint()),
                                load_world(assets_dir), tasks, responses, opponents)


def forfeiting_win_rates(judge: Judge, kb: KnowledgeBase | None, tasks: list[Task],
                         responses: list[str], opponents: dict[str, list[str]]
                         ) -> tuple[dict[str, float], Dependence]:
    """`win_rates` against the OPPONENTS after the set-level look (relevance.py): the
    responses of a policy that ignores its prompts, or of its blind families, lose."""
    dependence = prompt_dependence(tasks, responses, kb)
    rates = win_rates(judge, [t.prompt for t in tasks], responses,
                      {name: opponents[name] for name in OPPONENTS},
                      forfeit=dependence.degenerate(tasks))
    return rates, dependence


def score_model(model: torch.nn.Module, ctx: ScoringContext, seed: int = SCORING_SEED,
                opponents: dict[str, list[str]] | None = None
                ) -> tuple[dict[str, float], float, Dependence]:
    """Win rates of `model`, sampled with scoring seed `seed`, against each opponent's
    responses (the stored ones unless given), the share of its answers that are correct
    and how its responses depend on their prompts (for the record: the agent is shown
    neither)."""
    tasks = heldout_tasks(ctx.assets_dir)
    prompts = [t.prompt for t in tasks]
    if opponents is None:
        opponents = json.loads((ctx.protected_dir / "opponents.json").read_text())
    params: ChatParams = ctx.profile.typed
    torch.set_num_threads(params.threads)
    responses = chat.sample(model, prompts,
                            generator=torch.Generator().manual_seed(student_seed(seed)))
    rates, dependence = judge_responses(ctx.assets_dir, tasks, responses, opponents)
    return rates, accuracy(responses, tasks), dependence


def score(ctx: ScoringContext) -> ScoreResult:
    """Mean win rate against the two opponents; NaN with a message if model.pth is not
    the student's weights."""
    start = time.monotonic()
    record = json.loads((ctx.protected_dir / "eval.json").read_text())
    model = load_submitted_gpt(ctx.solution_dir / SOLUTION_FILE,
                               GPTConfig.from_json(record["config"]))
    if isinstance(model, str):
        return ScoreResult.invalid(_reason(model), why=model)
    model = model.to(torch_device(ctx.profile))
    try:
        rates, correct, dependence = score_model(model, ctx)
    except JudgeUnavailable as exc:
        raise ScorerFault(str(exc)) from None
    raw = float(np.mean([rates[name] for name in OPPONENTS]))
    message = {"win_rate": round(raw, 3),
               **{f"win_rate_vs_{name}": round(rates[name], 3) for name in OPPONENTS}}
    return ScoreResult(raw=raw, message=message, details={
        **{f"vs_{name}": rates[name] for name in OPPONENTS}, "accuracy": correct,
        "prompt_dependence": dependence.to_json(),
        "heldout_prompts": int(record["heldout_prompts"]),
        "score_s": round(time.monotonic() - start, 3)})


def _reason(why: str) -> str:
    """The feedback reason (environment.FEEDBACK) for load_submitted_gpt's message, which
    is about the agent's own file (no code ran on held-out data) and stays private."""
    return "no_model" if why.startswith(f"{SOLUTION_FILE} not found") else "bad_weights"
