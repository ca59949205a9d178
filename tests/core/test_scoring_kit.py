"""The environment kit (rebench.scoring.kit): the ln(loss - c) score with its floor and
ceiling, the device choice, and the prepared assets' two halves."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from rebench.core.spec import Profile
from rebench.scoring.kit import (
    log_loss_score,
    protected_dir,
    public_dir,
    rejected_loss,
    torch_device,
)


def _profile(gpus: int) -> Profile:
    return Profile("cpu", "t", 1.0, 0.0, "any", gpus=gpus)


def test_log_loss_score_is_ln_of_the_loss_above_the_floor() -> None:
    details: dict[str, Any] = {"eval_s": 1.0}
    result = log_loss_score(3.25, 1.5, details, nonfinite="not_finite")
    assert result.raw == math.log(3.25 - 1.5)
    assert result.message == {"loss": 3.25, "score": round(math.log(1.75), 4)}
    assert result.details == {"eval_s": 1.0, "loss": 3.25}


def test_the_ceiling_caps_the_scored_and_the_shown_loss() -> None:
    """Above the ceiling the agent sees the ceiling: the loss itself, a function of the
    held-out tokens (an input-free model betting on one token reads back its share), is
    kept in the private details only."""
    shown = set()
    for loss in (9.0, 7.25, 4.0001):
        result = log_loss_score(loss, 1.5, {}, nonfinite="not_finite", ceiling=4.0)
        assert result.raw == math.log(4.0 - 1.5)
        assert result.details["loss"] == loss
        shown.add(tuple(sorted(result.message.items())))
    assert shown == {(("loss", 4.0), ("score", round(math.log(2.5), 4)))}
    assert log_loss_score(3.0, 1.5, {}, nonfinite="x", ceiling=4.0).message["loss"] == 3.0
    assert log_loss_score(3.0, 1.5, {}, nonfinite="x", ceiling=4.0).raw == math.log(1.5)
    with pytest.raises(ValueError, match="not above the floor"):
        log_loss_score(3.0, 1.5, {}, nonfinite="x", ceiling=1.5)


@pytest.mark.parametrize("loss", [math.nan, math.inf, -math.inf])
def test_a_nonfinite_loss_is_invalid_with_the_declared_reason(loss: float) -> None:
    result = log_loss_score(loss, 1.5, {"a": 1}, nonfinite="nonfinite_loss")
    assert math.isnan(result.raw)
    assert result.message == {"error": "nonfinite_loss"}
    assert result.details == {"a": 1}


@pytest.mark.parametrize("loss", [1.5, 1.0, -3.0])
def test_a_loss_at_or_below_the_floor_is_invalid(loss: float) -> None:
    result = log_loss_score(loss, 1.5, {}, nonfinite="x")
    assert math.isnan(result.raw)
    assert result.message == {"error": "below_floor"}
    assert result.details == {"loss": loss}
    assert rejected_loss(1.6, 1.5, {}, nonfinite="x") is None


def test_no_gpu_asked_is_the_cpu() -> None:
    assert torch_device(_profile(0)) == torch.device("cpu")
    assert torch_device(_profile(0), exact_fp32=True) == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert torch_device(_profile(1)).type == expected


def test_the_asset_halves() -> None:
    assert public_dir(Path("/a")) == Path("/a/public")
    assert protected_dir(Path("/a")) == Path("/a/protected")
