"""Build small_scaling_law's assets.

public/   (copied into every workspace)
  answer.json   the starting answer: a fixed guess translated to the profile
  model.py      the GPT every run trains (a copy of rebench.assets.gpt), for reading
  recipe.json   the fixed shape and training recipe, the budget and the experiment cap
protected/ (trusted side only: the experiment service and the scorer)
  train.bin, val_rows.npy   the public train split and validation windows (experiments)
  heldout_rows.npy          a secret random subset of the test split's windows (the score)
  meta.json                 tokenizer and vocabulary size
"""

from __future__ import annotations

import json
import secrets
import shutil

import numpy as np

from rebench.assets import gpt as gpt_module
from rebench.assets.data import TokenSplits
from rebench.environments.small_scaling_law.assets import META, corpus_splits
from rebench.environments.small_scaling_law.trainer import (
    Recipe,
    ScalingParams,
    block_rows,
    spread_rows,
)
from rebench.scoring import PrepareContext


def starting_answer(recipe: Recipe, n_embd: int, loss_prediction: float) -> dict[str, object]:
    """The paper's default guess, translated: a wide model for 75% of the budget."""
    iters = max(1, recipe.iters_for(n_embd, 0.75 * recipe.target_flops))
    return {"loss_prediction": loss_prediction, "max_iters": iters, "n_embd": n_embd}


def public_recipe(recipe: Recipe, cap: float) -> dict[str, object]:
    """What the agent is told about the fixed setup (recipe.json)."""
    return {
        "n_layer": recipe.n_layer, "block_size": recipe.block_size,
        "batch_size": recipe.batch_size, "vocab_size": recipe.vocab_size,
        "head_size": recipe.head_size, "n_head": f"n_embd // {recipe.head_size}",
        "min_n_embd": recipe.min_n_embd, "max_n_embd": recipe.max_n_embd,
        "optimizer": "AdamW(betas=(0.9, 0.95), weight_decay=0.1), grad clip 1.0",
        "lr": f"peak {recipe.lr} by default; warm-up over min(100, max_iters // 10) steps, "
              "cosine decay to peak / 10",
        "flops": "n_layer * n_embd**2 * 12 * 6 * block_size * batch_size * max_iters",
        "target_flops": recipe.target_flops, "experiment_flops_cap": cap,
    }


def prepare(ctx: PrepareContext) -> None:
    """Build the assets (see the module docstring); the scored windows are secret."""
    params = ctx.profile.params_as(ScalingParams)
    with corpus_splits(params.tokenizer, ctx.assets_dir) as splits:
        _build(ctx, params, splits)


def _build(ctx: PrepareContext, params: ScalingParams, splits: TokenSplits) -> None:
    ctx.progress("tokenizing the corpus", 0.1)
    recipe = Recipe.of(params, splits.vocab_size)
    ctx.public_dir.mkdir(parents=True, exist_ok=True)
    ctx.protected_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(splits.path("train"), ctx.protected_dir / "train.bin")
    np.save(ctx.protected_dir / "val_rows.npy",
            spread_rows(splits.tokens("val"), recipe.block_size, recipe.val_windows))
    # The held-out windows are drawn from fresh randomness: not derivable from the package.
    rows = block_rows(splits.tokens("test"), recipe.block_size)
    rng = np.random.default_rng(secrets.randbits(128))
    pick = np.sort(rng.choice(len(rows), size=min(recipe.heldout_windows, len(rows)),
                              replace=False))
    np.save(ctx.protected_dir / "heldout_rows.npy", rows[pick])
    (ctx.protected_dir / META).write_text(json.dumps(
        {"tokenizer": splits.tokenizer, "vocab_size": splits.vocab_size}))
    cap = recipe.target_flops * params.experiment_fraction
    (ctx.public_dir / "recipe.json").write_text(json.dumps(public_recipe(recipe, cap), indent=1))
    shutil.copyfile(gpt_module.__file__, ctx.public_dir / "model.py")
    start = starting_answer(recipe, params.start_n_embd, params.start_loss_prediction)
    (ctx.public_dir / "answer.json").write_text(json.dumps(start) + "\n")
    ctx.progress("assets ready", 1.0)
