"""Build small_scaling_law's assets.

public/   (copied into every workspace)
  answer.json   the starting answer: the public sweep table's optimum width at the drawn
                budget, predicting the table's loss (what the package documents)
  model.py      the GPT every run trains (a copy of rebench.assets.gpt), for reading
  recipe.json   the fixed shape and training recipe, the budget and the experiment cap
protected/ (trusted side only: the experiment service and the scorer)
  train.bin, val_rows.npy   the train split and validation windows (experiments), noised
  heldout_rows.npy          a secret random subset of the test split's windows (the score),
                            noised
  meta.json                 tokenizer, vocabulary size, the drawn target budget and the
                            drawn noise rate
  lstar.json                L*: the held-out loss of each width of `lstar_widths` trained
                            at the drawn budget, on the scorer's own windows
  trained.json              the held-out loss of every answer shape trained here (the L*
                            widths, the starting answer, the reference's): the scorer reads
                            an answer of one of these shapes instead of training it again
  anchors.json              the starting answer's and the reference's raw scores on the
                            drawn setting (the normalization's anchors for this prepare)

The target budget is drawn from fresh randomness (log-uniform in the profile's
[target_low, target_high]), and so is a noise rate (uniform in [noise_low, noise_high]): that
fraction of the tokens of every split is replaced by uniformly random tokens, which raises
every loss of the run by a hidden amount (0.7 to 1.5 nats on cpu). L* is measured for this
setting here, so what the score compares with is not in the package's public sweep table
(which documents the recipe on clean text at the nominal budget): the table's answer is the
starting answer and scores 0 (decision 0015).
"""

from __future__ import annotations

import importlib.util
import json
import math
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rebench.assets import gpt as gpt_module
from rebench.assets.data import TokenSplits
from rebench.environments.small_scaling_law.assets import (
    LSTAR,
    META,
    corpus_splits,
    write_trained,
)
from rebench.environments.small_scaling_law.scoring import raw_score
from rebench.environments.small_scaling_law.trainer import (
    Recipe,
    ScalingParams,
    block_rows,
    spread_rows,
    train_config,
)
from rebench.scoring import PrepareContext


def starting_answer(recipe: Recipe, profile: str) -> dict[str, object]:
    """What the package documents, rescaled: the public sweep table's optimum width with
    max_iters for the drawn budget, predicting the table's loss. A copy of the public
    material is this answer and scores 0; beating it takes measuring this run's data."""
    from rebench.environments.small_scaling_law.sweep import table_optimum

    best = table_optimum(profile)
    iters = max(1, recipe.iters_for(best.n_embd, recipe.target_flops))
    return {"loss_prediction": round(best.loss, 4), "max_iters": iters, "n_embd": best.n_embd}


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
        "target_note": "target_flops was drawn for this run when the task was prepared",
    }


def draw_target(params: ScalingParams, rng: np.random.Generator) -> float:
    """The run's budget: log-uniform in [target_low, target_high], rounded to 3 digits."""
    low, high = math.log(params.target_low), math.log(params.target_high)
    return float(f"{math.exp(rng.uniform(low, high)):.3g}")


def draw_noise(params: ScalingParams, rng: np.random.Generator) -> float:
    """The run's noise rate: uniform in [noise_low, noise_high], rounded to 3 digits."""
    return round(float(rng.uniform(params.noise_low, params.noise_high)), 3)


def add_noise(tokens: np.ndarray, rate: float, vocab_size: int,
              rng: np.random.Generator) -> np.ndarray:
    """A copy of `tokens` (uint16) with each token replaced, with probability `rate`, by a
    token drawn uniformly from the vocabulary."""
    out = np.array(tokens, dtype=np.uint16, copy=True)
    mask = rng.random(out.shape) < rate
    out[mask] = rng.integers(0, vocab_size, size=int(mask.sum()), dtype=np.uint16)
    return out


def measure_l_star(recipe: Recipe, train: np.ndarray, rows: np.ndarray, widths: list[int],
                   progress: Callable[[str, float | None], None] | None = None,
                   ) -> list[dict[str, float]]:
    """Train each width at the recipe's (drawn) budget and evaluate on `rows` (the
    scorer's held-out windows): the points whose best loss is L*."""
    points = []
    for i, n_embd in enumerate(widths):
        iters = recipe.iters_for(n_embd, recipe.target_flops)
        start = time.monotonic()
        loss = train_config(recipe, train, rows, n_embd, iters).final_loss
        points.append({"n_embd": n_embd, "max_iters": iters, "loss": loss,
                       "seconds": round(time.monotonic() - start, 1)})
        if progress is not None:
            progress(f"L*: width {n_embd} trained ({i + 1}/{len(widths)})",
                     0.3 + 0.7 * (i + 1) / len(widths))
    return points


