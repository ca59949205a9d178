"""The cheats of optimize_llm_foundry that need more than a file in place, scored officially
on the cpu profile with the cheat as finetune.sh (the channel probes of the same folder are
test_foundry_feedback.py's). The cheats that are a file alone are the environment's own
(src/rebench/environments/optimize_llm_foundry/cheats/, declared in degenerate.py's
CHEATS) and are scored by the generic cheat test (tests/environments/
test_degenerate_policies.py). Here: weights trained beforehand and carried in the
workspace (the weights made by this session), a script that never returns (scored with a
short timeout) and a cache kept between two scorings. Nothing of a cheat may outlive its
scoring."""

from __future__ import annotations

import base64
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from env_bench import processes_mentioning
from foundry_helpers import CHEATS, CpuEnv, Scorer

from rebench.core.discovery import load_spec
from rebench.core.feedback import Feedback
from rebench.core.paths import env_cache_dir
from rebench.environments.optimize_llm_foundry.pipeline import lay_out, run_local, starting_folder
from rebench.harness.scoring import snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation
from rebench.scoring.context import ScoringContext

# These compare no wall-clock time (each cheat must come out invalid, the cache probe
# valid): they run in the first pass of `make test`, beside the others, though
# optimize_llm_foundry is a timing environment (tests/suite_split.py).
pytestmark = pytest.mark.untimed

# The channel probes of test_foundry_feedback.py.
PROBES = {"exit_code_channel.sh", "stderr_channel.sh", "timing_channel_invalid.sh",
          "timing_channel_valid.sh", "norm_probe.sh"}
# This module's cheats.
HERE = {"weights_from_workspace.sh", "cache_between_scorings.sh", "hangs.sh"}


def test_every_cheat_is_covered() -> None:
    """Every file of the test folder's cheats/ is tested here or in test_foundry_feedback.py
    (the environment's own cheats/ is the generic test's: it checks every file is declared)."""
    files = {p.name for p in CHEATS.iterdir() if p.is_file()}
    assert files == PROBES | HERE


@pytest.fixture(scope="session")
def public_trained_weights(cpu_env: CpuEnv) -> bytes:
    """Weights an agent could have trained before scoring: the fast pipeline on the public
    train_data.jsonl."""
    public = env_cache_dir(cpu_env.spec.id, cpu_env.profile.name) / "public"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        starting_folder(work, public, "reference")
        lay_out(work, public, public / "train_data.jsonl")
        run = run_local(work, 1200)
        assert run.returncode == 0, run.output_tail
        return (work / "trained_model" / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_weights_from_the_workspace_are_refused(
        score_solution: Scorer, public_trained_weights: bytes,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """weights_from_workspace.sh decodes weights trained on the public rows before scoring,
    carried in the workspace as weights_cache.txt (base64), instead of training: they are
    not the reference weights (trained on the held-out rows)."""
    extra = {"weights_cache.txt": base64.b64encode(public_trained_weights)}
    result = score_solution(CHEATS / "weights_from_workspace.sh", extra, base="reference")
    assert not result.valid, f"scored {result.raw}: {result.message}"
    assert result.message["reason"] == "weights_differ", result.message
    assert "prompt" not in str(result.message)  # no held-out row reaches the agent
    assert cpu_env_feedback().conforms(result.message), result.message
    assert processes_mentioning(str(tmp_path_factory.getbasetemp())) == []


def test_a_hang_is_stopped_at_the_timeout(cpu_env: CpuEnv, tmp_path: Path,
                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    """hangs.sh never returns: scored in this process with a 5 s timeout (the profile's is
    20 minutes; the script has started its background sleep within milliseconds), it is
    stopped then, and nothing it started lives on."""
    from rebench.environments.optimize_llm_foundry import scoring

    workspace, snapshot, scratch = tmp_path / "workspace", tmp_path / "snapshot", tmp_path / "s"
    materialize_solution(cpu_env.spec, cpu_env.profile, "starting", workspace, Isolation.LOCAL)
    (workspace / "finetune.sh").write_bytes((CHEATS / "hangs.sh").read_bytes())
    snapshot_solution(cpu_env.spec, workspace, snapshot)
    scratch.mkdir()
    profile = dataclasses.replace(cpu_env.profile, scoring_timeout_s=5.0)
    ctx = ScoringContext(cpu_env.spec, profile, snapshot,
                         env_cache_dir(cpu_env.spec.id, profile.name), scratch, cpu_env.isolation)
    start = time.monotonic()
    try:
        result = scoring.score(ctx)
    finally:
        ctx.close()
    assert not result.valid and result.message == {"error": "timeout"}
    assert result.details["exit_code"] is None
    assert time.monotonic() - start < 120
    assert processes_mentioning(str(tmp_path_factory.getbasetemp())) == []


@pytest.mark.slow
def test_no_cache_survives_a_scoring(score_solution: Scorer) -> None:
    """The script stores its weights everywhere it can write and exits with 3 when it
    finds them again: both scorings must train from scratch (valid), none finds a cache.
    (This is also the check of the former degenerate policy cache_or_start: degenerate.py.)"""
    for _ in range(2):
        result = score_solution(CHEATS / "cache_between_scorings.sh", base="reference")
        assert result.valid, result.message
    for place in ("/tmp/foundry-cache", "/dev/shm/foundry-cache", "/var/tmp/foundry-cache"):
        assert not Path(place).exists()
        shutil.rmtree(place, ignore_errors=True)


def cpu_env_feedback() -> Feedback:
    """The environment's declared feedback schema."""
    return load_spec("optimize_llm_foundry").feedback

