"""The participant's shell: its start-up file, the command line that starts it in the run's
sandbox, and the recording of its terminal.

The task folder (a temporary folder bound read-only into the sandbox) holds:
  rebench-task   the stdlib-only client (agents/task_cli.py)
  rebench-shell  $SHELL inside: bash with our start-up file, so a shell that tmux, screen
                 or an editor opens keeps PATH and the task socket (a login shell would
                 reset PATH from /etc/profile)
  bashrc         prompt with the time left, command logging, confirmation before ending
  task.sock      the harness's socket (human_server.TaskServer)

A recording is made with util-linux `script` on the harness's side of the terminal, into
the run's protected/recordings/ (out of the participant's reach), and replays with
`scriptreplay`.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rebench.agents import task_cli
from rebench.harness.session import Session
from rebench.sandbox import Isolation, make_sandbox
from rebench.sandbox.local import child_env

# Becomes a session leader (under bwrap's pid-1 init it is not), takes the terminal on
# stdin as the controlling one (job control, Ctrl-C, SIGWINCH), then execs argv[1:].
TAKE_TERMINAL = ("import fcntl, os, sys, termios\n"
                 "try:\n    os.setsid()\nexcept OSError:\n    pass\n"  # already a leader
                 "try:\n    fcntl.ioctl(0, termios.TIOCSCTTY, 0)\nexcept OSError:\n    pass\n"
                 "os.execvp(sys.argv[1], sys.argv[1:])")
# Run by `script` before the sandbox: give up the controlling terminal `script` gave its
# pseudo-terminal, so the shell inside (a new session under bwrap) can take it (job control);
# SIGHUP, which giving it up sends to this process, is ignored for that moment.
RELEASE_TERMINAL = ("import fcntl, os, signal, sys, termios\n"
                    "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
                    "try:\n    fcntl.ioctl(0, termios.TIOCNOTTY)\nexcept OSError:\n    pass\n"
                    "signal.signal(signal.SIGHUP, signal.SIG_DFL)\n"
                    "os.execvp(sys.argv[1], sys.argv[1:])")
# Set for the first shell only (its start-up file unsets it): `confirm` makes `exit`,
# `logout` and Ctrl-D ask before ending the run; `plain` (input from a script) does not.
MAIN_SHELL_ENV = "REBENCH_MAIN_SHELL"
TASK_DIR_ENV = "REBENCH_TASK_DIR"

BASHRC = r"""# rebench: the participant's shell (generated; see agents/human_shell.py)
HISTFILE=/tmp/.bash_history   # not in the workspace; every command is logged by the harness
HISTCONTROL=
HISTIGNORE=
# Each command is logged as it starts (PS0 is expanded after a line is read, before it runs).
__rebench_log() {
  local line
  line=$(HISTTIMEFORMAT= builtin history 1)
  [ -n "$line" ] && rebench-task _prompt started "$line" "$$" >/dev/null 2>&1
}
PS0='$(__rebench_log)'
__rebench_prompt() {
  local status=$?
  __rebench_left=$(rebench-task _prompt 2>/dev/null)
  return $status
}
PROMPT_COMMAND=__rebench_prompt
PS1='[rebench ${__rebench_left:-?} left \W]\$ '
if [ "${REBENCH_MAIN_SHELL:-}" = confirm ]; then
  IGNOREEOF=1000000   # a stray Ctrl-D says 'Use "exit" to leave the shell.'
  __rebench_end() {
    local answer
    echo "rebench: leaving this shell ends the run for good" \
         "($(rebench-task _prompt 2>/dev/null) of working time left):"
    echo "         the final score runs and the run cannot be resumed."
    read -r -p 'Type "end" to end the run now, anything else to go on: ' answer
    if [ "$answer" = end ]; then builtin exit 0; fi
    echo "rebench: the run goes on."
  }
  exit() { __rebench_end; }
  logout() { __rebench_end; }
