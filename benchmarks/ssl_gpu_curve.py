"""small_scaling_law gpu: the training curve of one width on the budget line (issue 29: why
n_embd 768 ended 1.57 nats above 1024 on the same FLOPs). Trains with the profile's recipe
(or another peak learning rate) and writes the train-loss curve and the held-out loss.

    python benchmarks/ssl_gpu_curve.py --width 768 [--lr 5e-4] [--flops 2e16] --out F.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import torch

from rebench.core.discovery import load_spec
from rebench.environments.small_scaling_law.assets import corpus_splits
from rebench.environments.small_scaling_law.trainer import (
    Recipe,
    ScalingParams,
    spread_rows,
    train_config,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="gpu")
    parser.add_argument("--width", type=int, required=True)
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--flops", type=float, default=None, help="default: the profile's")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    profile = load_spec("small_scaling_law").profile(args.profile)
    params = profile.params_as(ScalingParams)
    with corpus_splits(params.tokenizer) as splits:
        recipe = Recipe.of(params, splits.vocab_size)
        if args.flops:
            recipe = replace(recipe, target_flops=args.flops)
        rows = spread_rows(splits.tokens("test"), recipe.block_size, params.sweep_windows)
        iters = recipe.iters_for(args.width, recipe.target_flops)
        started = time.monotonic()
        result = train_config(recipe, splits.tokens("train"), rows, args.width, iters,
                              lr=args.lr, curve_points=100)
    record = {"width": args.width, "max_iters": iters, "lr": args.lr or recipe.lr,
              "flops": recipe.flops(args.width, iters), "loss": result.final_loss,
              "seconds": round(time.monotonic() - started, 1), "curve": result.curve,
              "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"}
    args.out.write_text(json.dumps(record, indent=1))
    print(json.dumps({k: v for k, v in record.items() if k != "curve"}))
    print("curve:", " ".join(f"{s}:{loss}" for s, loss in result.curve))


if __name__ == "__main__":
    main()
