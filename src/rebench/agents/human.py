"""`human`: an interactive shell inside the run's sandbox, the way METR's experts baselined
RE-Bench. The person works in the workspace and talks to the harness with `rebench-task`
(`score`, `status`, `time`, `instructions`, `end`); the prompt shows the time left and
warnings come at 1 h, 15 min, 5 min and 1 min; at the deadline every shell and everything
started from it is killed, the terminal is put back in order and the final score runs.

The shell runs on a pseudo-terminal of its own, relayed to the user's terminal, so job
control and Ctrl-C work inside and nothing inside can touch the user's real terminal.
`rebench attach RUN` opens more shells into the same run (agents/attach.py). Each shell's
terminal is recorded (agents/human_shell.py) and each command it runs is logged in
events.jsonl.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import termios
import threading
import tty
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rebench.agents.attach import AttachServer
from rebench.agents.human_server import TaskServer
from rebench.agents.human_shell import (
    Recording,
    install_task_dir,
    new_recording,
    recorded_argv,
    recorded_terminal_writer,
    sandboxed_shell_argv,
)
from rebench.agents.terminal import (
    WARN_MARKS_S,
    RelayHooks,
    ScreenState,
    Warner,
    relay,
    restore_bytes,
    set_window_size,
    window_size,
)
from rebench.core.duration import format_duration
from rebench.harness.session import Session
from rebench.sandbox.process import kill_group

TIME_UP = (b"\r\n--- rebench: time is up; the shell was stopped and the final score runs "
           b"now ---\r\n")


def _running(proc: subprocess.Popen[bytes]) -> bool:
    """Whether `proc` still runs, without reaping it: its pid (and group id) stays taken
    until the session reaps it, so killing its group later can never hit a stranger."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False


class HumanAgent:
    """A person at a terminal (or a script on stdin) working in the sandbox."""

    name = "human"

    def __init__(self, arg: str = "", *, in_fd: int | None = None, out_fd: int | None = None,
                 warn_marks_s: Sequence[float] = WARN_MARKS_S, record: bool = True) -> None:
        del arg  # no options yet
        self.in_fd = sys.stdin.fileno() if in_fd is None else in_fd
        self.out_fd = sys.stdout.fileno() if out_fd is None else out_fd
        self.warn_marks_s = tuple(warn_marks_s)
        self.record = record
        self._ending = threading.Event()
        self._attached = 0
        self._attach_lock = threading.Lock()

    def act(self, session: Session) -> None:
        self._ending.clear()
        with tempfile.TemporaryDirectory(prefix="rebench-task-") as tmp:
            task_dir = Path(tmp)
            install_task_dir(task_dir)
            server = TaskServer(session, task_dir / "task.sock", on_end=self._ending.set)
            attach = AttachServer(session.run.run_dir,
                                  lambda fd: self._attached_shell(session, task_dir, fd))
            try:
                os.write(self.out_fd, self._banner(session).encode())
                self.run_shell(session, task_dir, self.in_fd, self.out_fd, "main")
            finally:
                self._ending.set()  # attached shells end with the main one
                attach.close()
                server.close()

    def _banner(self, session: Session) -> str:
        left = format_duration(session.time_left())
        text = (f"\n{session.instructions}\n\n"
                f"--- rebench: {left} of working time. Scoring counts against it; warnings "
                "at 1 h, 15 min, 5 min, 1 min.\n"
                "    rebench-task score | status | time | instructions. Finish early: "
                "rebench-task end (or exit). ---\n")
        return text.replace("\n", "\r\n")

    def _attached_shell(self, session: Session, task_dir: Path, fd: int) -> None:
        if self._ending.is_set() or session.expired:
            os.write(fd, b"rebench: the run is ending; no new shell\r\n")
            return
        with self._attach_lock:
            self._attached += 1
            label = f"attach{self._attached}"
        os.write(fd, f"\r\n--- rebench: a second shell in run {session.run.record.run_id}; "
                     "exiting it leaves the run going ---\r\n".encode())
        self.run_shell(session, task_dir, fd, fd, label)

    def run_shell(self, session: Session, task_dir: Path, in_fd: int, out_fd: int,
                  label: str) -> None:
        """One sandboxed shell on a pseudo-terminal relayed to `in_fd`/`out_fd`, until it
        exits, the run ends, or the time is up."""
        main = label == "main"
        interactive = os.isatty(in_fd)
        recording = new_recording(session.run.protected, label) if self.record else None
        argv = recorded_argv(sandboxed_shell_argv(session, task_dir, main, interactive),
                             recording)
        master, slave = os.openpty()
        outer_tty = os.ttyname(slave)
        size = window_size(out_fd) or window_size(in_fd)
        if size is not None:
            set_window_size(slave, size)
        saved = termios.tcgetattr(in_fd) if interactive else None
        screen = ScreenState()
        try:
            proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                    start_new_session=True, cwd=session.run.workspace,
                                    env={**os.environ, "SHELL": "/bin/sh"})
            os.close(slave)
            slave = -1
            session.track(proc)
            session.events.emit("shell_start", shell=label, **_recording_fields(
                session, recording))
            if saved is not None:
                tty.setraw(in_fd)
            hooks = RelayHooks(stop=self._ending,
                               warner=Warner(session.time_left, self.warn_marks_s),
                               say=recorded_terminal_writer(proc.pid, outer_tty),
                               warned=_log_warning(session, label))
            try:
                relay(master, in_fd, out_fd, lambda: _running(proc), hooks, screen)
            finally:
                if proc.returncode is None:  # not reaped (see _running): still its group
                    kill_group(proc.pid)
                session.events.emit("shell_end", shell=label, expired=session.expired)
        finally:
            if saved is not None:
                with contextlib.suppress(termios.error):
                    termios.tcsetattr(in_fd, termios.TCSADRAIN, saved)
            restore = restore_bytes(screen) if os.isatty(out_fd) else b""
            with contextlib.suppress(OSError):
                os.write(out_fd, restore + (TIME_UP if session.expired else b""))
            os.close(master)
            if slave >= 0:
                os.close(slave)


def _log_warning(session: Session, label: str) -> Callable[[float, bool], None]:
    """Each deadline warning as a note in the run's events (beside the recording's)."""
    def warned(mark_s: float, full_screen: bool) -> None:
        session.events.emit("note", text=f"warned: {format_duration(mark_s)} of working "
                            "time left", shell=label, mark_s=mark_s, full_screen=full_screen)

    return warned


def _recording_fields(session: Session, recording: Recording | None) -> dict[str, Any]:
    if recording is None:
        return {"recording": "none (util-linux `script` is not installed)"}
    run_dir = session.run.run_dir
    return {"recording": str(recording.log.relative_to(run_dir)),
            "timing": str(recording.timing.relative_to(run_dir))}