fi
unset REBENCH_MAIN_SHELL
"""

SHELL_SCRIPT = """#!/bin/bash
# rebench: $SHELL in the sandbox; an interactive shell gets the rebench start-up file.
if [ $# -eq 0 ]; then
  exec bash --noprofile --rcfile "$REBENCH_TASK_DIR/bashrc" -i
fi
exec bash "$@"
"""


def _write_executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def install_task_dir(task_dir: Path) -> None:
    """Write `rebench-task`, `rebench-shell` and `bashrc` into `task_dir`."""
    source = Path(task_cli.__file__).read_text()
    # One shebang argument only: Linux passes everything after the path as a single word.
    _write_executable(task_dir / "rebench-task", f"#!{sys.executable} -IS\n{source}")
    _write_executable(task_dir / "rebench-shell", SHELL_SCRIPT)
    (task_dir / "bashrc").write_text(BASHRC)


def shell_path(task_dir: Path) -> str:
    """PATH inside: the task folder, then the harness's interpreter's folder (so `python` is
    the one with rebench's packages even when rebench was started by its path, with no
    virtualenv active), then the caller's PATH."""
    parts = [str(task_dir), str(Path(sys.executable).parent)]
    parts += [p for p in os.environ.get("PATH", os.defpath).split(os.pathsep)
              if p and p not in parts]
    return os.pathsep.join(parts)


def sandboxed_shell_argv(session: Session, task_dir: Path, main: bool,
                         interactive: bool) -> list[str]:
    """The shell in the run's sandbox shape, with the task folder and `rebench-task`."""
    base = session.sandbox.config
    env = {**base.env, task_cli.SOCKET_ENV: str(task_dir / "task.sock"),
           TASK_DIR_ENV: str(task_dir), "PATH": shell_path(task_dir),
           "SHELL": str(task_dir / "rebench-shell"),
           "TERM": os.environ.get("TERM", "xterm")}
    if main:
        env[MAIN_SHELL_ENV] = "confirm" if interactive else "plain"
    config = dataclasses.replace(base, extra_ro=(*base.extra_ro, task_dir), env=env)
    bash = ["bash", "--noprofile", "--rcfile", str(task_dir / "bashrc"), "-i"]
    inner = [sys.executable, "-I", "-S", "-c", TAKE_TERMINAL, *bash]
    if session.run.isolation is Isolation.LOCAL:  # no sandbox to set the environment
        inner = ["env", "-i", *(f"{k}={v}" for k, v in child_env(config, None).items()),
                 *inner]
    # In the run's process group: frozen during official scores, killed at the hard stop.
    return make_sandbox(session.run.isolation, config, share_with=session.sandbox).wrap(inner)


@dataclass(frozen=True)
class Recording:
    """One shell's terminal recording: `script`'s output log and its timing file."""

    log: Path
    timing: Path

    def replay_command(self) -> str:
        return f"scriptreplay --log-timing {self.timing} --log-out {self.log}"


def new_recording(protected: Path, label: str) -> Recording | None:
    """Paths for the next recording in `protected`/recordings (numbered across resumes);
    None when util-linux `script` is not installed."""
    if shutil.which("script") is None:
        return None
    folder = protected / "recordings"
    folder.mkdir(parents=True, exist_ok=True)
    n = len(list(folder.glob("*.timing")))
    stem = folder / f"{n:02d}-{label}"
    return Recording(stem.with_suffix(".log"), stem.with_suffix(".timing"))


def recorded_argv(inner: list[str], recording: Recording | None) -> list[str]:
    """`inner` started on the caller's terminal, recorded by `script` when `recording`."""
    take = [sys.executable, "-I", "-S", "-c", TAKE_TERMINAL]
    if recording is None:
        return inner
    release = [sys.executable, "-I", "-S", "-c", RELEASE_TERMINAL]
    # -f: flush every write (the harness kills `script` at the deadline); -e: its exit
    # status is the shell's; `exec`: the sandbox's parent is `script` itself, so the
    # sandbox dies with it.
    return [*take, "script", "-q", "-f", "-e",
            "--log-out", str(recording.log), "--log-timing", str(recording.timing),
            "-c", "exec " + shlex.join([*release, *inner])]


def recorded_terminal_writer(root_pid: int, outer_tty: str) -> Callable[[bytes], bool]:
    """A writer onto the terminal that `script` made for the shell (the inner one, found
    below `root_pid`): what it writes is the shell's output as far as `script` can tell, so
    it is in the recording (with its time) and reaches the participant by the usual way.
    The writer returns False where there is no such terminal (no recording): the caller
    writes to the participant's terminal itself."""
    def write(data: bytes) -> bool:
        path = _inner_tty(root_pid, outer_tty)
        if path is None:
            return False
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NOCTTY)
        except OSError:
            return False
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            return False
        finally:
            os.close(fd)
        return True

    return write


def _inner_tty(root_pid: int, outer_tty: str, depth: int = 4) -> str | None:
    """The first terminal other than `outer_tty` on a descendant's stdin (breadth first,
    `depth` generations): `script`'s child holds the one it records."""
    from rebench.harness.interrupt import child_pids

    level = [root_pid]
    for _ in range(depth):
        level = [c for pid in level for c in child_pids(pid)]
        for pid in level:
            try:
                path = os.readlink(f"/proc/{pid}/fd/0")
            except OSError:
                continue
            if path.startswith("/dev/pts/") and path != outer_tty:
                return path
    return None
