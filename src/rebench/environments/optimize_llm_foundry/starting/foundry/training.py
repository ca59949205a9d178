"""The model, the optimizer, the schedule and one optimizer step: shared by every stage."""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from foundry.config import FinetuneConfig
from foundry.model import GPT, GPTConfig


def load_base_model(cfg: FinetuneConfig) -> GPT:
    """The pretrained base model (fp32 weights) named in the config."""
    base = Path(cfg.base_model)
    model_cfg = GPTConfig.from_json(json.loads((base / "config.json").read_text()))
    model = GPT(model_cfg)
    model.load_state_dict(load_file(str(base / "model.safetensors")), strict=True)
    return model


def make_optimizer(model: GPT, cfg: FinetuneConfig) -> torch.optim.AdamW:
    """AdamW with decoupled weight decay on every parameter."""
    return torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                             weight_decay=cfg.weight_decay)


def lr_at(step: int, total_steps: int, cfg: FinetuneConfig) -> float:
    """Linear warm-up, then cosine decay to alpha_f x lr (LLM Foundry's cosine_with_warmup)."""
    if step < cfg.warmup_batches:
        return cfg.lr * (step + 1) / cfg.warmup_batches
    progress = (step - cfg.warmup_batches) / max(1, total_steps - cfg.warmup_batches)
    factor = cfg.alpha_f + (1 - cfg.alpha_f) * 0.5 * (1 + math.cos(math.pi * progress))
    return cfg.lr * factor


def summed_loss(model: GPT, inputs: torch.Tensor, labels: torch.Tensor,
                precision: str) -> torch.Tensor:
    """Sum of the next-token cross-entropy over labelled positions."""
    with torch.autocast(inputs.device.type, dtype=torch.bfloat16,
                        enabled=precision == "amp_bf16"):
        logits, _ = model(inputs)
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), labels.view(-1),
                           ignore_index=-100, reduction="sum")


def train_step(model: GPT, opt: torch.optim.Optimizer, inputs: torch.Tensor,
               labels: torch.Tensor, lr: float, cfg: FinetuneConfig) -> float:
    """One optimizer step on a global batch, in microbatches; returns the mean token loss."""
    for group in opt.param_groups:
        group["lr"] = lr
    n_tokens = int((labels != -100).sum())
    opt.zero_grad(set_to_none=True)
    total = 0.0
    micro = cfg.device_train_microbatch_size
    for i in range(0, inputs.shape[0], micro):
        loss = summed_loss(model, inputs[i:i + micro], labels[i:i + micro], cfg.precision)
        (loss / n_tokens).backward()
        total += float(loss.detach())
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip_norm)
    opt.step()
    return total / max(1, n_tokens)