def prepare(ctx: PrepareContext) -> None:
    """Build the assets (see the module docstring); the scored windows are secret."""
    params: ScalingParams = ctx.profile.typed
    with corpus_splits(params.tokenizer, ctx.assets_dir) as splits:
        _build(ctx, params, splits)


def _build(ctx: PrepareContext, params: ScalingParams, splits: TokenSplits) -> None:
    ctx.progress("tokenizing the corpus", 0.1)
    # Fresh randomness: neither the budget, the noise rate nor the held-out windows follow
    # from the package.
    rng = np.random.default_rng(secrets.randbits(128))
    recipe = Recipe.of(params, splits.vocab_size, draw_target(params, rng))
    noise = draw_noise(params, rng)
    vocab = splits.vocab_size
    ctx.public_dir.mkdir(parents=True, exist_ok=True)
    ctx.protected_dir.mkdir(parents=True, exist_ok=True)
    train = add_noise(splits.tokens("train"), noise, vocab, rng)
    train.astype("<u2").tofile(ctx.protected_dir / "train.bin")
    np.save(ctx.protected_dir / "val_rows.npy", add_noise(
        spread_rows(splits.tokens("val"), recipe.block_size, recipe.val_windows),
        noise, vocab, rng))
    rows = block_rows(splits.tokens("test"), recipe.block_size)
    pick = np.sort(rng.choice(len(rows), size=min(recipe.heldout_windows, len(rows)),
                              replace=False))
    heldout = add_noise(rows[pick], noise, vocab, rng)
    np.save(ctx.protected_dir / "heldout_rows.npy", heldout)
    (ctx.protected_dir / META).write_text(json.dumps(
        {"tokenizer": splits.tokenizer, "vocab_size": vocab,
         "target_flops": recipe.target_flops, "noise_rate": noise}))
    ctx.progress(f"measuring L* at the drawn budget (widths {params.lstar_widths})", 0.3)
    widths = [int(w) for w in params.lstar_widths.split(",")]
    started = time.monotonic()
    points = measure_l_star(recipe, train, heldout, widths, ctx.progress)
    (ctx.protected_dir / LSTAR).write_text(json.dumps(
        {"target_flops": recipe.target_flops, "points": points,
         "seconds": round(time.monotonic() - started, 1)}, indent=1))
    cap = recipe.target_flops * params.experiment_fraction
    (ctx.public_dir / "recipe.json").write_text(json.dumps(public_recipe(recipe, cap), indent=1))
    shutil.copyfile(gpt_module.__file__, ctx.public_dir / "model.py")
    start = starting_answer(recipe, ctx.profile.name)
    (ctx.public_dir / "answer.json").write_text(json.dumps(start) + "\n")
    measure_anchors(ctx, recipe, train, heldout, points, start)
    ctx.progress("assets ready", 1.0)


def measure_anchors(ctx: PrepareContext, recipe: Recipe, train: np.ndarray,
                    heldout: np.ndarray, points: list[dict[str, float]],
                    start: Mapping[str, Any]) -> None:
    """The starting answer's and the reference's raw scores on this drawn setting, as the
    scorer computes them: the reference plans from experiments on the service's validation
    windows (reference/fit.py's own `plan`), and each answer is trained on the held-out
    windows (or read from the L* points when it is one of them). Both move with the drawn
    budget (the reference's raw by 0.2 between two cpu prepares), so the anchors are this
    prepare's, not the profile's."""
    l_star = min(p["loss"] for p in points)
    measured = {(int(p["n_embd"]), int(p["max_iters"])): p["loss"] for p in points}

    def held_out_loss(answer: Mapping[str, Any]) -> float:
        key = (int(answer["n_embd"]), int(answer["max_iters"]))
        if key not in measured:
            measured[key] = train_config(recipe, train, heldout, *key).final_loss
        return measured[key]

    ctx.progress("anchors: training the starting answer", None)
    start_raw = raw_score(held_out_loss(start), l_star, float(start["loss_prediction"]))
    val_rows = np.load(ctx.protected_dir / "val_rows.npy")
    fit = _reference_module()
    ctx.progress("anchors: the reference's experiments", None)
    cap = recipe.target_flops * ctx.profile.typed.experiment_fraction
    reference, experiments = fit.plan(
        public_recipe(recipe, cap),
        lambda n, t: train_config(recipe, train, val_rows, n, t).final_loss)
    ctx.progress("anchors: training the reference's answer", None)
    reference_raw = raw_score(held_out_loss(reference), l_star,
                              float(reference["loss_prediction"]))
    write_trained(ctx.assets_dir, measured)
    ctx.record_anchors(start_raw, reference_raw, start=start, reference=reference,
                       reference_experiments=len(experiments), l_star=l_star)


def _reference_module() -> Any:
    """reference/fit.py, which is a solution folder's script rather than a package module."""
    path = Path(__file__).parent / "reference" / "fit.py"
    spec = importlib.util.spec_from_file_location("small_scaling_law_reference_fit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
