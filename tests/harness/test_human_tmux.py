"""A participant through a real terminal (tmux): `rebench run ... --agent human` started by
the virtualenv's path with no virtualenv on PATH, as a person would meet it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rebench.harness.events import read_events

pytestmark = pytest.mark.slow
# The harness is started by the virtualenv's python, by path, through LAUNCHER: the real
# CLI with a quick fake official scorer (scoring has tests of its own; two real scorings
# take ~30 s idle and minutes on a loaded machine). REBENCH_TMUX_TEST_REAL_SCORER=1 starts
# `.venv/bin/rebench` itself with the real scorer; then give it REBENCH_TMUX_TEST_BUDGET_S.
REAL_SCORER = os.environ.get("REBENCH_TMUX_TEST_REAL_SCORER") == "1"
BUDGET_S = float(os.environ.get("REBENCH_TMUX_TEST_BUDGET_S", "90" if REAL_SCORER else "75"))
LAUNCHER = """
import sys, time
from rebench.core.score import ScoreResult

def fake_official_score(spec, profile, snapshot_dir, isolation, timeout_s=None):
    time.sleep(1.0)
    lines = len((snapshot_dir / "solution.py").read_text().splitlines())
    return ScoreResult(raw=lines / 100, message={"lines": lines})

import rebench.harness.run
rebench.harness.run.official_score = fake_official_score
from rebench.cli import main
sys.argv[0] = "rebench"
main()
"""

class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True,
                              text=True, check=False)
        return done.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-J", "-S", "-200", "-t", "p")

    def wait_for(self, text: str, timeout: float = 40) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} not on screen after {timeout} s:\n{self.screen()}")

    def wait_prompt(self, timeout: float = 60) -> None:
        """Wait until the shell waits for a command (keys typed earlier would go to the
        command still running)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            lines = [line for line in self.screen().splitlines() if line.strip()]
            if lines and lines[-1].startswith("[rebench ") and lines[-1].rstrip()[-1] in "#$":
                return
            time.sleep(0.2)
        raise AssertionError(f"no prompt after {timeout} s:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        """Key names (Enter, C-d)."""
        self("send-keys", "-t", "p", *keys)

    def line(self, text: str) -> None:
        """`text` typed as it is (`end` is not the End key), then Enter."""
        self("send-keys", "-t", "p", "-l", text)
        self.keys("Enter")


@pytest.mark.usefixtures("prepared_env")
def test_participant_in_tmux(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux)")
    runs = tmp_path / "runs"
    if REAL_SCORER:
        rebench = [str(Path(sys.executable).parent / "rebench")]
    else:
        (tmp_path / "launcher.py").write_text(LAUNCHER)
        rebench = [sys.executable, str(tmp_path / "launcher.py")]
    env = {"HOME": str(tmp_path), "TERM": "xterm-256color", "PATH": "/usr/bin:/bin",
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           "REBENCH_CACHE": os.environ["REBENCH_CACHE"], "REBENCH_RUNS": str(runs),
           "OMP_NUM_THREADS": "1"}
    command = " ".join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *rebench,
                        "run", "triton_cumsum", "--agent", "human", "--budget", f"{BUDGET_S:.0f}s",
                        "--isolation", "auto", "; sleep 600"])
    tmux = Tmux(f"rebench-test-{os.getpid()}")
    tmux("new-session", "-d", "-s", "p", "-x", "120", "-y", "40", command)
    try:
        tmux.wait_prompt()
        tmux.keys("C-d")
        tmux.wait_for('Use "exit" to leave the shell.')
        tmux.wait_prompt()
        tmux("resize-window", "-t", "p", "-x", "80", "-y", "24")
        time.sleep(0.5)
        tmux.line("clear; stty size")
        tmux.wait_for("24 80")
        tmux.wait_prompt()
        tmux.line("rebench-task score")
        tmux.wait_for("score #1: valid", timeout=BUDGET_S)
        tmux.wait_prompt()
        tmux.line("python -c 'import torch; print(\"torch\", torch.__version__)'")
        tmux.wait_for("torch 2.")
        tmux.wait_prompt()
        tmux.wait_for("1 min of working time left", timeout=BUDGET_S)
        tmux.line("exit")
        tmux.wait_for('Type "end"')
        tmux.line("end")
        screen = tmux.wait_for("normalized score", timeout=90)
        assert "Traceback" not in screen
    finally:
        tmux("kill-server")
    run_dir = next(runs.glob("triton_cumsum-human-*"))
    events = read_events(run_dir / "events.jsonl")
    logged = [e.data["command"] for e in events if e.type == "shell_command"]
    assert "rebench-task score" in logged and "clear; stty size" in logged
    recording = run_dir / "protected" / "recordings"
    replay = subprocess.run(["scriptreplay", "--log-timing", str(recording / "00-main.timing"),
                             "--log-out", str(recording / "00-main.log"), "--divisor", "1000"],
                            capture_output=True, check=True)
    assert b"torch 2." in replay.stdout and b"24 80" in replay.stdout
