"""nanogpt_chat_rl end to end on one profile: prepare, build the starting and the reference
solution in the sandbox (with the judge service), score each officially, then measure the
score's noise: the raw score of each model (and of the base model) under scoring seeds
0-4, the opponents' responses sampled again for each seed from the stored opponents (the
scorer uses seed 0). The summary JSON is rewritten after every step.

    PYTHONPATH=src python benchmarks/chat_rl.py --profile cpu --out chat-cpu.json

Used for docs/benchmarks/nanogpt_chat_rl.md and the anchors in environment.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from rebench.assets.gpt import GPTConfig
from rebench.assets.submitted import load_submitted_gpt
from rebench.core.discovery import load_spec
from rebench.core.hardware import fingerprint
from rebench.environments.nanogpt_chat_rl.prepare import opponent_responses
from rebench.environments.nanogpt_chat_rl.scoring import OPPONENTS, heldout_prompts, score_model
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.sandbox import Isolation
from rebench.scoring import ScoreKind, ScoringContext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_anchors import build  # the benchmark folder is not a package


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--isolation", choices=("bwrap", "local"), default="bwrap")
    parser.add_argument("--reuse", action="store_true", help="keep intact prepared assets")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default="chat-summary.json")
    args = parser.parse_args()
    spec = load_spec("nanogpt_chat_rl")
    profile = spec.profile(args.profile)
    isolation = Isolation.BWRAP if args.isolation == "bwrap" else Isolation.LOCAL
    out = Path(args.out)
    summary: dict[str, object] = {"version": spec.version, "profile": profile.name,
                                  "isolation": isolation.value,
                                  "hardware": fingerprint(profile.gpus),
                                  "python": sys.version.split()[0], "torch": torch.__version__,
                                  "cpus": os.cpu_count()}

    def save() -> None:
        out.write_text(json.dumps(summary, indent=2, default=str))

    t0 = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - t0:7.1f}s] {message}", flush=True)

    assets = prepare_environment(spec, profile, force=not args.reuse,
                                 progress=lambda m, f: say(m))
    summary["prepare_s"] = round(time.monotonic() - t0, 1)
    record = json.loads((assets / "protected" / "eval.json").read_text())
    summary["eval.json"] = record
    save()
    cfg = GPTConfig.from_json(record["config"])
    with tempfile.TemporaryDirectory() as tmp:
        models = {"base": assets / "public" / "base_model.pth"}
        for name in ("starting", "reference"):
            t1 = time.monotonic()
            ws = build(spec, profile, name, Path(tmp) / name / "ws", isolation)
            built = round(time.monotonic() - t1, 1)
            snap = Path(tmp) / name / "snap"
            snapshot_solution(spec, ws, snap)
            t2 = time.monotonic()
            result = official_score(spec, profile, snap, isolation)
            summary[name] = {"build_s": built, "score_s": round(time.monotonic() - t2, 1),
                             "raw": result.raw, "message": result.message,
                             "details": result.details}
            say(f"{name}: built in {built} s, {result.to_json()}")
            models[name] = snap / "model.pth"
            save()
        noise: dict[str, object] = {}
        ctx = ScoringContext(spec, profile, Path(tmp), assets, Path(tmp), isolation,
                             kind=ScoreKind.FINAL)
        prompts = heldout_prompts(assets)
        device = "cuda" if profile.gpus > 0 and torch.cuda.is_available() else "cpu"
        opponents_by_seed = []
        for seed in range(args.seeds):
            opponents = {}
            for name, path in (("base", assets / "public" / "base_model.pth"),
                               ("labelled", assets / "protected" / "labelled_model.pth")):
                model = load_submitted_gpt(path, cfg)
                assert not isinstance(model, str), model
                opponents[name] = opponent_responses(model.to(device), prompts, seed)
            opponents_by_seed.append(opponents)
        for name, path in models.items():
            model = load_submitted_gpt(path, cfg)
            assert not isinstance(model, str), model
            if profile.gpus > 0 and torch.cuda.is_available():
                model = model.cuda()
            raws, correct = [], []
            for seed, opponents in enumerate(opponents_by_seed):
                rates, right, _ = score_model(model, ctx, seed, opponents)
                raws.append(statistics.mean(rates[o] for o in OPPONENTS))
                correct.append(right)
            noise[name] = {"raw_per_seed": raws, "mean": statistics.mean(raws),
                           "sd": statistics.stdev(raws) if len(raws) > 1 else 0.0,
                           "accuracy_per_seed": correct}
            say(f"noise {name}: {noise[name]}")
        summary["noise"] = noise
    summary["total_s"] = round(time.monotonic() - t0, 1)
    save()
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
