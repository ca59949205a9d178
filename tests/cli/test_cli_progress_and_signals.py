"""Long steps say what they do (also into a log), and SIGTERM stops a command as Ctrl-C
does: a run becomes `interrupted` and resumable, `evaluate --solution reference` removes
its temporary folder; a solution agent the environment lacks is refused before a run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from rebench.cli import main
from rebench.cli_progress import EventFollower, Ticker, fmt_elapsed
from rebench.sandbox.bwrap import bwrap_available

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "environments"


def _iso() -> str:
    return "bwrap" if bwrap_available() else "local"


def _rebench(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rebench.cli", *args], env={**os.environ, **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_ticker_repeats_a_long_step_with_its_elapsed_time() -> None:
    console = Console(width=200, record=True, force_terminal=False)
    with Ticker(console, "calibrating x", interval=0.2) as ticker:
        ticker.step("building the reference solution")
        time.sleep(0.7)
        ticker.step("scoring reference (1/3)")
    lines = console.export_text().splitlines()
    assert lines[0] == "[0s] calibrating x"
    assert lines[1] == "[0s] building the reference solution"
    still = [x for x in lines if "building the reference solution (still working" in x]
    assert len(still) >= 2, lines  # one every 0.2 s, not only at the step's start
    assert lines[-1].endswith("scoring reference (1/3)")
    assert fmt_elapsed(185) == "3m05s" and fmt_elapsed(3720) == "1h02m"


def test_a_runs_phases_and_official_scores_show_as_they_happen(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"type": "agent_start", "time_left_s": 9}\n')  # before: not shown
    console = Console(width=200, record=True, force_terminal=False)
    follow = EventFollower(log)
    with Ticker(console, "reference working on x", interval=60, watch=follow), \
            log.open("a") as handle:
        handle.write('{"type": "run_resume"}\n{"type": "agent_start", "time_left_s": 42}'
                     '\n{"type": "exec", "cmd": "ls"}\n{"type": "score", "index": 3, '
                     '"valid": true, "normalized": 0.51}\n{"type": "score", "index": 4, '
                     '"valid": false, "normalized": null, "message": {"valid": true}}\n'
                     '{"type": "agent_end"}\n'
                     '{"type": "final_sc')  # a line half-written when polled
        handle.flush()
        time.sleep(2.5)
        handle.write('ore", "valid": false, "normalized": null}\n')
    lines = [line.split("] ", 1)[1] for line in console.export_text().splitlines()]
    assert lines == ["reference working on x", "the agent's turn (42 s left)",
                     "official score #3 asked by the agent: normalized 0.510",
                     "official score #4 asked by the agent: valid (a check; no score shown)",
                     "the agent's turn is over; the final official score (the workspace, "
                     "scored in a sandbox)", "final official score: no valid score"], lines


@pytest.fixture
def slow_toy(tmp_path: Path, toy_env: str) -> Iterator[dict[str, str]]:
    """toy_probe whose reference build takes a minute (a stand-in for a reference that
    trains a model), discoverable by `rebench` subprocesses."""
    envs = tmp_path / "envs"
    shutil.copytree(FIXTURES / "toy_probe", envs / "toy_probe")
    solve = envs / "toy_probe" / "reference" / "solve.py"
    solve.write_text("import time\ntime.sleep(60)\n" + solve.read_text())
    # A short TMPDIR, not one under tmp_path: the services' Unix sockets are made under it,
    # and a socket path has at most 107 bytes (under pytest-xdist, tmp_path is one folder
    # deeper: `AF_UNIX path too long`).
    tmpdir = Path(tempfile.mkdtemp(prefix="rb-sig-"))
    try:
        yield {"REBENCH_ENVIRONMENTS_PATH": str(envs), "TMPDIR": str(tmpdir),
               "REBENCH_PROGRESS_S": "1", "PYTHONUNBUFFERED": "1"}
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


@pytest.mark.slow
def test_sigterm_during_a_reference_build_removes_its_folder_and_says_so(
    slow_toy: dict[str, str]
) -> None:
    tmpdir = Path(slow_toy["TMPDIR"])
    proc = _rebench(["evaluate", "toy_probe", "--solution", "reference", "--isolation",
                     _iso()], slow_toy)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(tmpdir.glob("rebench-reference-*")):
            time.sleep(0.1)
        assert any(tmpdir.glob("rebench-reference-*")), "the build never started"
        time.sleep(3)  # long enough for progress lines
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    assert "building the reference solution (`python solve.py`" in stderr
    assert "(still working, " in stderr  # the heartbeat reaches a log, not only a terminal
    assert "interrupted (SIGTERM)" in stderr
    assert stdout == ""
    assert list(tmpdir.glob("rebench-*")) == [], "temporary folders left behind"


@pytest.mark.slow
def test_sigterm_of_a_run_is_interrupted_and_resumable(toy_env: str, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    actions = tmp_path / "actions.jsonl"
    actions.write_text('{"action": "sleep", "seconds": 600}\n')
    proc = _rebench(["run", toy_env, "--agent", f"replay:{actions}", "--budget", "300s",
                     "--isolation", _iso()], {"REBENCH_RUNS": str(root),
                                              "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 120
        run_dir = None
        while time.monotonic() < deadline and run_dir is None:
            for path in root.glob("*/events.jsonl") if root.is_dir() else ():
                if '"agent_start"' in path.read_text():
                    run_dir = path.parent
            time.sleep(0.1)
        assert run_dir is not None, "the run never started"
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "Traceback" not in stderr
    assert f"resume with `rebench resume {run_dir.name}`" in " ".join(stderr.split())
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "interrupted" and record["note"] == "interrupted (SIGTERM)"
    last = json.loads((run_dir / "events.jsonl").read_text().splitlines()[-1])
    assert (last["type"], last["text"]) == ("note", "run interrupted (SIGTERM)")


def test_a_solution_agent_the_environment_lacks_is_refused_before_a_run(
    toy_env: str, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    result = CliRunner().invoke(main, ["run", toy_env, "--agent", "expert", "--isolation",
                                       "local"], env={"REBENCH_RUNS": str(root)})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "toy_probe has no expert solution (it has: reference)" in result.stderr
    assert not root.exists() or not any(root.iterdir())


@pytest.mark.slow
def test_sigterm_of_a_batch_interrupts_the_running_attempt_and_starts_no_more(
    toy_env: str, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    actions = tmp_path / "actions.jsonl"
    actions.write_text('{"action": "sleep", "seconds": 600}\n')
    spec = tmp_path / "batch.yaml"
    spec.write_text(f"environments: [{toy_env}]\nagents: ['replay:{actions}']\n"
                    "seeds: [0, 1, 2]\nbudgets: [300s]\nconcurrency: 1\ngpus: none\n")
    proc = _rebench(["batch", str(spec), "--isolation", _iso()],
                    {"REBENCH_RUNS": str(root), "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 120
        started: list[Path] = []
        while time.monotonic() < deadline and not started:
            started = [p.parent for p in root.glob("*/events.jsonl")
                       if '"agent_start"' in p.read_text()] if root.is_dir() else []
            time.sleep(0.1)
        assert started, "no attempt started"
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "Traceback" not in stderr
    statuses = sorted(json.loads(p.read_text())["status"] for p in root.glob("*/run.json"))
    assert statuses == ["created", "created", "interrupted"]  # none started after the stop
    assert "batch stopped: 3 attempt(s) not finished" in " ".join(stderr.split())


def test_a_batch_says_what_runs_while_an_attempt_lasts(toy_env: str, tmp_path: Path) -> None:
    actions = tmp_path / "actions.jsonl"
    actions.write_text('{"action": "sleep", "seconds": 4}\n')
    spec = tmp_path / "batch.yaml"
    spec.write_text(f"environments: [{toy_env}]\nagents: ['replay:{actions}']\n"
                    "seeds: [0]\nbudgets: [60s]\nconcurrency: 1\ngpus: none\n")
    result = CliRunner().invoke(main, ["batch", str(spec), "--isolation", "local"],
                                env={"REBENCH_RUNS": str(tmp_path / "runs"),
                                     "REBENCH_PROGRESS_S": "1", "COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    run_id = next((tmp_path / "runs").glob("toy_probe-*")).name
    assert f"batch: 0 of 1 done, running: {run_id} (still working, " in result.stderr
    assert f"finished {run_id} score" in " ".join(result.stderr.split())


def test_calibrate_says_each_build_and_scoring_as_it_starts(toy_env: str,
                                                            tmp_path: Path) -> None:
    """What `make demo` shows during calibrate (issue 30, "done when")."""
    result = CliRunner().invoke(main, ["calibrate", toy_env, "-n", "2", "--isolation", _iso()],
                                env={"REBENCH_CALIBRATION": str(tmp_path / "calibration.json"),
                                     "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    steps = [line.split("] ", 1)[1] for line in result.stderr.splitlines()
             if line.startswith("[")]
    assert steps[1:4] == ["building the starting solution", "scoring starting (1/2)",
                          "scoring starting (2/2)"], steps
    # the reference is built once and kept (harness/built.py): built, or reused if kept
    assert steps[4].startswith(("building the reference solution (`python solve.py`",
                                "reusing the built reference from ")), steps
    assert steps[5:] == ["scoring reference (1/2)", "scoring reference (2/2)"], steps
    assert (tmp_path / "calibration.json").is_file()
