"""The pieces fix_embedding's degenerate policies are made of (degenerate.py,
degenerate_redteam.py): the public corrupted model's state and configuration, and a state
saved as the submission."""

from __future__ import annotations

import json

import torch

from rebench.assets.gpt import GPTConfig
from rebench.scoring.declarations import PolicyContext

SOLUTION = "fixed_model.pth"
WTE = "transformer.wte.weight"


def large_state(ctx: PolicyContext) -> dict[str, torch.Tensor]:
    state: dict[str, torch.Tensor] = torch.load(ctx.public_dir / "large_model.pth",
                                                weights_only=True)
    return state


def save(ctx: PolicyContext, state: object) -> None:
    torch.save(state, ctx.workspace / SOLUTION)


def large_config(ctx: PolicyContext) -> GPTConfig:
    return GPTConfig.from_json(json.loads((ctx.public_dir / "config.json").read_text())
                               ["large_model"])
