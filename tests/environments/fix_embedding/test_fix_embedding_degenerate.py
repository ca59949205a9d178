"""Degenerate policies (degenerate.py): the generic test
(tests/environments/test_degenerate_policies.py) scores every one officially against the
spec's anchors; here the one the clamp exists for is compared with the start on the same
prepare, exactly, by the scorer itself.

Before 2.1.0 the unigram predictor (public token frequencies for every input) scored
about 0.36 normalized on cpu: its loss (6.26) is far below the start's (7.39)."""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rebench.core.discovery import environment_dir
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.environments.fix_embedding import degenerate
from rebench.environments.fix_embedding.scoring import input_free_loss
from rebench.scoring.declarations import Degenerate, PolicyContext

BY_NAME = {p.name: p for p in degenerate.POLICIES}


def _make(policy: Degenerate, spec: EnvironmentSpec, profile: Profile, assets: Path,
          tmp: Path) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"{policy.name}-", dir=tmp))
    workspace, scratch = folder / "workspace", folder / "scratch"
    shutil.copytree(environment_dir(spec.id) / "starting", workspace)
    scratch.mkdir()
    policy.make(PolicyContext(spec, profile, assets / "public", workspace, scratch))
    return Path(workspace)


@pytest.fixture
def scored(fe_spec: EnvironmentSpec, fe_cpu: Profile, fe_assets: Path, tmp_path: Path,
           fe_score: Callable[[Path], ScoreResult]) -> Callable[[str], ScoreResult]:
    def run(name: str) -> ScoreResult:
        return fe_score(_make(BY_NAME[name], fe_spec, fe_cpu, fe_assets, tmp_path))
    return run


def test_input_free_loss_is_the_entropy_of_the_targets() -> None:
    data = np.array([0, 1, 1, 2, 2, 2, 2, 3] * 8, dtype=np.uint16)
    # windows of 3 tokens starting at 0..60: the targets are every token after a start
    from rebench.assets.train import eval_windows
    starts = eval_windows(len(data), 3, 5)
    targets = np.concatenate([data[s + 1: s + 4] for s in starts]).astype(np.int64)
    p = np.bincount(targets) / len(targets)
    expected = -sum(x * math.log(x) for x in p if x > 0)
    assert input_free_loss(data, 5, 3) == pytest.approx(expected)


def test_the_unigram_policy_is_what_the_clamp_is_for(
        scored: Callable[[str], ScoreResult]) -> None:
    """Its loss is below the start's (it would have won), and it scores the start's raw."""
    start, unigram = scored("corrupted_unchanged"), scored("unigram_predictor")
    assert unigram.details["loss"] < start.details["loss"] - 0.5
    assert unigram.raw == start.raw
