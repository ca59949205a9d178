"""Score fixed_model.pth: load it as data (torch.load with weights_only=True: no code of
the agent runs), check it is exactly the large model's architecture, and measure its
next-token loss on held-out tokens the agent never saw. raw = ln(loss - c)."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import torch

from rebench.assets.gpt import GPTConfig
from rebench.assets.submitted import load_submitted_gpt
from rebench.assets.train import evaluate
from rebench.core.score import ScoreResult
from rebench.scoring.context import ScoringContext

SOLUTION_FILE = "fixed_model.pth"


def _device(ctx: ScoringContext) -> torch.device:
    if ctx.profile.gpus > 0 and torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False  # exact fp32 evaluation
        torch.backends.cudnn.allow_tf32 = False
        return torch.device("cuda")
    return torch.device("cpu")


def score(ctx: ScoringContext) -> ScoreResult:
    """ln(held-out loss - c) of the submitted weights; NaN with a message if unusable."""
    start = time.monotonic()
    protected = ctx.assets_dir / "protected"
    record = json.loads((protected / "eval.json").read_text())
    cfg = GPTConfig.from_json(record["config"])
    model = load_submitted_gpt(ctx.solution_dir / SOLUTION_FILE, cfg)
    if isinstance(model, str):
        return ScoreResult.invalid(model)
    test = np.memmap(protected / "test.bin", dtype=np.uint16, mode="r")
    loss = evaluate(model, test, int(record["eval_windows"]), int(record["eval_batch_size"]),
                    _device(ctx))
    floor = float(record["loss_floor"])
    # details hold finite numbers only: they are written as strict JSON.
    details = {"loss_floor": floor, "eval_windows": int(record["eval_windows"]),
               "eval_s": round(time.monotonic() - start, 3)}
    if not math.isfinite(loss):
        return ScoreResult.invalid(
            "the model's held-out loss is not finite (its logits overflow float32: are some "
            "weights huge?)", **details)
    details["loss"] = loss
    if loss <= floor:
        return ScoreResult.invalid(
            f"held-out loss {loss:.4f} is at or below the floor c = {floor}: ln(loss - c) "
            "is undefined", **details)
    raw = math.log(loss - floor)
    return ScoreResult(raw=raw, message={"loss": round(loss, 4), "score": round(raw, 4)},
                       details=details)
