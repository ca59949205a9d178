"""What environments repeat, written once: where the prepared assets' two halves live,
which device trusted torch code runs on, and the `ln(loss - c)` score with its floor.

    from rebench.scoring.kit import log_loss_score, protected_dir, torch_device
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebench.core.score import ScoreResult
from rebench.core.spec import Profile

if TYPE_CHECKING:
    import torch

# The two halves of an environment's prepared assets (harness/prepare.py makes both):
# `public/` is what the agent's workspace may be given, `protected/` (held-out data,
# secrets drawn at prepare) only trusted code reads and no sandbox mounts.
PUBLIC = "public"
PROTECTED = "protected"


def public_dir(assets_dir: Path) -> Path:
    """The public half of the prepared assets in `assets_dir`."""
    return assets_dir / PUBLIC


def protected_dir(assets_dir: Path) -> Path:
    """The protected half of the prepared assets in `assets_dir` (trusted code only)."""
    return assets_dir / PROTECTED


def torch_device(profile: Profile, *, exact_fp32: bool = False) -> torch.device:
    """cuda when the profile asks for a GPU and torch sees one, else cpu. `exact_fp32`
    turns TF32 off for matmuls and cuDNN: a held-out evaluation must not depend on the
    GPU's fast-math mode (a score is compared across machines)."""
    import torch  # here, not at the top: the folder helpers above need no torch

    if profile.gpus > 0 and torch.cuda.is_available():
        if exact_fp32:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        return torch.device("cuda")
    return torch.device("cpu")


def rejected_loss(loss: float, floor: float, details: dict[str, Any], *,
                  nonfinite: str) -> ScoreResult | None:
    """The invalid result for a held-out `loss` that `ln(loss - floor)` cannot score, or
    None: reason `nonfinite` (the environment's declared code) for NaN or infinity,
    `below_floor` at or under the floor. A finite loss is added to `details`."""
    if not math.isfinite(loss):
        return ScoreResult.invalid(nonfinite, **details)
    details["loss"] = loss
    if loss <= floor:
        return ScoreResult.invalid("below_floor", **details)
    return None


def log_loss_score(loss: float, floor: float, details: dict[str, Any], *, nonfinite: str,
                   ceiling: float = math.inf) -> ScoreResult:
    """`ln(min(loss, ceiling) - floor)` as the raw score (lower is better), the scored
    loss and the score rounded to 4 places as the message; invalid as `rejected_loss`
    says. `ceiling` (above the floor) caps the loss that is scored (e.g. at what an
    input-free prediction gets), and the message shows the capped loss: a loss above the
    ceiling is a function of the held-out tokens that the score does not carry (an
    input-free model that bets on one token would read back that token's held-out share),
    so it stays in the private details."""
    if not ceiling > floor:
        raise ValueError(f"ceiling {ceiling} is not above the floor {floor}")
    rejected = rejected_loss(loss, floor, details, nonfinite=nonfinite)
    if rejected is not None:
        return rejected
    scored = min(loss, ceiling)
    raw = math.log(scored - floor)
    return ScoreResult(raw=raw, message={"loss": round(scored, 4), "score": round(raw, 4)},
                       details=details)
