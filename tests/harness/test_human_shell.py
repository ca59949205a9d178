"""The human agent: a shell in the sandbox with `rebench-task`, driven through a pipe (a
script) and through a pseudo-terminal (a person)."""

from __future__ import annotations

import os
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from human_pty import Terminal

from rebench.agents.attach import attach
from rebench.agents.human import HumanAgent
from rebench.core.score import ScoreResult
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.resume import verify_run
from rebench.harness.run import Run, create_run
from rebench.sandbox import Isolation


def drive(agent_input: bytes, run_dir_holder: list[Path], env_id: str, isolation: Isolation,
          root: Path, budget: float = 60) -> str:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    output: list[bytes] = []

    def collect() -> None:
        while chunk := os.read(out_r, 65536):
            output.append(chunk)

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    os.write(in_w, agent_input)
    os.close(in_w)
    run = create_run(env_id, "cpu", "human", budget, isolation, root=root)
    run_dir_holder.append(run.run_dir)
    try:
        execute_run(run, HumanAgent("", in_fd=in_r, out_fd=out_w))
    finally:
        os.close(out_w)
        reader.join(10)
        os.close(in_r)
        os.close(out_r)
    return b"".join(output).decode(errors="replace")


@pytest.mark.usefixtures("fake_scorer")
def test_shell_with_rebench_task(prepared_env: str, isolation: Isolation,
                                 tmp_path: Path) -> None:
    script = (b"rebench-task time\n"
              b"echo '# edited by a human' >> solution.py\n"
              b"rebench-task score\n"
              b"rebench-task status\n"
              b"rebench-task bogus; echo exit=$?\n"
              b"cat ../protected/score_log.jsonl 2>&1 | head -c 200\n"
              b"exit\n")
    holder: list[Path] = []
    out = drive(script, holder, prepared_env, isolation, tmp_path / "runs")
    run_dir = holder[0]
    assert "working time used" in out and "scoring time counts" in out
    assert "score #1: valid" in out
    assert "exit=2" in out
    assert '"prev_hash"' not in out  # the score log stayed out of reach
    entries = (run_dir / "protected" / "score_log.jsonl").read_text().splitlines()
    assert len(entries) == 3  # initial, the human's score, final
    assert "# edited by a human" in (run_dir / "workspace" / "solution.py").read_text()
    events = read_events(run_dir / "events.jsonl")
    assert any(e.type == "score" for e in events)
    logged = [e.data["command"] for e in events if e.type == "shell_command"]
    assert "rebench-task score" in logged and "rebench-task bogus; echo exit=$?" in logged


@pytest.mark.usefixtures("fake_scorer")
def test_local_isolation_shell_has_rebench_task(prepared_env: str, tmp_path: Path) -> None:
    holder: list[Path] = []
    out = drive(b"rebench-task time; echo $SHELL\nexit\n", holder, prepared_env,
                Isolation.LOCAL, tmp_path / "runs")
    assert "working time used" in out and "/rebench-shell" in out


@pytest.mark.usefixtures("fake_scorer")
def test_shell_is_killed_at_the_deadline(prepared_env: str, isolation: Isolation,
                                         tmp_path: Path) -> None:
    holder: list[Path] = []
    # never exits on its own: the input keeps a command running past the budget
    out = drive(b"sleep 600\n", holder, prepared_env, isolation, tmp_path / "runs",
                budget=2.0)
    events = read_events(holder[0] / "events.jsonl")
    stop = next(e for e in events if e.type == "hard_stop")
    assert stop.data["lateness_s"] < 1.0
    assert "time is up" in out


class Scorer:
    """A fake official scorer: the first call (the t=0 score) is slow; a solution.py with
    BROKEN in it fails to load, with a traceback naming the snapshot's file."""

    def __init__(self, first_delay_s: float = 0.0) -> None:
        self.calls = 0
        self.first_delay_s = first_delay_s

    def __call__(self, spec: object, profile: object, snapshot_dir: Path, isolation: object,
                 timeout_s: float | None = None, kind: object = None) -> ScoreResult:
        self.calls += 1
        if self.calls == 1:
            time.sleep(self.first_delay_s)
        text = (snapshot_dir / "solution.py").read_text()
        if "BROKEN" in text:
            return ScoreResult.invalid(
                f'could not load solution.py: File "{snapshot_dir / "solution.py"}", '
                f"line {len(text.splitlines())}\n    BROKEN\nNameError: name 'BROKEN' is "
                "not defined")
        return ScoreResult(raw=len(text.splitlines()) / 100, message={"lines": 1})


PROMPT = r"left ~\][#$] "


def start(run: Run, agent: HumanAgent) -> threading.Thread:
    thread = threading.Thread(target=execute_run, args=(run, agent), daemon=True)
    thread.start()
    return thread


