"""Deadline warnings: over a full-screen program a bell and one status row (said in full
at the next prompt), on the plain screen a line; every warning in the session recording
(a reviewer replaying it sees when the participant was warned) and in the run's events."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from human_pty import Terminal

from rebench.agents.human import HumanAgent
from rebench.agents.terminal import RelayHooks, ScreenState, relay, status_line
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.run import create_run
from rebench.sandbox import Isolation


class Always:
    """A Warner stand-in that warns once, at the first turn of the relay."""

    def __init__(self) -> None:
        self.done = False

    def due(self) -> float | None:
        if self.done:
            return None
        self.done = True
        return 60.0


def test_warning_over_a_full_screen_program_does_not_scroll_it() -> None:
    line = status_line(60.0, b"\x18\x00\x50\x00\x00\x00\x00\x00")  # 24 rows, 80 columns
    assert line.startswith("\a\x1b7\x1b[24;1H") and line.endswith("\x1b8")
    assert "\n" not in line and "1 min of working time left" in line

    user_master, user_slave = os.openpty()
    master, slave = os.openpty()
    os.write(slave, b"\x1b[?1049h")  # the program in the shell entered the alternate screen
    hooks = RelayHooks(warner=Always())  # type: ignore[arg-type]
    seen: list[tuple[float, bool]] = []
    hooks.warned = lambda mark, full: seen.append((mark, full))
    thread = threading.Thread(target=relay, args=(master, user_slave, user_slave,
                                                  lambda: True, hooks, ScreenState()),
                              daemon=True)
    thread.start()
    try:
        out = _read_for(user_master, 1.0)
        assert b"\x1b7" in out and b"1 min of working time left" in out
        assert b"\r\n---" not in out  # no line scrolled over the program's screen
        assert seen == [(60.0, True)]
        os.write(slave, b"\x1b[?1049l$ ")  # the program is gone: back at the prompt
        out = _read_for(user_master, 1.0)
        assert b"--- rebench: 1 min of working time left." in out  # said in full now
    finally:
        hooks.stop.set()
        thread.join(5)
        for fd in (master, slave, user_master, user_slave):
            os.close(fd)


def _read_for(fd: int, seconds: float) -> bytes:
    import select

    data, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        if select.select([fd], [], [], 0.05)[0]:
            data += os.read(fd, 65536)
    return data


@pytest.mark.skipif(shutil.which("script") is None, reason="util-linux script is missing")
@pytest.mark.usefixtures("fake_scorer")
def test_warnings_are_in_the_recording_and_the_events(
        prepared_env: str, isolation: Isolation, tmp_path: Path) -> None:
    run = create_run(prepared_env, "cpu", "human", 8, isolation, root=tmp_path / "runs")
    term = Terminal()
    agent = HumanAgent("", in_fd=term.slave, out_fd=term.slave, warn_marks_s=(5.0,))
    thread = threading.Thread(target=execute_run, args=(run, agent), daemon=True)
    thread.start()
    try:
        term.expect(r"left ~\]")
        term.expect("5 s of working time left", timeout=20)
        term.expect("time is up", timeout=20)
        thread.join(30)
    finally:
        term.close()
    assert term.output.count(b"5 s of working time left") == 1  # shown once, not twice
    events = read_events(run.run_dir / "events.jsonl")
    (note,) = [e for e in events if e.type == "note" and "warned" in e.data.get("text", "")]
    assert note.data["shell"] == "main" and note.data["mark_s"] == 5.0
    start = next(e for e in events if e.type == "shell_start")
    replay = subprocess.run(["scriptreplay", "--log-timing",
                             str(run.run_dir / start.data["timing"]), "--log-out",
                             str(run.run_dir / start.data["recording"]), "--divisor", "1000"],
                            capture_output=True, check=True)
    assert b"5 s of working time left" in replay.stdout
