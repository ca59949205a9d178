"""Resume after the harness died, and `verify` of run directories (fast fake scorer)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.errors import RunError
from rebench.harness.clock import save_clock
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.records import RunStatus
from rebench.harness.resume import clock_offsets, reopen_for_resume, verify_run
from rebench.harness.run import create_run
from rebench.harness.session import Session
from rebench.sandbox import Isolation
from rebench.scoring.contract import ScoreKind


def crashed_run(env_id: str, isolation: Isolation, root: Path) -> tuple[str, float]:
    """A run whose harness 'died' after an initial and one agent score, 0.3 s of work."""
    run = create_run(env_id, "cpu", "start", 60, isolation, root=root)
    run.record.status = RunStatus.RUNNING
    run.save()
    run.scorer.score(ScoreKind.INITIAL)
    session = Session(run)
    session.exec("echo working")
    time.sleep(0.3)
    session.score()
    save_clock(run.run_dir / "clock.json", run.clock)
    used = run.working_s()
    session.sandbox.destroy()  # what --die-with-parent does when the harness dies
    return run.record.run_id, used


@pytest.mark.usefixtures("fake_scorer")
def test_resume_keeps_the_log_and_continues_the_clock(prepared_env: str, isolation: Isolation,
                                                      tmp_path: Path) -> None:
    root = tmp_path / "runs"
    run_id, used = crashed_run(prepared_env, isolation, root)
    before = (root / run_id / "protected" / "score_log.jsonl").read_bytes()
    run = reopen_for_resume(root / run_id)
    assert run.working_s() >= used - 0.001  # frozen at what the dead harness used (ms)
    assert run.scorer.clock is run.clock  # the scorer logs on the continued clock
    execute_run(run, make_agent("start"))
    after = (root / run_id / "protected" / "score_log.jsonl").read_bytes()
    assert after.startswith(before)  # nothing logged is lost or rewritten
    kinds = [e.kind for e in run.entries()]
    assert kinds == ["initial", "agent", "agent", "final"]  # no second t=0 score
    assert run.entries()[2].working_s >= used - 0.001
    events = read_events(root / run_id / "events.jsonl")
    assert "run_resume" in [e.type for e in events]
    report = verify_run(root / run_id)
    assert report.ok, report.problems
    assert report.entries == 4 and report.events == len(events)


@pytest.mark.usefixtures("fake_scorer")
def test_resume_refuses_finished_and_vanished_runs(prepared_env: str, isolation: Isolation,
                                                   tmp_path: Path) -> None:
    root = tmp_path / "runs"
    run = create_run(prepared_env, "cpu", "start", 30, isolation, root=root)
    execute_run(run, make_agent("start"))
    with pytest.raises(RunError, match="already finished"):
        reopen_for_resume(run.run_dir)
    run_id, _ = crashed_run(prepared_env, isolation, root)
    import shutil

    shutil.rmtree(root / run_id / "workspace")
    with pytest.raises(RunError, match="no workspace"):
        reopen_for_resume(root / run_id)
    with pytest.raises(RunError, match="no run"):
        reopen_for_resume(root / "nope")


@pytest.mark.usefixtures("fake_scorer")
def test_clock_offsets_take_the_latest_record(prepared_env: str, isolation: Isolation,
                                              tmp_path: Path) -> None:
    run_id, _ = crashed_run(prepared_env, isolation, tmp_path / "runs")
    run_dir = tmp_path / "runs" / run_id
    (run_dir / "clock.json").write_text(json.dumps({"wall_s": 500.0, "working_s": 42.0}))
    run = reopen_for_resume(run_dir)
    assert clock_offsets(run) == (500.0, 42.0)
    assert run.time_left_s() == pytest.approx(60 - 42.0)


@pytest.mark.usefixtures("fake_scorer")
def test_verify_finds_tampering(prepared_env: str, isolation: Isolation,
                                tmp_path: Path) -> None:
    run = create_run(prepared_env, "cpu", "start", 30, isolation, root=tmp_path / "runs")
    execute_run(run, make_agent("start"))
    assert verify_run(run.run_dir).ok
    log = run.score_log_path
    lines = log.read_text().splitlines()
    entry = json.loads(lines[1])
    entry["normalized"] = 0.99  # a better score, written in by hand
    log.write_text("\n".join([lines[0], json.dumps(entry), *lines[2:]]) + "\n")
    report = verify_run(run.run_dir)
    assert not report.ok and "altered" in report.problems[0]


@pytest.mark.usefixtures("fake_scorer")
def test_verify_finds_wrong_final_score_and_missing_snapshot(
        prepared_env: str, isolation: Isolation, tmp_path: Path) -> None:
    import shutil

    run = create_run(prepared_env, "cpu", "start", 30, isolation, root=tmp_path / "runs")
    execute_run(run, make_agent("start"))
    record = json.loads((run.run_dir / "run.json").read_text())
    record["final_normalized"] = 0.75
    (run.run_dir / "run.json").write_text(json.dumps(record))
    shutil.rmtree(run.run_dir / "protected" / "snapshots" / "0000")
    problems = verify_run(run.run_dir).problems
    assert any("final_normalized" in p for p in problems)
    assert any("snapshot" in p for p in problems)


@pytest.mark.usefixtures("fake_scorer")
def test_full_disk_while_logging_a_score(prepared_env: str, isolation: Isolation,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from rebench.core.errors import ScoreLogError

    run = create_run(prepared_env, "cpu", "start", 30, isolation, root=tmp_path / "runs")
    run.scorer.score(ScoreKind.INITIAL)
    before = run.score_log_path.read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("rebench.harness.score_log.os.fsync", full)
    with pytest.raises(ScoreLogError, match="No space left"):
        run.scorer.score(ScoreKind.REQUESTED)
    assert run.score_log_path.read_bytes() == before


@pytest.mark.usefixtures("fake_scorer")
def test_one_harness_per_run(prepared_env: str, isolation: Isolation, tmp_path: Path) -> None:
    import subprocess
    import sys

    from rebench.harness.lifecycle import harness_lock

    run_id, _ = crashed_run(prepared_env, isolation, tmp_path / "runs")
    run = reopen_for_resume(tmp_path / "runs" / run_id)
    holder = subprocess.Popen(  # another harness process holding the run
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
         str(run.run_dir / "harness.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(RunError, match="another harness"):
            execute_run(run, make_agent("start"))
    finally:
        holder.kill()
        holder.wait()
    with harness_lock(run):  # free again once that process is gone
        pass
