"""The prepared data the trusted side reads (protected/): the public train and validation
splits for experiments, and the secret held-out windows for the final score."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rebench.assets.data import TokenSplits, offline_token_splits
from rebench.core.errors import ScorerFault
from rebench.scoring.kit import protected_dir

META = "meta.json"
LSTAR = "lstar.json"  # L* measured at prepare on this prepare's drawn setting
# Every training on the held-out windows that the prepare ran (the L* widths, the starting
# answer, the reference's answer): the scorer's loss for an answer of the same shape.
TRAINED = "trained.json"


@dataclass(frozen=True)
class ProtectedData:
    """Token arrays as read-only memmaps/arrays, and the vocabulary size of the tokenizer."""

    train: np.ndarray
    val_rows: np.ndarray
    heldout_rows: np.ndarray
    vocab_size: int
    target_flops: float  # this prepare's drawn budget


def load_protected(assets_dir: Path) -> ProtectedData:
    """Read protected/; a missing or broken file is our fault (ScorerFault), not the agent's."""
    root = protected_dir(assets_dir)
    try:
        meta = json.loads((root / META).read_text())
        train = np.memmap(root / "train.bin", dtype=np.uint16, mode="r")
        val_rows = np.load(root / "val_rows.npy")
        heldout = np.load(root / "heldout_rows.npy")
        return ProtectedData(train, val_rows, heldout, int(meta["vocab_size"]),
                             float(meta["target_flops"]))
    except (OSError, KeyError, ValueError) as exc:
        raise ScorerFault(f"small_scaling_law: protected assets unreadable: {exc}") from exc


def load_l_star(assets_dir: Path) -> float:
    """The best loss the prepare measured on the budget line of its drawn setting."""
    try:
        points = json.loads((protected_dir(assets_dir) / LSTAR).read_text())["points"]
        return float(min(float(p["loss"]) for p in points))
    except (OSError, KeyError, ValueError, TypeError) as exc:
        raise ScorerFault(f"small_scaling_law: no L* in the prepared assets ({exc}); "
                          "prepare the environment again") from exc


def load_trained(assets_dir: Path) -> dict[tuple[int, int], float]:
    """The held-out loss of each (n_embd, max_iters) the prepare trained at the drawn
    budget, with the scorer's trainer, seed and windows. Training is deterministic on a
    profile's device and thread count, so the scorer reads an answer of one of these shapes
    instead of training it again (the starting answer's every t=0 score, the reference's);
    a prepare made before this file existed has none (an empty table: every answer
    trains)."""
    path = protected_dir(assets_dir) / TRAINED
    if not path.is_file():
        return {}
    try:
        rows = json.loads(path.read_text())["trained"]
        return {(int(r["n_embd"]), int(r["max_iters"])): float(r["loss"]) for r in rows}
    except (OSError, KeyError, ValueError, TypeError) as exc:
        raise ScorerFault(f"small_scaling_law: {TRAINED} unreadable ({exc}); "
                          "prepare the environment again") from exc


def write_trained(assets_dir: Path, losses: dict[tuple[int, int], float]) -> None:
    """protected/trained.json (load_trained's table)."""
    rows = [{"n_embd": w, "max_iters": i, "loss": loss}
            for (w, i), loss in sorted(losses.items())]
    (protected_dir(assets_dir) / TRAINED).write_text(json.dumps({"trained": rows}, indent=1))


# This environment's corpus split is fixed, not secret: the agent's answer is three numbers
# that the trusted side trains on protected data, so knowing which text is held out gains it
# nothing, and the sweep's L* and the scorer's loss must be measured on the same split. The
# held-out windows that are scored are drawn at prepare from fresh randomness.
CORPUS_KEY = b"rebench/small_scaling_law/corpus-split"


@contextlib.contextmanager
def corpus_splits(tokenizer: str, parent: Path | None = None) -> Iterator[TokenSplits]:
    """The offline corpus tokenized with `tokenizer`, split with CORPUS_KEY, in a temporary
    folder (under `parent`) that lives as long as the block."""
    with tempfile.TemporaryDirectory(dir=parent, prefix=".corpus-") as tmp:
        yield offline_token_splits(tokenizer, CORPUS_KEY, Path(tmp) / "corpus")
