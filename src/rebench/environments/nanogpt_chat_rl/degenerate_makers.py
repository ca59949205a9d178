"""The pieces nanogpt_chat_rl's degenerate policies are made of (degenerate.py,
degenerate_training.py): the public base model loaded and a student saved as a
submission, the public training prompts, the base fine-tuned on (prompt, response) pairs
and made nearly greedy, and a made submission's sampled responses."""

from __future__ import annotations

import json

import torch

from rebench.assets.gpt import GPT, GPTConfig
from rebench.environments.nanogpt_chat_rl import chat
from rebench.scoring.declarations import PolicyContext

SOLUTION = "model.pth"
# The response policies hold on both profiles (benchmarks/chat_rl_degenerate.py runs the
# gpu ones on a GPU machine; the generic test runs the cpu and test ones).
BOTH = ("cpu", "gpu")
# Policies whose outcome does not depend on the cpu size run on the small test profile
# (issue 28: environment.py's TEST, a 2-layer student and 400 held-out prompts; on cpu
# each took 8-37 s of the last full suite's test time). Their defence at the set level (every
# response forfeits when the policy ignores its prompts, relevance.py) is checked at the
# cpu size for the exact phrases, at the level of responses, against the cpu opponents
# (tests/environments/nanogpt_chat_rl/test_chat_degenerate.py).
SMALL = ("test", "gpu")
# Logits multiplied by this: temperature 1 behaves like 1/SHARPEN (nearly greedy).
SHARPEN = 8.0


def base_model(ctx: PolicyContext) -> GPT:
    config = json.loads((ctx.public_dir / "config.json").read_text())
    model = GPT(GPTConfig.from_json(config["model"]))
    model.load_state_dict(torch.load(ctx.public_dir / "base_model.pth", map_location="cpu",
                                     weights_only=True))
    return model


def save(model: GPT, ctx: PolicyContext) -> None:
    torch.save({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
               ctx.workspace / SOLUTION)


def training_prompts(ctx: PolicyContext) -> list[str]:
    lines = (ctx.public_dir / "prompts.jsonl").read_text().splitlines()
    return [json.loads(line)["prompt"] for line in lines]


def finetuned(ctx: PolicyContext, pairs: list[tuple[str, str]], steps: int) -> None:
    """The base fine-tuned on `pairs` (one thread, seed 0), made nearly greedy, saved."""
    torch.set_num_threads(1)
    model = base_model(ctx)
    chat.finetune(model, pairs, steps=steps, lr=3e-3, batch_size=32, seed=0,
                  device=torch.device("cpu"))
    with torch.no_grad():
        model.transformer.ln_f.weight.mul_(SHARPEN)
        model.transformer.ln_f.bias.mul_(SHARPEN)
    save(model, ctx)


def responses(ctx: PolicyContext, n: int = 200) -> tuple[list[str], list[str]]:
    """The first `n` training prompts and the made submission's responses to them,
    sampled as the scorer samples (seed 0)."""
    config = json.loads((ctx.public_dir / "config.json").read_text())
    model = GPT(GPTConfig.from_json(config["model"]))
    model.load_state_dict(torch.load(ctx.workspace / SOLUTION, map_location="cpu",
                                     weights_only=True))
    model.eval()
    asked = training_prompts(ctx)[:n]
    return asked, chat.sample(model, asked, generator=torch.Generator().manual_seed(0))
