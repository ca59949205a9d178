"""Distances that set optimize_llm_foundry's norm threshold, on prepared assets: each
variant is finetuned on the protected held-out rows and compared with the protected
reference weights (sum over tensors of the L2 norm of the difference).

    PYTHONPATH=src python benchmarks/optimize_llm_foundry_distances.py --profile cpu \
        [--start-runs 2] [--out distances.json]

Variants (cpu): the starting pipeline again (run-to-run drift), the reference pipeline with 1
and 2 threads (float noise of a different decomposition), and the cheap wrong answers: the
base weights unchanged, half the steps (half the rows), half the learning rate, bf16
autocast, and weights trained on the public rows instead of the held-out ones. On gpu the
drift is the reference pipeline run again (`--start-runs` times; GPU kernels are not
deterministic) and the other precision is fp32.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from safetensors.torch import load_file

from rebench.core.discovery import load_spec
from rebench.core.paths import env_cache_dir
from rebench.environments.optimize_llm_foundry.pipeline import (
    lay_out,
    run_local,
    starting_folder,
)
from rebench.environments.optimize_llm_foundry.weights import norm_distance

Edit = Callable[[Path], None]


def _yaml_sub(pattern: str, repl: str) -> Edit:
    def edit(work: Path) -> None:
        path = work / "finetune.yaml"
        path.write_text(re.sub(pattern, repl, path.read_text(), flags=re.M))
    return edit


def _half_rows(work: Path) -> None:
    path = work / "train_data.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]))


def _variant(assets: Path, solution: str, data: Path, edit: Edit | None,
             threads: int | None) -> tuple[float, float]:
    """(distance to the reference weights, seconds) of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        starting_folder(work, assets / "public", solution)
        lay_out(work, assets / "public", data)
        if edit is not None:
            edit(work)
        run = run_local(work, 3600, threads)
        if run.returncode != 0:
            raise RuntimeError(run.output_tail)
        weights = load_file(str(work / "trained_model" / "model.safetensors"))
    reference = load_file(str(assets / "protected" / "reference_model.safetensors"))
    return norm_distance(weights, reference), run.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--start-runs", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    spec = load_spec("optimize_llm_foundry")
    assets = env_cache_dir(spec.id, spec.profile(args.profile).name)
    heldout = assets / "protected" / "heldout_data.jsonl"
    public = assets / "public" / "train_data.jsonl"
    params = spec.profile(args.profile).typed
    half_lr = _yaml_sub(r"^(\s+lr:).*$", rf"\g<1> {params.lr / 2}")
    if params.device == "cuda":
        # Run-to-run drift comes from the reference pipeline run again (nondeterministic GPU
        # kernels); the other precision is plain fp32. Cheapest first: a call may be cut.
        variants: list[tuple[str, str, Path, Edit | None, int | None]] = [
            ("half the steps", "reference", heldout, _half_rows, None),
            ("half the learning rate", "reference", heldout, half_lr, None),
            ("fp32 instead of bf16 autocast", "reference", heldout,
             _yaml_sub(r"^(\s+precision:).*$", r"\1 fp32"), None),
            *[(f"reference run {i + 1}", "reference", heldout, None, None)
              for i in range(args.start_runs)],
            ("trained on the public rows", "reference", public, None, None),
        ]
    else:
        variants = [
            *[(f"starting run {i + 1}", "starting", heldout, None, None)
              for i in range(args.start_runs)],
            ("reference, 1 thread", "reference", heldout, None, 1),
            ("reference, 2 threads", "reference", heldout, None, 2),
            ("half the steps", "reference", heldout, _half_rows, None),
            ("half the learning rate", "reference", heldout, half_lr, None),
            ("bf16 autocast", "reference", heldout,
             _yaml_sub(r"^(\s+precision:).*$", r"\1 amp_bf16"), None),
            ("trained on the public rows", "reference", public, None, None),
        ]
    base = load_file(str(assets / "public" / "base_model" / "model.safetensors"))
    reference = load_file(str(assets / "protected" / "reference_model.safetensors"))
    results: dict[str, dict[str, float]] = {
        "base weights unchanged": {"norm": norm_distance(base, reference)}}
    print(f"{'base weights unchanged':32s} norm {results['base weights unchanged']['norm']:12.6g}")
    for name, solution, data, edit, threads in variants:
        distance, seconds = _variant(assets, solution, data, edit, threads)
        results[name] = {"norm": distance, "seconds": round(seconds, 2)}
        print(f"{name:32s} norm {distance:12.6g}   {seconds:7.1f} s", flush=True)
        if args.out:  # after every variant: a run cut short keeps what it measured
            args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
