"""An interrupted run is recorded as `interrupted`, not as a finished attempt: Ctrl-C of
`rebench run` (which also ends its scorer and says how to resume) and a cancelled Inspect
eval; an Inspect sample that errors is recorded as crashed. The report leaves both out."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rebench.analysis.sources import from_run_dirs
from rebench.core.normalize import Anchors, AnchorSource
from rebench.harness.interrupt import child_pids, end_child_processes, mark_interrupted
from rebench.harness.lifecycle import RunLifecycle
from rebench.harness.records import Outcome, RunRecord, RunStatus
from rebench.harness.run import create_run
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring.contract import ScoreKind


def _record(status: RunStatus) -> RunRecord:
    return RunRecord(run_id="r", env_id="e", env_version="1", profile="cpu", agent="start",
                     seed=0, budget_s=60.0, hardware="h",
                     anchors=Anchors(1.0, 0.0, AnchorSource.PROFILE_DEFAULT, "h"),
                     isolation=Isolation.LOCAL,
                     created_at="2026-11-30T00:00:00+00:00", status=status)


def test_mark_interrupted_leaves_finished_runs_alone() -> None:
    done = _record(RunStatus.FINISHED)
    assert not mark_interrupted(done, 10.0, "Ctrl-C")
    assert done.status is RunStatus.FINISHED
    going = _record(RunStatus.RUNNING)
    assert mark_interrupted(going, 12.5, "Ctrl-C")
    assert (going.status, going.working_s_used, going.note) == (
        RunStatus.INTERRUPTED, 12.5, "Ctrl-C")
    assert RunRecord.from_json(going.to_json()).status is RunStatus.INTERRUPTED


def test_end_child_processes_kills_child_groups() -> None:
    # a child leading its own session (like the scorer) with a grandchild in its group
    child = subprocess.Popen(["bash", "-c", "sleep 120 & wait"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not child_pids(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        (grandchild,) = child_pids(child.pid)
        assert child.pid in end_child_processes()
        assert child.wait(timeout=10) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while Path(f"/proc/{grandchild}").exists() and time.monotonic() < deadline:
            state = Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                break
            time.sleep(0.05)
        else:
            assert not Path(f"/proc/{grandchild}").exists()
    finally:
        child.kill()
        child.wait()


def _scorer_children(pid: int) -> list[int]:
    out = []
    for child in child_pids(pid):
        try:
            if b"scorer_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                out.append(child)
        except OSError:
            continue
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
def test_ctrl_c_of_rebench_run_is_interrupted_resumable_and_ends_the_scorer(
    prepared_env: str, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    actions = tmp_path / "actions.jsonl"
    actions.write_text('{"action": "sleep", "seconds": 600}\n')
    env = {**os.environ, "REBENCH_RUNS": str(root), "PYTHONUNBUFFERED": "1"}
    iso = "bwrap" if bwrap_available() else "local"
    harness = subprocess.Popen(
        [sys.executable, "-m", "rebench.cli", "run", prepared_env, "--agent",
         f"replay:{actions}", "--budget", "300s", "--isolation", iso],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # as from a terminal, even when the tests were started in the background (which
        # makes the shell ignore SIGINT for them and their children)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        scorers: list[int] = []
        while not scorers and time.monotonic() < deadline and harness.poll() is None:
            scorers = _scorer_children(harness.pid)
            time.sleep(0.05)
        assert scorers, "the t=0 score never started"
        harness.send_signal(signal.SIGINT)  # what Ctrl-C sends the harness
        _, stderr = harness.communicate(timeout=60)
    finally:
        harness.kill()
    assert harness.returncode == 130, stderr[-2000:]
    (run_dir,) = [p for p in root.iterdir() if (p / "run.json").is_file()]
    assert f"resume with `rebench resume {run_dir.name}`" in " ".join(stderr.split())
    assert "Traceback" not in stderr
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted"
    time.sleep(0.5)
    assert not any(_alive(pid) for pid in scorers), "the scorer outlived its run"
    log = run_dir / "protected" / "score_log.jsonl"
    lines = log.read_text().splitlines() if log.is_file() else []
    assert not any("scorer process died" in line for line in lines)  # no score from the kill
    last = json.loads((run_dir / "events.jsonl").read_text().splitlines()[-1])
    assert (last["type"], last["text"]) == ("note", "run interrupted (Ctrl-C)")
    table = from_run_dirs(root)
    assert table.runs == ()
    assert any("interrupted" in p for p in table.problems)
    from rebench.harness.resume import reopen_for_resume

    resumed = reopen_for_resume(run_dir)  # resume takes it, with the time it has left
    assert 0 < resumed.time_left_s() <= 300


@pytest.fixture
def inspect_sandbox() -> type:
    pytest.importorskip("inspect_ai")
    from rebench.inspect_ext.sandbox import RebenchSandboxEnvironment

    return RebenchSandboxEnvironment


def _owned_env(env_id: str, root: Path, sandbox_cls: type) -> object:
    run = create_run(env_id, "cpu", "inspect:mockllm/model", 120.0, Isolation.LOCAL, root=root)
    run.scorer.score(ScoreKind.INITIAL)  # done before the lifecycle begins: it starts no other
    life = RunLifecycle(run, "inspect:mockllm/model")
    return sandbox_cls(life.begin(), life)


def test_cancelled_inspect_sample_is_recorded_interrupted(
    prepared_env: str, fake_scorer: None, tmp_path: Path, inspect_sandbox: type
) -> None:
    env = _owned_env(prepared_env, tmp_path, inspect_sandbox)
    asyncio.run(inspect_sandbox.sample_cleanup("rebench", None, {"default": env}, True))
    run_dir = env.session.run.run_dir  # type: ignore[attr-defined]
    record = RunRecord.load(run_dir / "run.json")
    assert record.status is RunStatus.INTERRUPTED and record.outcome is Outcome.ABORTED
    log = (run_dir / "protected" / "score_log.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in log] == ["initial"]  # no final score
    assert from_run_dirs(tmp_path).runs == ()


def test_errored_inspect_sample_is_finished_but_crashed(
    prepared_env: str, fake_scorer: None, tmp_path: Path, inspect_sandbox: type
) -> None:
    env = _owned_env(prepared_env, tmp_path, inspect_sandbox)
    asyncio.run(inspect_sandbox.sample_cleanup("rebench", None, {"default": env}, False))
    run_dir = env.session.run.run_dir  # type: ignore[attr-defined]
    record = RunRecord.load(run_dir / "run.json")
    assert record.status is RunStatus.FINISHED and record.crashed
    assert record.outcome is Outcome.INFRASTRUCTURE
    table = from_run_dirs(tmp_path)
    assert table.runs == () and any("crashed" in p for p in table.problems)
