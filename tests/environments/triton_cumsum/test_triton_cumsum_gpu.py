"""gpu profile, where a CUDA GPU is present: the protocol works end to end through CUDA IPC,
the reference beats the start, and an early "done" is caught by the in-clock snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from triton_cumsum_helpers import CHEATS

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation

pytestmark = pytest.mark.gpu


def _score(solution: str | Path, tmp_path: Path) -> ScoreResult:
    spec = load_spec("triton_cumsum")
    profile = spec.profile("gpu")
    prepare_environment(spec, profile)
    workspace = tmp_path / "workspace"
    if isinstance(solution, Path):
        workspace.mkdir()
        (workspace / "solution.py").write_text(solution.read_text())
    else:
        materialize_solution(spec, profile, solution, workspace, Isolation.LOCAL)
    snapshot_solution(spec, workspace, tmp_path / "snapshot")
    return official_score(spec, profile, tmp_path / "snapshot", Isolation.LOCAL)


def test_reference_beats_start_on_the_gpu(tmp_path: Path) -> None:
    start = _score("starting", tmp_path / "start")
    reference = _score("reference", tmp_path / "reference")
    assert start.valid and reference.valid, (start.message, reference.message)
    assert reference.raw < start.raw
    assert reference.details["copy_overhead_ms"] > 0


@pytest.mark.parametrize("name", ["early_done_thread.py", "stack_walk.py",
                                  "lying_tensor.py", "wrong_device.py"])
def test_gpu_cheats_are_invalid(name: str, tmp_path: Path) -> None:
    result = _score(CHEATS / name, tmp_path)
    assert not result.valid, result.message
