"""A deterministic training loop and a deterministic evaluation for the shared GPT.

Determinism: the model is initialised from `torch.manual_seed(seed)` and batches are drawn
from a NumPy PCG64 generator of the same seed, so on one machine with one thread count a
run is bit-for-bit repeatable on CPU. On GPU, bf16 autocast and fused kernels make runs
close but not bitwise identical.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from rebench.assets.gpt import GPT, GPTConfig


@dataclass(frozen=True)
class TrainConfig:
    """AdamW with linear warm-up then cosine decay to `min_lr` (nanoGPT's recipe)."""

    steps: int
    batch_size: int
    lr: float
    min_lr: float
    warmup_steps: int
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    seed: int = 0
    bf16: bool = False  # autocast matmuls to bf16 (GPU only)


def lr_at(step: int, cfg: TrainConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * min(1.0, progress)))


def get_batch(
    data: np.ndarray, block_size: int, batch_size: int, rng: np.random.Generator,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows: x (batch, block) and y = x shifted by one token."""
    starts = rng.integers(0, len(data) - block_size - 1, size=batch_size)
    rows = np.stack([np.asarray(data[s: s + block_size + 1], dtype=np.int64) for s in starts])
    tensor = torch.from_numpy(rows).to(device)
    return tensor[:, :-1], tensor[:, 1:]


def make_optimizer(
    params: Iterable[tuple[str, torch.nn.Parameter]], cfg: TrainConfig
) -> torch.optim.AdamW:
    """Weight decay on matrices (and the embedding) only, as in nanoGPT."""
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for _, p in params:
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95))


def train(
    model: GPT, data: np.ndarray, cfg: TrainConfig, device: torch.device,
    progress: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Train `model` in place for cfg.steps steps; returns the training loss of each step."""
    model.to(device).train()
    rng = np.random.Generator(np.random.PCG64(cfg.seed))
    opt = make_optimizer(model.named_parameters(), cfg)
    losses: list[float] = []
    for step in range(cfg.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        x, y = get_batch(data, model.config.block_size, cfg.batch_size, rng, device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
            _, loss = model(x, y)
        assert loss is not None  # targets were given
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        losses.append(float(loss.item()))
        if progress is not None:
            progress(step, losses[-1])
    model.eval()
    return losses


def eval_windows(n_tokens: int, block_size: int, n_windows: int) -> np.ndarray:
    """Start offsets of `n_windows` windows spread evenly over a split (deterministic)."""
    last = n_tokens - block_size - 1
    if last <= 0:
        raise ValueError(f"split of {n_tokens} tokens is shorter than one window")
    return np.linspace(0, last, num=n_windows).astype(np.int64)


@torch.no_grad()
def evaluate(
    model: GPT, data: np.ndarray, n_windows: int, batch_size: int, device: torch.device
) -> float:
    """Mean next-token cross-entropy (nats) over fixed, evenly spread windows, in fp32."""
    model.to(device).eval()
    block = model.config.block_size
    starts = eval_windows(len(data), block, n_windows)
    total, count = 0.0, 0
    for i in range(0, len(starts), batch_size):
        chunk = starts[i: i + batch_size]
        rows = np.stack([np.asarray(data[s: s + block + 1], dtype=np.int64) for s in chunk])
        t = torch.from_numpy(rows).to(device)
        _, loss = model(t[:, :-1], t[:, 1:])
        assert loss is not None
        total += float(loss.item()) * len(chunk)
        count += len(chunk)
    return total / count


def new_model(cfg: GPTConfig, seed: int) -> GPT:
    """A freshly initialised GPT; the same seed gives the same weights."""
    torch.manual_seed(seed)
    return GPT(cfg)


class Stopwatch:
    """Seconds since creation, for progress messages."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.start
