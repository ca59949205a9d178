"""Measure L*: train the fixed GPT at several widths on the target budget line and record
the held-out loss of each (windows spread evenly over the whole test split).

    python -m rebench.environments.small_scaling_law.sweep --profile cpu
    python -m rebench.environments.small_scaling_law.sweep --profile cpu --processes 2 --threads 1
    python -m rebench.environments.small_scaling_law.sweep --profile gpu --processes 5

writes sweep_<profile>.json beside this file. The table is public documentation of the
recipe at the profile's nominal budget (`target_flops`); since 1.2.0 the scored budget is
drawn at prepare below it and L* is measured there (prepare.py), so no table is the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from rebench.assets.data import TokenSplits
from rebench.core.discovery import load_spec
from rebench.core.spec import Profile
from rebench.environments.small_scaling_law.assets import corpus_splits
from rebench.environments.small_scaling_law.trainer import (
    Recipe,
    ScalingParams,
    spread_rows,
    train_config,
)

HERE = Path(__file__).resolve().parent
_MODULE = "rebench.environments.small_scaling_law.sweep"
# gpu: around the compute-optimal width of 2e16 FLOPs (about 520); a target run takes about
# 15 minutes at 384 and 4 at 1024 on an H200 (docs/benchmarks/gpu-sizing-h200.md).
DEFAULT_WIDTHS = {"cpu": (16, 24, 32, 48, 64, 96), "gpu": (384, 512, 640, 768, 1024)}


@dataclass(frozen=True)
class SweepPoint:
    """One run on the budget line."""

    n_embd: int
    max_iters: int
    flops: float
    loss: float
    seconds: float


def sweep_path(profile: str) -> Path:
    """Where a profile's sweep table lives."""
    return HERE / f"sweep_{profile}.json"


def load_sweep(profile: str) -> list[SweepPoint]:
    """The recorded sweep of a profile (empty if it was never measured)."""
    path = sweep_path(profile)
    if not path.is_file():
        return []
    return [SweepPoint(**p) for p in json.loads(path.read_text())["points"]]


def run_sweep(profile_name: str, widths: tuple[int, ...], out: Path | None = None,
              threads: int | None = None) -> dict[str, object]:
    """Train every width on the budget line; return the table (also written to disk)."""
    profile = load_spec("small_scaling_law").profile(profile_name)
    with corpus_splits(profile.params_as(ScalingParams).tokenizer) as splits:
        return _sweep(profile_name, profile, splits, widths, out, threads)


def _sweep(profile_name: str, profile: Profile, splits: TokenSplits, widths: tuple[int, ...],
           out: Path | None, threads: int | None) -> dict[str, object]:
    params = profile.params_as(ScalingParams)
    recipe = Recipe.of(params, splits.vocab_size)
    if threads:  # losses differ from the profile's thread count by float rounding only
        recipe = replace(recipe, threads=threads)
    train_tokens = splits.tokens("train")
    windows = params.sweep_windows
    rows = spread_rows(splits.tokens("test"), recipe.block_size, windows)
    points: list[SweepPoint] = []
    for n_embd in widths:
        iters = recipe.iters_for(n_embd, recipe.target_flops)
        start = time.monotonic()
        result = train_config(recipe, train_tokens, rows, n_embd, iters)
        points.append(SweepPoint(n_embd, iters, recipe.flops(n_embd, iters), result.final_loss,
                                 round(time.monotonic() - start, 1)))
        print(f"n_embd={n_embd} max_iters={iters} loss={result.final_loss:.4f} "
              f"({points[-1].seconds:.0f} s)", flush=True)
    table: dict[str, object] = {
        "profile": profile_name, "target_flops": recipe.target_flops,
        "eval": f"{len(rows)} windows spread evenly over the test split",
        "machine": f"{platform.machine()} {platform.processor()} torch {torch.__version__}, "
                   f"torch threads: {recipe.threads}",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "points": [p.__dict__ for p in points],
    }
    (out or sweep_path(profile_name)).write_text(json.dumps(table, indent=1) + "\n")
    return table


def run_sweep_in_processes(profile_name: str, widths: tuple[int, ...], processes: int,
                           out: Path | None = None,
                           threads: int | None = None) -> dict[str, object]:
    """The same sweep with one width per process, `processes` at a time; each process gets
    a GPU of its own (CUDA_VISIBLE_DEVICES: slot k uses GPU k), which a cpu profile
    ignores. The points are merged into one table."""
    params = load_spec("small_scaling_law").profile(profile_name).params_as(ScalingParams)
    if params.device == "cuda" and torch.cuda.device_count() < processes:
        raise SystemExit(f"--processes {processes} needs as many GPUs; "
                         f"{torch.cuda.device_count()} visible")
    free: queue.Queue[int] = queue.Queue()
    for gpu in range(processes):
        free.put(gpu)
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        def one(width: int) -> SweepPoint:
            part = Path(tmp) / f"{width}.json"
            gpu = free.get()
            try:
                env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)}
                argv = [sys.executable, "-m", _MODULE, "--profile", profile_name,
                        "--widths", str(width), "--out", str(part)]
                subprocess.run([*argv, *(["--threads", str(threads)] if threads else [])],
                               env=env, check=True)
            finally:
                free.put(gpu)
            return SweepPoint(**json.loads(part.read_text())["points"][0])

        with ThreadPoolExecutor(max_workers=processes) as pool:
            points = list(pool.map(one, widths))
        first = json.loads((Path(tmp) / f"{widths[0]}.json").read_text())
    table = {**first, "points": [p.__dict__ for p in points],
             "machine": f"{first['machine']}, {processes} processes (a width each)"}
    (out or sweep_path(profile_name)).write_text(json.dumps(table, indent=1) + "\n")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--widths", type=int, nargs="*")
    parser.add_argument("--out", type=Path, help="write the table here instead")
    parser.add_argument("--threads", type=int, help="torch threads (default: the profile's)")
    parser.add_argument("--processes", type=int, default=1,
                        help="train this many widths at once, a process each (and a GPU "
                        "each on a machine with several)")
    args = parser.parse_args()
    widths = tuple(args.widths or DEFAULT_WIDTHS[args.profile])
    if args.processes > 1:
        run_sweep_in_processes(args.profile, widths, args.processes, args.out, args.threads)
    else:
        run_sweep(args.profile, widths, args.out, args.threads)


if __name__ == "__main__":
    main()
