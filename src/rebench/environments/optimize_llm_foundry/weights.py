"""Trained weights as data: safetensors read from bytes (never a pickle, never through a
link), checked against the expected tensors, and the distance that decides validity."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load as load_safetensors

from rebench.sandbox.safefs import UnsafePathError, read_beneath

WEIGHTS_FILE = "trained_model/model.safetensors"

Expected = dict[str, tuple[tuple[int, ...], torch.dtype]]


@dataclass(frozen=True)
class Unusable:
    """Why the trained weights cannot be scored: `reason`, a code of the environment's
    feedback schema (the agent sees it), and `text`, the full explanation (private: the
    weights were written by code that ran on held-out data, so the text may carry what
    that code chose, e.g. an exception message built from a tensor name)."""

    reason: str
    text: str

    def __str__(self) -> str:
        return self.text


def expected_of(reference: dict[str, torch.Tensor]) -> Expected:
    """Key -> (shape, dtype) of the reference weights."""
    return {k: (tuple(v.shape), v.dtype) for k, v in reference.items()}


def read_weights(root: Path, expected: Expected) -> dict[str, torch.Tensor] | Unusable:
    """The tensors of `root`/trained_model/model.safetensors, or why they are unusable
    (reason `no_weights` or `bad_weights`)."""
    n_bytes = sum(math.prod(shape) * 4 for shape, _ in expected.values())
    try:
        data = read_beneath(root, WEIGHTS_FILE, max_bytes=n_bytes + (1 << 20))
    except FileNotFoundError:
        return Unusable("no_weights", f"{WEIGHTS_FILE} was not written by finetune.sh")
    except UnsafePathError:
        return Unusable("bad_weights", f"{WEIGHTS_FILE} (or a folder above it) is a link or "
                        "not a regular file")
    except ValueError:
        return Unusable("bad_weights", f"{WEIGHTS_FILE} is larger than the fp32 model")
    try:
        state = dict(load_safetensors(data))
    except Exception as exc:  # any malformed file: an invalid submission
        return Unusable("bad_weights", f"{WEIGHTS_FILE} is not a safetensors file: "
                        f"{type(exc).__name__}: {exc}"[:400])
    problem = check_weights(state, expected)
    return state if problem is None else Unusable("bad_weights", problem)


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

