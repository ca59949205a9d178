"""Trusted training for small_scaling_law: the shared GPT (rebench.assets.gpt), 4 layers,
trained on the public train split with a fixed recipe. Used by the experiment service, the
final scorer and the sweep script (scripts/sweep.py in this folder), so all three train
exactly alike. Nothing here reads the agent's workspace."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from rebench.assets.gpt import GPTConfig
from rebench.assets.train import TrainConfig, new_model, train


@dataclass(frozen=True)
class ScalingParams:
    """A profile's numbers (the spec's params_type). It lives here, not in environment.py,
    because environment.py imports the experiment service, which imports this module."""

    tokenizer: str  # "gpt2" or "bpe<size>" (rebench.assets.tokenizer)
    device: Literal["cpu", "cuda"]  # where every training run runs
    threads: int  # torch threads of every training run
    n_layer: int  # the fixed GPT: layers, context, batch and head size
    block_size: int
    batch_size: int
    head_size: int  # n_head = n_embd // head_size
    min_n_embd: int  # the widths an answer or an experiment may ask for
    max_n_embd: int
    lr: float  # default peak learning rate (an experiment may set its own)
    seed: int  # model init and batch order of every training run (experiments and scoring)
    target_flops: float  # the budget of the public sweep table (documentation only)
    # The budget the answer is trained at is drawn at prepare, log-uniformly in
    # [target_low, target_high] (recipe.json gives it to the agent): the public table's
    # optimum is never the answer. target_high * max_budget_ratio < target_flops, so the
    # table's optimum copied as is uses more than the allowed budget.
    target_low: float
    target_high: float
    lstar_widths: str  # widths (comma-separated) the prepare trains at the drawn budget: L*
    experiment_fraction: float  # one experiment may use this fraction of target_flops
    max_budget_ratio: float  # answers above this x target_flops are invalid
    eval_batch_size: int  # rows per evaluation batch
    val_windows: int  # the experiments' validation loss: windows of the val split
    heldout_windows: int  # the scorer's: a secret subset of the test split's windows
    sweep_windows: int  # the sweep's (L*): windows spread over the test split
    # A fraction of every token of the run's data (train, validation and held-out splits)
    # is replaced by a uniformly random token at prepare, the fraction drawn uniformly in
    # [noise_low, noise_high] and kept secret: it raises every loss by a hidden amount, so
    # the public sweep table's loss is not this run's (decision 0015).
    noise_low: float
    noise_high: float
    experiment_timeout_s: float  # wall-clock limit of one experiment's child process


@dataclass(frozen=True)
class Recipe:
    """A profile's fixed model and training recipe (what the agent cannot change)."""

    vocab_size: int
    n_layer: int
    block_size: int
    batch_size: int
    head_size: int
    min_n_embd: int
    max_n_embd: int
    lr: float
    seed: int
    threads: int
    target_flops: float
    eval_batch_size: int
    val_windows: int
    heldout_windows: int
    device: str = "cpu"

    @classmethod
    def of(cls, p: ScalingParams, vocab_size: int, target_flops: float | None = None
           ) -> Recipe:
        """The recipe of a profile's params on a corpus of `vocab_size` tokens, at the
        prepare's drawn budget `target_flops` (the sweep's nominal budget if None)."""
        return cls(
            vocab_size=vocab_size, n_layer=p.n_layer, block_size=p.block_size,
            batch_size=p.batch_size, head_size=p.head_size, min_n_embd=p.min_n_embd,
            max_n_embd=p.max_n_embd, lr=p.lr, seed=p.seed, threads=p.threads,
            target_flops=p.target_flops if target_flops is None else target_flops,
            eval_batch_size=p.eval_batch_size,
            val_windows=p.val_windows, heldout_windows=p.heldout_windows, device=p.device,
        )

    def flops(self, n_embd: int, max_iters: int) -> float:
        """The task's FLOP count: n_layer * n_embd^2 * 12 * 6 * block * batch * max_iters."""
        return (float(self.n_layer) * n_embd * n_embd * 12 * 6 * self.block_size
                * self.batch_size * max_iters)

    def iters_for(self, n_embd: int, flops: float) -> int:
        """The largest max_iters whose FLOPs do not exceed `flops` at this width."""
        return int(flops // self.flops(n_embd, 1))

    def shape_error(self, n_embd: int, max_iters: int) -> str | None:
        """Why (n_embd, max_iters) is not a trainable shape, or None."""
        if not self.min_n_embd <= n_embd <= self.max_n_embd or n_embd % self.head_size:
            return (f"n_embd must be a multiple of {self.head_size} in "
                    f"[{self.min_n_embd}, {self.max_n_embd}]")
        if max_iters < 1:
            return "max_iters must be at least 1"
        return None


@dataclass(frozen=True)
class TrainResult:
    """Train losses sampled along the run, and the final evaluation loss."""

    curve: tuple[tuple[int, float], ...]
    final_loss: float


def lr_schedule(recipe: Recipe, max_iters: int, lr: float | None) -> TrainConfig:
    """AdamW, warm-up over 10% of the steps (at most 100), cosine to lr/10."""
    peak = recipe.lr if lr is None else lr
    return TrainConfig(steps=max_iters, batch_size=recipe.batch_size, lr=peak, min_lr=peak / 10,
                       warmup_steps=max(1, min(100, max_iters // 10)), seed=recipe.seed,
                       bf16=recipe.device == "cuda")


@torch.no_grad()
def eval_rows(
    model: torch.nn.Module, rows: np.ndarray, batch_size: int, device: torch.device
) -> float:
    """Mean next-token loss over rows of block_size + 1 tokens (fp32, deterministic)."""
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(rows), batch_size):
        chunk = torch.from_numpy(np.asarray(rows[i: i + batch_size], dtype=np.int64)).to(device)
        _, loss = model(chunk[:, :-1], chunk[:, 1:])
        assert loss is not None  # targets were given
        total += float(loss.item()) * len(chunk)
        count += len(chunk)
    return total / count


def block_rows(tokens: np.ndarray, block_size: int) -> np.ndarray:
    """Every non-overlapping window of block_size + 1 tokens of a split, as rows."""
    n = len(tokens) // (block_size + 1)
    return np.asarray(tokens[: n * (block_size + 1)], dtype=np.uint16).reshape(n, block_size + 1)


def spread_rows(tokens: np.ndarray, block_size: int, n_windows: int) -> np.ndarray:
    """`n_windows` windows of block_size + 1 tokens spread evenly over a split."""
    last = len(tokens) - block_size - 1
    starts = np.linspace(0, last, num=n_windows).astype(np.int64)
    return np.stack([np.asarray(tokens[s: s + block_size + 1], dtype=np.uint16) for s in starts])


def train_config(
    recipe: Recipe, train_tokens: np.ndarray, eval_rows_: np.ndarray, n_embd: int,
    max_iters: int, lr: float | None = None, curve_points: int = 50,
) -> TrainResult:
    """Train the fixed GPT at (n_embd, max_iters) with the profile's seed; evaluate on rows."""
    torch.set_num_threads(recipe.threads)
    cfg = GPTConfig(vocab_size=recipe.vocab_size, block_size=recipe.block_size,
                    n_layer=recipe.n_layer, n_head=n_embd // recipe.head_size, n_embd=n_embd)
    device = torch.device(recipe.device)
    model = new_model(cfg, recipe.seed)
    losses = train(model, train_tokens, lr_schedule(recipe, max_iters, lr), device)
    every = max(1, math.ceil(max_iters / curve_points))
    curve = tuple((i + 1, round(losses[i], 4)) for i in range(0, max_iters, every))
    if curve[-1][0] != max_iters:
        curve = (*curve, (max_iters, round(losses[-1], 4)))
    return TrainResult(curve=curve, final_loss=eval_rows(model, eval_rows_,
                                                         recipe.eval_batch_size, device))
