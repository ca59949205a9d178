"""End to end through the `rebench` command, on toy_probe (its scorings take no time: these
tests are about the harness): a SIGKILLed harness is resumed with its score log intact; a
batch runs four attempts two at a time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from rebench.harness.events import read_events
from rebench.harness.index import index_path, list_runs
from rebench.harness.records import RunStatus
from rebench.harness.score_log import read_log


def rebench(args: list[str], root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REBENCH_RUNS": str(root), "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "rebench.cli", *args], env=env, text=True,
                          capture_output=True, timeout=600, check=False)


def only_run_dir(root: Path) -> Path:
    (run_dir,) = [p for p in root.iterdir() if (p / "run.json").is_file()]
    return run_dir


# Long enough that the harness is killed well before its deadline on a slow machine (the
# run must still have working time when it is resumed, so that its agent runs again).
BUDGET_S = 30.0


def test_sigkilled_harness_resumes_with_log_intact(toy_env: str, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    actions = tmp_path / "actions.jsonl"
    actions.write_text('{"action": "score"}\n{"action": "sleep", "seconds": 600}\n')
    env = {**os.environ, "REBENCH_RUNS": str(root)}
    harness = subprocess.Popen(
        [sys.executable, "-m", "rebench.cli", "run", toy_env, "--agent",
         f"replay:{actions}", "--budget", f"{BUDGET_S:.0f}s"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            logs = list(root.glob("*/protected/score_log.jsonl"))
            if logs and read_log(logs[0]):  # the t=0 score is logged; the agent is at work
                break
            time.sleep(0.2)
        else:
            pytest.fail("the run never logged its first two scores")
    finally:
        os.killpg(harness.pid, signal.SIGKILL)
        harness.wait()
    run_dir = only_run_dir(root)
    before = (run_dir / "protected" / "score_log.jsonl").read_bytes()
    assert json.loads((run_dir / "run.json").read_text())["status"] == "running"

    resumed = rebench(["resume", run_dir.name], root)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = (run_dir / "protected" / "score_log.jsonl").read_bytes()
    assert after.startswith(before)
    entries = read_log(run_dir / "protected" / "score_log.jsonl")
    kinds = [e.kind for e in entries]
    # the agent's score in flight when the harness died may or may not have been logged;
    # after the resume the replay scores again, sleeps into the deadline, the final follows
    assert kinds[0] == "initial" and kinds[-1] == "final" and "agent" in kinds[1:-1]
    assert entries[-1].working_s >= BUDGET_S - 0.5
    types = [e.type for e in read_events(run_dir / "events.jsonl")]
    assert "run_resume" in types and "hard_stop" in types, types
    verified = rebench(["verify", run_dir.name], root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "OK" in verified.stdout


def test_batch_runs_four_attempts_two_at_a_time(toy_env: str, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    spec = tmp_path / "batch.yaml"
    spec.write_text(f"environments: [{toy_env}]\nagents: [start]\nseeds: [0, 1, 2, 3]\n"
                    "budgets: [60s]\nconcurrency: 2\ngpus: none\n")
    done = rebench(["batch", str(spec)], root)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = list_runs(index_path(root))
    assert len(runs) == 4
    assert all(record.status is RunStatus.FINISHED for record, _ in runs)
    assert sorted(record.seed for record, _ in runs) == [0, 1, 2, 3]
    spans = []
    for _, run_dir in runs:
        events = read_events(run_dir / "events.jsonl")
        start = datetime.fromisoformat(events[0].time)
        end = datetime.fromisoformat(events[-1].time)
        spans.append((start, end))
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most == 2  # two at a time, never more


def test_cli_bad_input_gives_clear_errors(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    bad = tmp_path / "bad.yaml"
    bad.write_text("environments: [nope]\nagents: [start]\n")
    for args, complaint in [
        (["batch", str(bad)], "unknown environment"),
        (["batch", str(tmp_path / "missing.yaml")], "cannot read"),
        (["resume", "no-such-run"], "no run"),
        (["verify", "no-such-run"], "no run"),
        (["run", "triton_cumsum", "--agent", "replay:/nonexistent.jsonl"], "cannot read"),
        (["run", "triton_cumsum", "--agent", "start", "--budget", "soon"], "bad duration"),
    ]:
        result = rebench(args, root)
        assert result.returncode == 2, (args, result.stderr)
        assert complaint in result.stderr.replace("\n", " "), (args, result.stderr)
