"""Build fix_embedding's assets: draw a secret, split the corpus and corrupt the model with
it, train a large and a small GPT, and lay out public/ and protected/.

public/   (copied into every workspace)
  large_model.pth           the large model with a scrambled embedding
  small_correct_model.pth   a smaller model with an intact embedding (same tokenizer)
  model.py                  the GPT definition both use (a copy of rebench.assets.gpt)
  config.json               shapes of both models, tokenizer, data files
  data/train.bin, data/val.bin, tokenizer.json (BPE profiles only)
protected/ (trusted scorer only)
  secret.bin                32 random bytes drawn at prepare: the held-out split and the
                            corruption derive from them, nothing public does
  test.bin                  held-out tokens
  eval.json                 the large model's shape, c, evaluation windows, measured losses
  permutation.npy           the row permutation applied (for analysis; never shown)
  corpus.json               the corpus manifest (which works are held out)
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np

from rebench.assets import gpt as gpt_module
from rebench.assets.data import MANIFEST, TokenSplits, token_splits
from rebench.assets.gpt import GPT, GPTConfig
from rebench.assets.secret import derive, draw_secret, secret_rng, store_secret
from rebench.assets.train import TrainConfig, evaluate, new_model, train
from rebench.assets.weights import WeightsError, load_base_model, save_state
from rebench.environments.fix_embedding.corruption import Corruption, corrupt_to_target
from rebench.environments.fix_embedding.environment import EmbeddingParams
from rebench.scoring.context import PrepareContext
from rebench.scoring.kit import torch_device

# Offsets from the profile's seed for the two models and their batch streams. The seed is
# public: it only makes training repeatable; nothing held out derives from it.
_SEED_LARGE, _SEED_SMALL = 1, 2


@dataclass(frozen=True)
class _Model:
    """One of the two models of a profile: its shape and its training."""

    n_layer: int
    n_head: int
    n_embd: int
    steps: int
    lr: float


def _model_of(p: EmbeddingParams, name: Literal["large", "small"]) -> _Model:
    if name == "large":
        return _Model(p.large_n_layer, p.large_n_head, p.large_n_embd, p.large_steps,
                      p.large_lr)
    return _Model(p.small_n_layer, p.small_n_head, p.small_n_embd, p.small_steps, p.small_lr)


def model_config(p: EmbeddingParams, name: Literal["large", "small"], vocab: int) -> GPTConfig:
    """The GPT shape of the `large` or the `small` model."""
    m = _model_of(p, name)
    return GPTConfig(vocab_size=vocab, block_size=p.block_size, n_layer=m.n_layer,
                     n_head=m.n_head, n_embd=m.n_embd, dropout=p.dropout)


def training_config(p: EmbeddingParams, name: Literal["large", "small"], seed_offset: int,
                    bf16: bool) -> TrainConfig:
    """How the `large` or the `small` model trains (cosine to lr/10 after a 5% warm-up)."""
    m = _model_of(p, name)
    return TrainConfig(
        steps=m.steps, batch_size=p.batch_size, lr=m.lr, min_lr=m.lr / 10,
        warmup_steps=max(1, m.steps // 20), seed=p.seed + seed_offset, bf16=bf16,
    )


class _Phases:
    """Progress lines with wall and CPU seconds per phase; CPU time (process_time) measures
    the work itself, which a loaded machine stretches in wall time only."""

    def __init__(self, ctx: PrepareContext) -> None:
        self.ctx = ctx
        self.wall, self.cpu = time.monotonic(), time.process_time()
        self.costs: dict[str, float] = {}

    def say(self, message: str, fraction: float | None) -> None:
        self.ctx.progress(f"{message} ({time.monotonic() - self.wall:.0f} s, "
                          f"cpu {time.process_time() - self.cpu:.0f} s)", fraction)

    def done(self, phase: str) -> None:
        self.costs[phase] = round(time.process_time() - self.cpu - sum(self.costs.values()), 2)


def _train_one(
    ctx: PrepareContext, phases: _Phases, name: Literal["large", "small"], splits: TokenSplits,
    seed: int, span: tuple[float, float],
) -> GPT:
    p: EmbeddingParams = ctx.profile.typed
    device = torch_device(ctx.profile)
    tcfg = training_config(p, name, seed, bf16=device.type == "cuda")
    model = new_model(model_config(p, name, splits.vocab_size), p.seed + seed)
    every = max(1, tcfg.steps // 5)

    def report(step: int, loss: float) -> None:
        if step % every == 0 or step == tcfg.steps - 1:
            frac = span[0] + (span[1] - span[0]) * (step + 1) / tcfg.steps
            phases.say(f"training the {name} model: step {step + 1}/{tcfg.steps}, "
                       f"loss {loss:.3f}", frac)

    train(model, splits.tokens("train"), tcfg, device, report)
    phases.done(f"train_{name}")
    return model.cpu()


def _write_public(ctx: PrepareContext, splits: TokenSplits, large: GPT, small: GPT) -> None:
    pub = ctx.public_dir
    (pub / "data").mkdir(parents=True, exist_ok=True)
    for split in ("train", "val"):
        shutil.copyfile(splits.path(split), pub / "data" / f"{split}.bin")
    tokenizer_file = splits.root / "tokenizer.json"
    if tokenizer_file.is_file():
        shutil.copyfile(tokenizer_file, pub / "tokenizer.json")
    shutil.copyfile(Path(gpt_module.__file__), pub / "model.py")
    save_state(large, pub / "large_model.pth")
    save_state(small, pub / "small_correct_model.pth")
    params: EmbeddingParams = ctx.profile.typed
    config = {
        "large_model": large.config.to_json(),
        "small_model": small.config.to_json(),
        "tokenizer": splits.tokenizer,
        "vocab_size": splits.vocab_size,
        "eot_id": splits.eot_id,
        "data": {"train": "data/train.bin", "val": "data/val.bin", "dtype": "uint16"},
        "eval_windows": params.eval_windows,
    }
    (pub / "config.json").write_text(json.dumps(config, indent=2))


def prepare(ctx: PrepareContext) -> None:
    """Build the assets of one profile (see the module docstring for the layout)."""
    params: EmbeddingParams = ctx.profile.typed
    phases = _Phases(ctx)
    secret = draw_secret()
    store_secret(ctx.protected_dir, secret)
    with tempfile.TemporaryDirectory(dir=ctx.assets_dir, prefix=".build-") as scratch:
        splits = token_splits(
            params.tokenizer, ctx.options.get("corpus"), params.max_user_tokens,
            derive(secret, "fix_embedding/corpus-split"), Path(scratch) / "corpus", phases.say,
        )
        phases.done("corpus")
        _build(ctx, phases, params, splits, secret)


def _build(ctx: PrepareContext, phases: _Phases, params: EmbeddingParams,
           splits: TokenSplits, secret: bytes) -> None:
    base = ctx.options.get("base_model")
    if base:
        phases.say(f"loading the base model {base}", 0.3)
        large = load_base_model(Path(base), params.block_size)
        if large.config.vocab_size != splits.vocab_size:
            raise WeightsError(f"base model vocabulary {large.config.vocab_size} != corpus "
                               f"tokenizer's {splits.vocab_size}: use --corpus with GPT-2 tokens")
    else:
        large = _train_one(ctx, phases, "large", splits, _SEED_LARGE, (0.3, 0.75))
    small = _without_dropout(_train_one(ctx, phases, "small", splits, _SEED_SMALL, (0.75, 0.9)))
    large = _without_dropout(large)

    test, device = splits.tokens("test"), torch_device(ctx.profile)

    def measure(model: GPT, windows: int) -> float:
        return evaluate(model, test, windows, params.eval_batch_size, device)

    phases.say("measuring held-out losses", 0.9)
    clean, small_loss = measure(large, params.eval_windows), measure(small, params.eval_windows)
    phases.done("evaluate")
    phases.say("scrambling the embedding to the target loss", 0.93)
    corruption = corrupt_to_target(
        large, secret_rng(secret, "fix_embedding/permutation"), measure, params.eval_windows,
        clean,
    )
    phases.done("corrupt")
    losses = {"clean": clean, "corrupted": corruption.loss, "small": small_loss,
              "uniform": corruption.uniform_loss}
    floor = params.loss_floor
    if base or ctx.options.get("corpus"):
        floor = round(0.59 * losses["clean"], 3)  # user assets: c follows the paper's ratio
    _write_public(ctx, splits, corruption.model, small)
    _write_protected(ctx, splits, corruption, {
        "config": large.config.to_json(), "loss_floor": floor,
        "eval_windows": params.eval_windows, "eval_batch_size": params.eval_batch_size,
        "losses": losses, "tokenizer": splits.tokenizer,
        "corruption": {"scrambled_rows": corruption.scrambled_rows,
                       "noise": corruption.noise},
        "prepare_cpu_s": phases.costs,
    })
    phases.say(
        f"done: held-out loss clean {losses['clean']:.3f}, small {losses['small']:.3f}, "
        f"corrupted {losses['corrupted']:.3f} (uniform {losses['uniform']:.3f})", 1.0,
    )


def _write_protected(ctx: PrepareContext, splits: TokenSplits, corruption: Corruption,
                     record: dict[str, object]) -> None:
    shutil.copyfile(splits.path("test"), ctx.protected_dir / "test.bin")
    if (splits.root / MANIFEST).is_file():
        shutil.copyfile(splits.root / MANIFEST, ctx.protected_dir / "corpus.json")
    np.save(ctx.protected_dir / "permutation.npy", corruption.permutation)
    (ctx.protected_dir / "eval.json").write_text(json.dumps(record, indent=2))


def _without_dropout(model: GPT) -> GPT:
    """The same weights under a config with dropout 0 (what workspaces and the scorer use)."""
    clean = GPT(replace(model.config, dropout=0.0))
    clean.load_state_dict(model.state_dict())
    return clean.eval()
