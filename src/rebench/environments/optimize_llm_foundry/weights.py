"""Trained weights as data: safetensors read from bytes (never a pickle, never through a
link), checked against the expected tensors, and the distance that decides validity."""

from __future__ import annotations

import math
from pathlib import Path

import torch
from safetensors.torch import load as load_safetensors

from rebench.sandbox.safefs import UnsafePathError, read_beneath

WEIGHTS_FILE = "trained_model/model.safetensors"

Expected = dict[str, tuple[tuple[int, ...], torch.dtype]]


def expected_of(reference: dict[str, torch.Tensor]) -> Expected:
    """Key -> (shape, dtype) of the reference weights."""
    return {k: (tuple(v.shape), v.dtype) for k, v in reference.items()}


def read_weights(root: Path, expected: Expected) -> dict[str, torch.Tensor] | str:
    """The tensors of `root`/trained_model/model.safetensors, or why they are unusable."""
    n_bytes = sum(math.prod(shape) * 4 for shape, _ in expected.values())
    try:
        data = read_beneath(root, WEIGHTS_FILE, max_bytes=n_bytes + (1 << 20))
    except FileNotFoundError:
        return f"{WEIGHTS_FILE} was not written by finetune.sh"
    except UnsafePathError:
        return f"{WEIGHTS_FILE} (or a folder above it) is a link or not a regular file"
    except ValueError:
        return f"{WEIGHTS_FILE} is larger than the fp32 model"
    try:
        state = dict(load_safetensors(data))
    except Exception as exc:  # any malformed file: an invalid submission
        return f"{WEIGHTS_FILE} is not a safetensors file: {type(exc).__name__}: {exc}"[:400]
    return check_weights(state, expected) or state


def check_weights(state: dict[str, torch.Tensor], expected: Expected) -> str | None:
    """None when `state` has exactly the expected tensors, else what is wrong."""
    missing, extra = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or extra:
        return (f"{WEIGHTS_FILE}: tensor names differ from the model's: missing "
                f"{missing[:5]}, unexpected {extra[:5]}")
    for key, (shape, dtype) in expected.items():
        value = state[key]
        if tuple(value.shape) != shape or value.dtype != dtype:
            return (f"{WEIGHTS_FILE}: {key} is {value.dtype} {tuple(value.shape)}, expected "
                    f"{dtype} {shape}")
        if not bool(torch.isfinite(value).all()):
            return f"{WEIGHTS_FILE}: {key} contains NaN or infinite values"
    return None


def norm_distance(state: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]) -> float:
    """Sum over tensors of the L2 norm of (weights - reference), in float64."""
    return float(sum(torch.linalg.vector_norm(state[k].double() - reference[k].double())
                     for k in reference))

