"""Copying the base model ties with it. The golden bands (the start, best-of-2 with the
judge then fine-tuning on the winners, about 0; the reference, rounds of best-of-8
tournaments and fine-tuning, about 1; both built in the sandbox with the judge service) are
declared in degenerate.py (GOLDEN) and checked by the generic test,
tests/environments/test_golden_all_environments.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.sandbox.bwrap import bwrap_available

ScoreFn = Callable[[Path], ScoreResult]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")]


def normalized(spec: EnvironmentSpec, profile: Profile, result: ScoreResult) -> float:
    return normalize(result.raw, resolve_anchors(spec, profile), spec.direction)




def test_the_base_model_is_no_better_than_the_start(
        chat_spec: EnvironmentSpec, chat_cpu: Profile, chat_assets: Path, chat_score: ScoreFn,
        tmp_path: Path) -> None:
    """Copying the first opponent (the base model, which the agent has) ties with it. Also
    the cpu check of degenerate.py's copy_base_model policy (the same file, scored by the
    same scorer; merged for issue 28: the generic test runs that policy on gpu only)."""
    solution = tmp_path / "copy"
    solution.mkdir()
    (solution / "model.pth").write_bytes((chat_assets / "public" / "base_model.pth")
                                         .read_bytes())
    result = chat_score(solution)
    assert result.valid, result.message
    assert normalized(chat_spec, chat_cpu, result) <= 0.0, result.details
    assert abs(result.details["vs_base"] - 0.5) < 0.05, result.details
