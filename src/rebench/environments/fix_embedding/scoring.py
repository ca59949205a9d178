"""Score fixed_model.pth: load it as data (torch.load with weights_only=True: no code of
the agent runs), check it is exactly the large model's architecture, and measure its
next-token loss on held-out tokens the agent never saw. raw = ln(loss - c)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rebench.assets.checkpoint import ArchiveRefused, check_archive
from rebench.assets.gpt import GPT, GPTConfig
from rebench.assets.train import evaluate
from rebench.core.score import ScoreResult
from rebench.scoring.context import ScoringContext

SOLUTION_FILE = "fixed_model.pth"
# A submission much larger than the fp32 model is not a state dict of it; refuse to read it.
MAX_SIZE_FACTOR = 3
# Storages may hold more than the model's tensors (a tensor saved as a view keeps its whole
# buffer), but never more than this many times the fp32 model: memory stays bounded.
MAX_STORAGE_FACTOR = 2


def expected_state(cfg: GPTConfig) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Key -> (shape, dtype) of the large model's state dict."""
    return {k: (tuple(v.shape), v.dtype) for k, v in GPT(cfg).state_dict().items()}


def read_state(path: Path, max_file_bytes: int, max_storage_bytes: int) -> dict[str, Any] | str:
    """The state dict in `path`, or a message saying why it cannot be one. Memory stays
    bounded: the archive's declared storages are checked (`check_archive`) before torch
    allocates them."""
    if path.is_symlink() or not path.is_file():
        return f"{SOLUTION_FILE} not found: save the model's state_dict with torch.save"
    size = path.stat().st_size
    if size > max_file_bytes:
        return f"{SOLUTION_FILE} is {size / 1e6:.1f} MB, too large for this model"
    try:
        check_archive(path, max_storage_bytes)
    except ArchiveRefused as exc:
        return f"{SOLUTION_FILE} refused: {exc}"
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # any unreadable or unsafe pickle: an invalid submission
        return (f"{SOLUTION_FILE} could not be loaded with torch.load(weights_only=True): "
                f"{type(exc).__name__}: {str(exc)[:300]}")
    if not isinstance(data, dict):
        return f"{SOLUTION_FILE} must hold a state dict (a dict), not {type(data).__name__}"
    return {str(k).removeprefix("_orig_mod."): v for k, v in data.items()}


def check_state(
    state: dict[str, Any], expected: dict[str, tuple[tuple[int, ...], torch.dtype]]
) -> str | None:
    """None when `state` matches the architecture exactly, else what is wrong."""
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    if missing or extra:
        return (f"state dict keys differ from the large model's: missing {missing[:5]}, "
                f"unexpected {extra[:5]} (architecture must not change)")
    for key, (shape, dtype) in expected.items():
        value = state[key]
        if type(value) is not torch.Tensor or value.layout != torch.strided:
            return f"{key} is not a plain dense tensor"
        if tuple(value.shape) != shape:
            return f"{key} has shape {tuple(value.shape)}, expected {shape}"
        if value.dtype != dtype:
            return f"{key} has dtype {value.dtype}, expected {dtype}"
        if not bool(torch.isfinite(value).all()):
            return f"{key} contains NaN or infinite values"
    return None


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
    expected = expected_state(cfg)
    n_bytes = sum(math.prod(shape) * 4 for shape, _ in expected.values())
    state = read_state(ctx.solution_dir / SOLUTION_FILE, MAX_SIZE_FACTOR * n_bytes + (1 << 20),
                       MAX_STORAGE_FACTOR * n_bytes)
    if isinstance(state, str):
        return ScoreResult.invalid(state)
    problem = check_state(state, expected)
    if problem is not None:
        return ScoreResult.invalid(problem)
    model = GPT(cfg)
    model.load_state_dict(state, strict=True)
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
