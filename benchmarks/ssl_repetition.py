"""How many times a small_scaling_law recipe repeats its train split, and what that does to
the held-out loss: train one width with a recipe's schedule and evaluate on held-out windows
along the way (issue 29: the paper-shaped gpu recipe's n_embd 768 scored 6.74 and 1024
scored 5.17 on the same 2e16 FLOPs).

    python benchmarks/ssl_repetition.py --tokenizer gpt2 --block 1024 --batch 64 \\
        --head 64 --lr 1e-3 --flops 2e16 --n-embd 768 --stop 500 --out rep.json

Prints and writes (JSON) the train split's size in tokens, the epochs per step, and the
held-out loss at a few steps (the run stops at --stop, its schedule is the full run's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from dataclasses import replace
from pathlib import Path

import torch

from rebench.assets.gpt import GPTConfig
from rebench.assets.train import new_model, train
from rebench.core.discovery import load_spec
from rebench.environments.small_scaling_law.assets import corpus_splits
from rebench.environments.small_scaling_law.trainer import (
    Recipe,
    eval_rows,
    lr_schedule,
    spread_rows,
)


class _Stop(Exception):
    """Raised from the progress callback to end a run early."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="gpu", help="the profile whose params start")
    parser.add_argument("--tokenizer")
    parser.add_argument("--block", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--head", type=int)
    parser.add_argument("--lr", type=float)
    parser.add_argument("--flops", type=float, required=True)
    parser.add_argument("--n-embd", type=int, required=True)
    parser.add_argument("--stop", type=int, help="stop after this many steps")
    parser.add_argument("--evals", type=int, default=10, help="held-out evaluations")
    parser.add_argument("--windows", type=int, default=512, help="held-out windows")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    params = load_spec("small_scaling_law").profile(args.profile).typed
    params = replace(params, **{k: v for k, v in {
        "tokenizer": args.tokenizer, "block_size": args.block, "batch_size": args.batch,
        "head_size": args.head, "lr": args.lr}.items() if v is not None})
    with corpus_splits(params.tokenizer) as splits:
        recipe = replace(Recipe.of(params, splits.vocab_size, args.flops), device=args.device)
        train_tokens = splits.tokens("train")
        rows = spread_rows(splits.tokens("test"), recipe.block_size, args.windows)
        iters = recipe.iters_for(args.n_embd, args.flops)
        stop = min(iters, args.stop or iters)
        per_step = recipe.block_size * recipe.batch_size
        epochs_per_step = per_step / len(train_tokens)
        print(f"train split {len(train_tokens):,} tokens; {per_step} tokens a step; "
              f"{iters} steps = {iters * epochs_per_step:.1f} epochs; stopping at {stop}",
              flush=True)
        cfg = GPTConfig(vocab_size=recipe.vocab_size, block_size=recipe.block_size,
                        n_layer=recipe.n_layer, n_head=args.n_embd // recipe.head_size,
                        n_embd=args.n_embd)
        device = torch.device(recipe.device)
        model = new_model(cfg, recipe.seed)
        marks = sorted({max(1, round(stop * (i + 1) / args.evals)) for i in range(args.evals)})
        points: list[dict[str, float]] = []
        started = time.monotonic()

        def progress(step: int, loss: float) -> None:
            if step + 1 in marks:
                held_out = eval_rows(model, rows, recipe.eval_batch_size, device)
                model.train()
                points.append({"step": step + 1, "epochs": round((step + 1) * epochs_per_step, 2),
                               "train_loss": round(loss, 4), "held_out_loss": round(held_out, 4),
                               "seconds": round(time.monotonic() - started, 1)})
                print(json.dumps(points[-1]), flush=True)
            if step + 1 >= stop:
                raise _Stop

        with contextlib.suppress(_Stop):
            train(model, train_tokens, lr_schedule(recipe, iters, None), device, progress)
    result = {"recipe": {"tokenizer": params.tokenizer, "block": recipe.block_size,
                         "batch": recipe.batch_size, "lr": recipe.lr, "flops": args.flops,
                         "n_embd": args.n_embd, "max_iters": iters},
              "train_tokens": len(train_tokens), "epochs_per_step": epochs_per_step,
              "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
              "points": points}
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
