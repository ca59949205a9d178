"""`human`: an interactive shell inside the run's sandbox, the way METR's experts baselined
RE-Bench. The person works in the workspace and talks to the harness with `rebench-task`
(`score`, `status`, `time`, `instructions`); at the deadline the shell and everything
started from it is killed and the final score runs.

The shell runs on a pseudo-terminal of its own, relayed to the user's terminal, so job
control and Ctrl-C work inside and nothing inside can touch the user's real terminal.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import math
import os
import select
import socket
import stat
import subprocess
import sys
import tempfile
import termios
import threading
import tty
from pathlib import Path
from typing import Any

from rebench.agents import task_cli
from rebench.core.duration import format_duration
from rebench.harness.session import Session, agent_view
from rebench.sandbox import make_sandbox

# Runs inside the sandbox: become a session leader (under bwrap's pid-1 init it is not), take
# the pseudo-terminal on stdin as the controlling terminal (job control, Ctrl-C), then
# become the shell.
_SHELL_BOOT = ("import fcntl, os, termios\n"
               "try:\n    os.setsid()\nexcept OSError:\n    pass\n"  # already a leader
               "try:\n    fcntl.ioctl(0, termios.TIOCSCTTY, 0)\nexcept OSError:\n    pass\n"
               "os.execvp('bash', ['bash', '--noprofile', '--norc', '-i'])")
_MAX_REQUEST_BYTES = 4096
_EOT = b"\x04"


def _fmt(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


def describe_score(view: dict[str, Any]) -> str:
    """One readable paragraph for an agent-visible score view."""
    head = f"score #{view.get('index')}: {'valid' if view.get('valid') else 'INVALID'}"
    if "normalized" in view:
        head += f", normalized {_fmt(view.get('normalized'))} (raw {_fmt(view.get('raw'))})"
    return f"{head}\n{json.dumps(view.get('message', {}), indent=1, default=str)}"


def answer(session: Session, command: str) -> dict[str, Any]:
    """The harness's reply to one `rebench-task` command."""
    if command == "time":
        used, left = session.working_s(), session.time_left()
        text = (f"working time used {format_duration(used)}, left {format_duration(left)} "
                f"of {format_duration(used + left)}")
        return {"ok": True, "text": text}
    if command == "instructions":
        return {"ok": True, "text": session.instructions}
    if command == "score":
        return {"ok": True, "text": describe_score(session.score())}
    if command == "status":
        visible = session.run.spec.score_visible_to_agent
        lines = [describe_score(agent_view(e, visible)).splitlines()[0]
                 for e in session.run.entries()]
        lines.append(answer(session, "time")["text"])
        return {"ok": True, "text": "\n".join(lines)}
    return {"ok": False, "text": task_cli.usage()}


class TaskServer:
    """Answers `rebench-task` requests on a unix socket, one thread per connection."""

    def __init__(self, session: Session, path: Path) -> None:
        self.session = session
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                data = conn.makefile("rb").readline(_MAX_REQUEST_BYTES)
                command = str(json.loads(data)["command"])
                reply = answer(self.session, command)
            except Exception as exc:  # a bad request or an expired session: tell, go on
                reply = {"ok": False, "text": f"{type(exc).__name__}: {exc}"}
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps(reply, default=str).encode() + b"\n")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


def install_task_cli(task_dir: Path) -> Path:
    """Write the `rebench-task` script into `task_dir` (bound read-only into the sandbox)."""
    script = task_dir / "rebench-task"
    source = Path(task_cli.__file__).read_text()
    # One shebang argument only: Linux passes everything after the path as a single word.
    script.write_text(f"#!{sys.executable} -IS\n{source}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def shell_argv(session: Session, task_dir: Path) -> list[str]:
    """The sandboxed shell: the run's sandbox plus the task dir and `rebench-task` on PATH."""
    base = session.sandbox.config
    env = {**base.env, task_cli.SOCKET_ENV: str(task_dir / "task.sock"),
           "PATH": f"{task_dir}:{os.environ.get('PATH', os.defpath)}",
           "PS1": "[rebench \\W]$ ", "TERM": os.environ.get("TERM", "xterm")}
    config = dataclasses.replace(base, extra_ro=(*base.extra_ro, task_dir), env=env)
    return make_sandbox(session.run.isolation, config).wrap(
        [sys.executable, "-I", "-S", "-c", _SHELL_BOOT])


def relay(master: int, in_fd: int, out_fd: int, proc: subprocess.Popen[bytes]) -> None:
    """Copy the user's input to the shell's terminal and its output back until it exits."""
    watched = [master, in_fd]
    while True:
        ready, _, _ = select.select(watched, [], [], 0.1)
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the shell and everything on its terminal are gone
                data = b""
            if not data:
                return
            os.write(out_fd, data)
        if in_fd in ready:
            data = os.read(in_fd, 65536)
            if data:
                os.write(master, data)
            else:  # end of input (a script, not a person): end the shell's input too
                watched.remove(in_fd)
                os.write(master, _EOT)
        if proc.poll() is not None and master not in select.select([master], [], [], 0)[0]:
            return


class HumanAgent:
    """A person at a terminal (or a script on stdin) working in the sandbox."""

    name = "human"

    def __init__(self, arg: str = "", *, in_fd: int | None = None,
                 out_fd: int | None = None) -> None:
        del arg  # no options yet
        self.in_fd = sys.stdin.fileno() if in_fd is None else in_fd
        self.out_fd = sys.stdout.fileno() if out_fd is None else out_fd

    def act(self, session: Session) -> None:
        with tempfile.TemporaryDirectory(prefix="rebench-task-") as tmp:
            task_dir = Path(tmp)
            install_task_cli(task_dir)
            server = TaskServer(session, task_dir / "task.sock")
            try:
                os.write(self.out_fd, self._banner(session).encode())
                self._run_shell(session, task_dir)
            finally:
                server.close()

    def _banner(self, session: Session) -> str:
        left = format_duration(session.time_left())
        return (f"\r\n{session.instructions}\r\n\r\n--- rebench: you have {left} of working "
                "time. `rebench-task score|status|time|instructions`; exit the shell to "
                "finish. ---\r\n")

    def _run_shell(self, session: Session, task_dir: Path) -> None:
        master, slave = os.openpty()
        _copy_window_size(self.out_fd, slave)
        saved = termios.tcgetattr(self.in_fd) if os.isatty(self.in_fd) else None
        try:
            proc = subprocess.Popen(shell_argv(session, task_dir), stdin=slave, stdout=slave,
                                    stderr=slave, start_new_session=True,
                                    cwd=session.run.workspace)
            os.close(slave)
            slave = -1
            session.track(proc)
            if saved is not None:
                tty.setraw(self.in_fd)
            try:
                relay(master, self.in_fd, self.out_fd, proc)
            finally:
                session.kill_tracked()
            if session.expired:
                os.write(self.out_fd, b"\r\n--- rebench: time is up; the shell was stopped and "
                                      b"the final score runs now ---\r\n")
        finally:
            if saved is not None:
                termios.tcsetattr(self.in_fd, termios.TCSADRAIN, saved)
            os.close(master)
            if slave >= 0:
                os.close(slave)


def _copy_window_size(from_fd: int, to_fd: int) -> None:
    with contextlib.suppress(OSError):
        size = fcntl.ioctl(from_fd, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(to_fd, termios.TIOCSWINSZ, size)
