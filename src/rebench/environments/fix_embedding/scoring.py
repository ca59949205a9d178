"""Score fixed_model.pth: load it as data (torch.load with weights_only=True: no code of
the agent runs), check it is exactly the large model's architecture, and measure its
next-token loss on held-out tokens the agent never saw. raw = ln(min(loss, U) - c), where
U is the loss of the best input-free prediction on the same tokens (their unigram entropy).

Memory stays bounded before anything is loaded: the file's size is checked against the
fp32 model (assets.submitted.MAX_SIZE_FACTOR), then the archive's declared storages
(assets.checkpoint.check_archive), and only then torch.load runs. An unusable file gives
a reason code of environment.FEEDBACK; the full text stays in the private details."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import numpy as np
import torch

from rebench.assets.gpt import GPT, GPTConfig
from rebench.assets.submitted import (
    MAX_SIZE_FACTOR,
    MAX_STORAGE_FACTOR,
    check_state,
    expected_state,
    read_state,
)
from rebench.assets.train import eval_windows, evaluate
from rebench.core.score import ScoreResult
from rebench.scoring.context import ScoringContext
from rebench.scoring.kit import log_loss_score, rejected_loss, torch_device

SOLUTION_FILE = "fixed_model.pth"


def _state_problem(state: dict[str, object], cfg: GPTConfig) -> tuple[str, str] | None:
    """(reason code, private text) when `state` is not exactly the model's finite fp32
    weights, else None."""
    expected = expected_state(cfg)
    problem = check_state(state, expected)
    if problem is None:
        return None
    # check_state reports the first problem; the architecture is wrong unless every tensor
    # has the expected type, shape and dtype (then it can only be a non-finite value).
    shaped = set(state) == set(expected) and all(
        type(v) is torch.Tensor and v.layout == torch.strided
        and (tuple(v.shape), v.dtype) == expected[k] for k, v in state.items())
    return ("nonfinite_weights" if shaped else "wrong_architecture"), problem


def load_model(ctx: ScoringContext, cfg: GPTConfig) -> GPT | tuple[str, str]:
    """The submitted weights in the scorer's own model (eval mode, CPU), or (reason code,
    private text) why they cannot be. The size checks come before any loading."""
    path = ctx.solution_dir / SOLUTION_FILE
    if path.is_symlink() or not path.is_file():
        return "no_model", f"{SOLUTION_FILE} not found"
    n_bytes = sum(math.prod(shape) * 4 for shape, _ in expected_state(cfg).values())
    max_file = MAX_SIZE_FACTOR * n_bytes + (1 << 20)
    if path.stat().st_size > max_file:
        return "too_large", f"{SOLUTION_FILE} is {path.stat().st_size} bytes (> {max_file})"
    state = read_state(path, max_file, MAX_STORAGE_FACTOR * n_bytes)
    if isinstance(state, str):  # refused by the archive check, or torch.load failed
        return "unreadable", state
    problem = _state_problem(state, cfg)
    if problem is not None:
        return problem
    model = GPT(cfg)
    model.load_state_dict(state, strict=True)
    return model.eval()


def input_free_loss(data: np.ndarray, n_windows: int, block: int) -> float:
    """The lowest loss a prediction that ignores its input can get on the evaluated
    tokens: the entropy (nats) of their own unigram distribution. For any fixed q,
    the mean cross-entropy is this entropy plus KL(p || q) >= it. (issue 26: a table of
    the public split's token frequencies, the same for every input, scored 0.36
    normalized against a start at 0.97 x uniform; nothing below this loss can.)"""
    starts = eval_windows(len(data), block, n_windows)
    targets = np.concatenate([np.asarray(data[s + 1: s + block + 1], dtype=np.int64)
                              for s in starts])
    p = np.bincount(targets) / len(targets)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def score(ctx: ScoringContext) -> ScoreResult:
    """ln(held-out loss - c) of the submitted weights; NaN with a message if unusable."""
    start = time.monotonic()
    protected = ctx.protected_dir
    record = json.loads((protected / "eval.json").read_text())
    cfg = GPTConfig.from_json(record["config"])
    model = load_model(ctx, cfg)
    if isinstance(model, tuple):
        reason, text = model
        return ScoreResult.invalid(reason, problem=text)
    test = np.memmap(protected / "test.bin", dtype=np.uint16, mode="r")
    loss = evaluate(model, test, int(record["eval_windows"]), int(record["eval_batch_size"]),
                    torch_device(ctx.profile, exact_fp32=True))
    floor = float(record["loss_floor"])
    details: dict[str, Any] = {"loss_floor": floor, "eval_windows": int(record["eval_windows"]),
                               "eval_s": round(time.monotonic() - start, 3)}
    rejected = rejected_loss(loss, floor, details, nonfinite="nonfinite_loss")
    if rejected is not None:
        return rejected
    # A loss above what an input-free table gets counts as that table's: a model that
    # knows less about its input than token frequencies cannot rank above one that ignores
    # its input, and no input-free prediction can rank above the start (README).
    unigram = input_free_loss(test, int(record["eval_windows"]), cfg.block_size)
    details["input_free_loss"] = unigram
    # On a corpus whose token frequencies alone reach below the floor (a user's tiny
    # corpus), the ceiling would leave no room above c: the loss is scored as it is.
    ceiling = unigram if unigram > floor else math.inf
    return log_loss_score(loss, floor, details, nonfinite="nonfinite_loss", ceiling=ceiling)
