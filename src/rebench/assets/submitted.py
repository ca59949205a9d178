"""A submitted state dict of a GPT of fixed shape, read as data: size-checked before torch
allocates anything (checkpoint.check_archive), loaded with weights_only=True (no code runs),
then checked key by key against the shape the scorer expects."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from rebench.assets.checkpoint import ArchiveRefused, check_archive
from rebench.assets.gpt import GPT, GPTConfig

# A submission much larger than the fp32 model is not a state dict of it; refuse to read it.
MAX_SIZE_FACTOR = 3
# Storages may hold more than the model's tensors (a tensor saved as a view keeps its whole
# buffer), but never more than this many times the fp32 model: memory stays bounded.
MAX_STORAGE_FACTOR = 2


def expected_state(cfg: GPTConfig) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Key -> (shape, dtype) of the model's state dict."""
    return {k: (tuple(v.shape), v.dtype) for k, v in GPT(cfg).state_dict().items()}


def read_state(path: Path, max_file_bytes: int, max_storage_bytes: int) -> dict[str, Any] | str:
    """The state dict in `path`, or a message saying why it cannot be one. Memory stays
    bounded: the archive's declared storages are checked (`check_archive`) before torch
    allocates them."""
    name = path.name
    if path.is_symlink() or not path.is_file():
        return f"{name} not found: save the model's state_dict with torch.save"
    size = path.stat().st_size
    if size > max_file_bytes:
        return f"{name} is {size / 1e6:.1f} MB, too large for this model"
    try:
        check_archive(path, max_storage_bytes)
    except ArchiveRefused as exc:
        return f"{name} refused: {exc}"
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # any unreadable or unsafe pickle: an invalid submission
        return (f"{name} could not be loaded with torch.load(weights_only=True): "
                f"{type(exc).__name__}: {str(exc)[:300]}")
    if not isinstance(data, dict):
        return f"{name} must hold a state dict (a dict), not {type(data).__name__}"
    return {str(k).removeprefix("_orig_mod."): v for k, v in data.items()}


def check_state(
    state: dict[str, Any], expected: dict[str, tuple[tuple[int, ...], torch.dtype]]
) -> str | None:
    """None when `state` matches the architecture exactly, else what is wrong."""
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    if missing or extra:
        return (f"state dict keys differ from the model's: missing {missing[:5]}, "
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


def load_submitted_gpt(path: Path, cfg: GPTConfig) -> GPT | str:
    """The GPT of shape `cfg` with the weights in `path` (eval mode, on the CPU), or why
    the file cannot be those weights (a message for the agent)."""
    expected = expected_state(cfg)
    n_bytes = sum(math.prod(shape) * 4 for shape, _ in expected.values())
    state = read_state(path, MAX_SIZE_FACTOR * n_bytes + (1 << 20),
                       MAX_STORAGE_FACTOR * n_bytes)
    if isinstance(state, str):
        return state
    problem = check_state(state, expected)
    if problem is not None:
        return problem
    model = GPT(cfg)
    model.load_state_dict(state, strict=True)
    return model.eval()
