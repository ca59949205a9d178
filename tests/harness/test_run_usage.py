"""What a run used of the machine (issue 32): the agent sandbox's CPU-seconds from its
cgroup, the official scorings' CPU and wall seconds from the score log, in run.json, a
`usage` event and `rebench show`; local isolation says it counted nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rebench.cli import main
from rebench.harness.records import RunRecord, RunUsage
from rebench.sandbox import Isolation, SandboxConfig, make_sandbox
from rebench.sandbox.bwrap import bwrap_available
from rebench.sandbox.limits import Limits

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")


@needs_bwrap
def test_a_sandbox_counts_the_cpu_its_processes_used(tmp_path: Path) -> None:
    box = make_sandbox(Isolation.BWRAP, SandboxConfig(workdir=tmp_path / "ws",
                                                      limits=Limits(pids=64)))
    box.create()
    try:
        if box.process_group() is None or box.cpu_seconds() is None:
            pytest.skip("no cgroup CPU accounting on this host")
        before = box.cpu_seconds() or 0.0
        # A detached busy child that exits before the reading: exited work counts too.
        box.exec("python3 -c 'import time\nt = time.process_time()\n"
                 "while time.process_time() - t < 0.6: pass' &\nwait", 30)
        used = (box.cpu_seconds() or 0.0) - before
        assert 0.5 <= used < 5.0, used
    finally:
        box.destroy()
    assert box.cpu_seconds() is None  # destroyed: nothing counted, and no group made


def _run(toy_env: str, tmp_path: Path, isolation: str) -> tuple[Path, dict[str, str]]:
    env = {"REBENCH_RUNS": str(tmp_path / "runs"), "COLUMNS": "200"}
    ran = CliRunner().invoke(main, ["run", toy_env, "--agent", "start", "--budget", "30s",
                                    "--isolation", isolation], env=env)
    assert ran.exit_code == 0, ran.output
    return next((tmp_path / "runs").glob("toy_probe-*")), env


def _usage_event(run_dir: Path) -> dict[str, object]:
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    found = [e for e in events if e.get("type") == "usage"]
    assert len(found) == 1, [e.get("type") for e in events]
    return found[0]


@needs_bwrap
def test_a_run_records_its_agent_and_scoring_usage(toy_env: str, tmp_path: Path) -> None:
    run_dir, env = _run(toy_env, tmp_path, "bwrap")
    record = RunRecord.load(run_dir / "run.json")
    usage = record.usage
    assert usage is not None
    scores = (run_dir / "protected" / "score_log.jsonl").read_text().splitlines()
    assert usage.scorings == len(scores) >= 2  # t=0 and final
    assert usage.scoring_cpu_s > 0 and usage.scoring_wall_s > 0
    assert usage.agent_cpu_s is not None and usage.agent_cpu_s >= 0
    event = _usage_event(run_dir)
    assert event["scorings"] == usage.scorings
    assert event["scoring_cpu_s"] == round(usage.scoring_cpu_s, 3)
    shown = CliRunner().invoke(main, ["show", run_dir.name], env=env)
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.stdout.split())
    assert f"over {usage.scorings} scores" in flat and "agent cpu" in flat, shown.stdout


def test_local_isolation_counts_no_agent_cpu(toy_env: str, tmp_path: Path) -> None:
    run_dir, env = _run(toy_env, tmp_path, "local")
    usage = RunRecord.load(run_dir / "run.json").usage
    assert usage is not None and usage.agent_cpu_s is None and usage.scorings >= 2
    shown = CliRunner().invoke(main, ["show", run_dir.name], env=env)
    assert "not counted" in " ".join(shown.stdout.split()), shown.stdout


def test_usage_adds_sessions_and_reads_back() -> None:
    usage = RunUsage().with_agent_cpu(1.25).with_agent_cpu(None).with_agent_cpu(0.5)
    assert usage.agent_cpu_s == pytest.approx(1.75)
    assert RunUsage.from_json(usage.to_json()) == usage
    assert RunUsage().with_agent_cpu(None).agent_cpu_s is None
