"""The prepared data the trusted side reads (protected/): the public train and validation
splits for experiments, and the secret held-out windows for the final score."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rebench.core.errors import ScorerFault

META = "meta.json"


@dataclass(frozen=True)
class ProtectedData:
    """Token arrays as read-only memmaps/arrays, and the vocabulary size of the tokenizer."""

    train: np.ndarray
    val_rows: np.ndarray
    heldout_rows: np.ndarray
    vocab_size: int


def load_protected(assets_dir: Path) -> ProtectedData:
    """Read protected/; a missing or broken file is our fault (ScorerFault), not the agent's."""
    root = assets_dir / "protected"
    try:
        meta = json.loads((root / META).read_text())
        train = np.memmap(root / "train.bin", dtype=np.uint16, mode="r")
        val_rows = np.load(root / "val_rows.npy")
        heldout = np.load(root / "heldout_rows.npy")
        return ProtectedData(train, val_rows, heldout, int(meta["vocab_size"]))
    except (OSError, KeyError, ValueError) as exc:
        raise ScorerFault(f"small_scaling_law: protected assets unreadable: {exc}") from exc

