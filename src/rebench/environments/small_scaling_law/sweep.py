"""Measure L*: train the fixed GPT at several widths on the target budget line and record
the held-out loss of each (windows spread evenly over the whole test split).

    python -m rebench.environments.small_scaling_law.sweep --profile cpu
    python -m rebench.environments.small_scaling_law.sweep --profile cpu --processes 2 --threads 1
    python -m rebench.environments.small_scaling_law.sweep --profile gpu --processes 4 --per-gpu 4

writes sweep_<profile>.json beside this file. The table is public documentation of the
recipe at the profile's nominal budget (`target_flops`); since 1.2.0 the scored budget is
drawn at prepare below it and L* is measured there (prepare.py), so no table is the answer.

In pieces (a width per call of a machine that is lent for minutes at a time):

    python -m rebench.environments.small_scaling_law.sweep --profile gpu --widths 24 \
        --out part-24.json
    python -m rebench.environments.small_scaling_law.sweep --profile gpu --merge part-*.json

Each part records the training code's version (TRAINING_VERSION) and the recipe it was
trained with; the merge refuses a part made by another training version or recipe than the
code's, or a width twice.
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
from dataclasses import asdict, dataclass, replace
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
# gpu: the cpu recipe at twice the budget (1.4.0: the offline corpus cannot feed the
# paper's shape; docs/decisions/0014-small-scaling-law-gpu-recipe.md); two widths on each
# side of its optimum.
DEFAULT_WIDTHS = {"cpu": (16, 24, 32, 48, 64, 96), "gpu": (16, 24, 32, 40, 48, 64, 96)}


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


def table_optimum(profile: str) -> SweepPoint:
    """The best point of a profile's public sweep: what the package documents, and (its
    width at the drawn budget, its loss rounded to 4 digits) the starting answer."""
    points = load_sweep(profile)
    if not points:
        raise ValueError(f"small_scaling_law: no sweep table for profile {profile!r}")
    return min(points, key=lambda p: p.loss)


class PartError(ValueError):
    """A sweep part that cannot be merged (another version or recipe, a width twice)."""


def recipe_fingerprint(recipe: Recipe) -> dict[str, object]:
    """What a part must share with the code to be merged: the recipe without its thread
    count (threads change the losses by float rounding only)."""
    fields = asdict(recipe)
    fields.pop("threads")
    return fields


# The version of the training code the sweep tables were made with: bumped when the
# trainer, the model or the sweep's evaluation change, not when the environment's version
# moves for something the clean recipe does not see (1.5.0 drew a token-noise rate at
# prepare: the sweep documents the recipe on clean text).
TRAINING_VERSION = "1.4.0"


def _spec_version() -> str:
    return TRAINING_VERSION


def run_sweep(profile_name: str, widths: tuple[int, ...], out: Path | None = None,
              threads: int | None = None, flops: float | None = None) -> dict[str, object]:
    """Train every width on the budget line (the profile's nominal budget, or `flops` to
    explore another: such a table is refused by the merge into the profile's); return the
    table (also written to disk)."""
    profile = load_spec("small_scaling_law").profile(profile_name)
    with corpus_splits(profile.typed.tokenizer) as splits:
        return _sweep(profile_name, profile, splits, widths, out, threads, flops)


def _sweep(profile_name: str, profile: Profile, splits: TokenSplits, widths: tuple[int, ...],
           out: Path | None, threads: int | None, flops: float | None) -> dict[str, object]:
    params: ScalingParams = profile.typed
    recipe = Recipe.of(params, splits.vocab_size, flops)
    if threads:  # losses differ from the profile's thread count by float rounding only
        recipe = replace(recipe, threads=threads)
    train_tokens = splits.tokens("train")
    windows = params.sweep_windows
    rows = spread_rows(splits.tokens("test"), recipe.block_size, windows)
    points: list[SweepPoint] = []
    curves: dict[str, list[list[float]]] = {}
    for n_embd in widths:
        iters = recipe.iters_for(n_embd, recipe.target_flops)
        start = time.monotonic()
        result = train_config(recipe, train_tokens, rows, n_embd, iters)
        points.append(SweepPoint(n_embd, iters, recipe.flops(n_embd, iters), result.final_loss,
                                 round(time.monotonic() - start, 1)))
        curves[str(n_embd)] = [[step, loss] for step, loss in result.curve]
        print(f"n_embd={n_embd} max_iters={iters} loss={result.final_loss:.4f} "
              f"({points[-1].seconds:.0f} s)", flush=True)
    table: dict[str, object] = {
        "profile": profile_name, "target_flops": recipe.target_flops,
        "eval": f"{len(rows)} windows spread evenly over the test split",
        "machine": f"{platform.machine()} {platform.processor()} torch {torch.__version__}, "
                   f"torch threads: {recipe.threads}",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "version": _spec_version(),
        "recipe": recipe_fingerprint(recipe),
        "train_tokens": len(train_tokens),
        "points": [p.__dict__ for p in points],
        # The training loss along each run (about 50 points), for divergence and repetition
        # of the train split (train_tokens) to be read off.
        "curves": curves,
    }
    (out or sweep_path(profile_name)).write_text(json.dumps(table, indent=1) + "\n")
    return table


def merge_parts(profile_name: str, parts: list[Path], out: Path | None = None,
                ) -> dict[str, object]:
    """One table from part files (a width or more each), refusing any part made by another
    training version (TRAINING_VERSION) or another recipe than this code's, or a width
    twice."""
    if not parts:
        raise PartError("no part files to merge")
    params: ScalingParams = load_spec("small_scaling_law").profile(profile_name).typed
    tables = []
    for path in parts:
        try:
            table = json.loads(path.read_text())
            want = recipe_fingerprint(Recipe.of(params, int(table["recipe"]["vocab_size"])))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PartError(f"{path}: not a sweep part of this version ({exc})") from exc
        if table.get("profile") != profile_name:
            raise PartError(f"{path}: a part of profile {table.get('profile')!r}, "
                            f"not {profile_name!r}")
        if table.get("version") != _spec_version():
            raise PartError(f"{path}: made by small_scaling_law {table.get('version')}, "
                            f"this code is {_spec_version()}: run that width again")
        if table["recipe"] != want:
            differ = sorted(k for k in want if table["recipe"].get(k) != want[k])
            raise PartError(f"{path}: made with another recipe ({', '.join(differ)} differ): "
                            "run that width again")
        tables.append(table)
    points = [SweepPoint(**p) for t in tables for p in t["points"]]
    widths = [p.n_embd for p in points]
    if len(set(widths)) != len(widths):
        raise PartError(f"a width is in two parts: {sorted(widths)}")
    order = sorted(range(len(points)), key=lambda i: points[i].n_embd)
    first = tables[0]
    merged: dict[str, object] = {
        **{k: v for k, v in first.items() if k not in ("points", "curves")},
        "date": max(str(t["date"]) for t in tables),
        "machine": "; ".join(sorted({str(t["machine"]) for t in tables})),
        "points": [points[i].__dict__ for i in order],
        "curves": {k: v for t in tables for k, v in t.get("curves", {}).items()},
    }
    (out or sweep_path(profile_name)).write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def run_sweep_in_processes(profile_name: str, widths: tuple[int, ...], processes: int,
                           out: Path | None = None, threads: int | None = None,
                           per_gpu: int = 1) -> dict[str, object]:
    """The same sweep with one width per process, `processes` at a time; each process gets
    a GPU slot (CUDA_VISIBLE_DEVICES: slot k uses GPU k // per_gpu), which a cpu profile
    ignores: `per_gpu` widths share a GPU (small models leave most of one idle; their
    seconds are then measured side by side). The parts are merged into one table."""
    params: ScalingParams = load_spec("small_scaling_law").profile(profile_name).typed
    if params.device == "cuda" and torch.cuda.device_count() * per_gpu < processes:
        raise SystemExit(f"--processes {processes} needs as many GPUs (or --per-gpu); "
                         f"{torch.cuda.device_count()} visible")
    free: queue.Queue[int] = queue.Queue()
    for slot in range(processes):
        free.put(slot // per_gpu)
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        def one(width: int) -> Path:
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
            return part

        with ThreadPoolExecutor(max_workers=processes) as pool:
            parts = list(pool.map(one, widths))
        table = merge_parts(profile_name, parts, out)
    table["machine"] = f"{table['machine']}, {processes} processes (a width each" + (
        f", {per_gpu} to a GPU)" if per_gpu > 1 and params.device == "cuda" else ")")
    (out or sweep_path(profile_name)).write_text(json.dumps(table, indent=1) + "\n")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--widths", type=int, nargs="*")
    parser.add_argument("--out", type=Path, help="write the table here instead")
    parser.add_argument("--threads", type=int, help="torch threads (default: the profile's)")
    parser.add_argument("--flops", type=float, help="explore another budget than the "
                        "profile's (a table the merge into the profile's refuses)")
    parser.add_argument("--processes", type=int, default=1,
                        help="train this many widths at once, a process each (and a GPU "
                        "each on a machine with several)")
    parser.add_argument("--per-gpu", type=int, default=1,
                        help="with --processes: this many widths share one GPU")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="PART",
                        help="merge part files (each made with --widths ... --out PART) "
                        "into the profile's table instead of training")
    args = parser.parse_args()
    widths = tuple(args.widths or DEFAULT_WIDTHS[args.profile])
    if args.flops and (args.merge or args.processes > 1):
        raise SystemExit("sweep: --flops explores one process's widths (no --merge, no "
                         "--processes)")
    if args.merge:
        try:
            merge_parts(args.profile, args.merge, args.out)
        except PartError as exc:
            raise SystemExit(f"sweep: {exc}") from exc
    elif args.processes > 1:
        run_sweep_in_processes(args.profile, widths, args.processes, args.out, args.threads,
                               args.per_gpu)
    else:
        run_sweep(args.profile, widths, args.out, args.threads, args.flops)


if __name__ == "__main__":
    main()