def test_a_person_at_a_terminal(prepared_env: str, isolation: Isolation, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Items of a participant's session: an early score waits for #0 and says so, Ctrl-D
    and `exit` ask first, `python` is the harness's, resizes reach the shell, tmux keeps
    `rebench-task`, status and load errors read well, commands and the screen are
    recorded."""
    monkeypatch.setattr("rebench.harness.run.official_score", Scorer(first_delay_s=3.0))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # rebench started by its path, no venv active
    run = create_run(prepared_env, "cpu", "human", 120, isolation, root=tmp_path / "runs")
    term = Terminal()
    thread = start(run, HumanAgent("", in_fd=term.slave, out_fd=term.slave))
    try:
        term.expect(r"\[rebench \d+m\d+s left ~\]")
        term.type("rebench-task score\n")
        term.expect("waiting for the starting solution's score")
        term.expect(r"score #1: valid")
        term.expect(PROMPT)  # typed before the prompt, Ctrl-D would end that command's input
        term.type(b"\x04")
        term.expect('Use "exit" to leave the shell')
        term.type("exit\n")
        term.expect('Type "end" to end the run now')
        term.type("no\n")
        term.expect("the run goes on")
        term.type("python -c 'import sys; print(\"PREFIX=\" + sys.prefix)'\n")
        term.expect(f"PREFIX={sys.prefix}\r\n")
        term.resize(24, 80)
        time.sleep(0.5)
        term.type("stty size\n")
        term.expect(r"24 80\r\n")
        tmux = f"/tmp/rebench-test-{os.getpid()}.tmux"
        term.type(f"tmux -S {tmux} new-session -d -x 80 -y 24 && tmux -S {tmux} send-keys "
                  f"'rebench-task time > in_tmux.txt' Enter; sleep 3; tmux -S {tmux} "
                  "kill-server; cat in_tmux.txt\n")
        term.expect("working time used .* of 2m00s", timeout=40)
        term.type("echo BROKEN >> solution.py; rebench-task score\n")
        reply = term.expect(r"NameError[^\r\n]*")
        assert f'File "{run.workspace}/solution.py", line ' in reply
        assert "snapshots" not in reply
        term.type("rebench-task status\n")
        status = term.expect(r"of 2m00s \(scoring time counts against it\)")
        assert "#0   the starting solution" in status and "best so far: #" in status
        assert "#2   yours" in status and "INVALID: error:" in status
        term.type("exit\n")
        term.expect('Type "end"')
        term.type("end\n")
        thread.join(60)
        assert not thread.is_alive()
    finally:
        term.close()
    events = read_events(run.run_dir / "events.jsonl")
    logged = [e.data["command"] for e in events if e.type == "shell_command"]
    assert "stty size" in logged and logged[0] == "rebench-task score"
    start_event = next(e for e in events if e.type == "shell_start")
    log = run.run_dir / start_event.data["recording"]
    timing = run.run_dir / start_event.data["timing"]
    assert log.is_relative_to(run.protected)
    replay = subprocess.run(["scriptreplay", "--log-timing", str(timing), "--log-out",
                             str(log), "--divisor", "1000"], capture_output=True, check=True)
    assert b"24 80" in replay.stdout and b"the run goes on" in replay.stdout
    assert verify_run(run.run_dir).ok


def test_hard_stop_warns_then_restores_a_full_screen_terminal(
        prepared_env: str, isolation: Isolation, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rebench.harness.run.official_score", Scorer())
    run = create_run(prepared_env, "cpu", "human", 8, isolation, root=tmp_path / "runs")
    term = Terminal()
    before = termios.tcgetattr(term.slave)
    agent = HumanAgent("", in_fd=term.slave, out_fd=term.slave, warn_marks_s=(5.0,))
    thread = start(run, agent)
    try:
        term.expect(r"left ~\]")
        # a full-screen program: alternate screen, mouse, application keys; then it hangs
        term.type(r"printf '\033[?1049h\033[?1000h\033[?1h\033=\033[?25l'; sleep 600" + "\n")
        term.expect("5 s of working time left")
        term.expect("time is up", timeout=20)
        thread.join(30)
        assert termios.tcgetattr(term.slave) == before  # raw mode undone
    finally:
        term.close()
    out = term.output
    tail = out[out.rindex(b"\x1b[?1049h"):]
    for mode in (b"\x1b[?1049l", b"\x1b[?1000l", b"\x1b[?1l", b"\x1b>", b"\x1b[?25h"):
        assert mode in tail[:tail.index(b"time is up")], mode



def test_attach_opens_a_second_shell_into_the_run(prepared_env: str, isolation: Isolation,
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rebench.harness.run.official_score", Scorer())
    run = create_run(prepared_env, "cpu", "human", 120, isolation, root=tmp_path / "runs")
    main, second = Terminal(), Terminal()
    thread = start(run, HumanAgent("", in_fd=main.slave, out_fd=main.slave))
    try:
        main.expect(r"left ~\]")
        client = threading.Thread(target=attach, args=(run.run_dir, second.slave),
                                  daemon=True)
        client.start()
        second.expect(r"(?s)a second shell in run .*left ~\]")
        second.type("echo from-two > two.txt; echo done-$((6*7))\n")
        second.expect("done-42")
        second.type("exit\n")  # leaves the run going: no question asked
        client.join(20)
        assert not client.is_alive()
        main.type("cat two.txt; rebench-task end --yes\n")
        main.expect("from-two")
        thread.join(60)
        assert not thread.is_alive()
    finally:
        main.close()
        second.close()
    events = read_events(run.run_dir / "events.jsonl")
    shells = [e.data["shell"] for e in events if e.type == "shell_start"]
    assert shells == ["main", "attach1"]
    assert any("ended the run" in str(e.data.get("text")) for e in events if e.type == "note")
    recordings = sorted(p.name for p in (run.protected / "recordings").iterdir())
    assert recordings == ["00-main.log", "00-main.timing", "01-attach1.log",
                          "01-attach1.timing"]
