"""Running one command to completion: bounded output, whole-group kill on timeout."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from rebench.sandbox.base import ExecResult

# Bytes kept of each of stdout and stderr; the rest is read and dropped so a chatty command
# can neither block on a full pipe nor fill the harness's memory.
MAX_OUTPUT_BYTES = 1_000_000
# After the command exits, how long to keep reading pipes that a leftover background process
# may still hold open (local isolation only; bwrap kills such processes with the command).
DRAIN_GRACE_S = 0.5
_READ_CHUNK = 1 << 16
_POLL_S = 0.05


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid`; quiet if it is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class Capture:
    """The first MAX_OUTPUT_BYTES of one pipe and a count of what was dropped."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = MAX_OUTPUT_BYTES - len(self.data)
        self.data += chunk[:max(room, 0)]
        self.dropped += max(len(chunk) - max(room, 0), 0)

    def text(self) -> str:
        text = self.data.decode(errors="replace")
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more bytes dropped]"
        return text


def pump(
    proc: subprocess.Popen[bytes], pipes: tuple[IO[bytes], IO[bytes]], timeout: float,
    kill: Callable[[], None],
) -> tuple[Capture, Capture, bool]:
    """Read both pipes until EOF (or the drain grace after exit); call `kill` on timeout.

    Returns the stdout and stderr captures and whether the timeout hit."""
    captures = {pipe: Capture() for pipe in pipes}
    selector = selectors.DefaultSelector()
    for pipe in captures:
        selector.register(pipe, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    timed_out, exited_at = False, None
    while selector.get_map():
        now = time.monotonic()
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > DRAIN_GRACE_S:
            break
        if not timed_out and now >= deadline:
            timed_out = True
            kill()
        wait = _POLL_S if timed_out or exited_at else min(_POLL_S * 4, deadline - now)
        for key, _ in selector.select(timeout=max(wait, 0.0)):
            chunk = os.read(key.fd, _READ_CHUNK)
            if chunk:
                captures[key.fileobj].add(chunk)  # type: ignore[index]
            else:
                selector.unregister(key.fileobj)
    selector.close()
    if proc.poll() is None:
        # Pipes closed but the command lives on (it closed its outputs): wait for it.
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            timed_out = True
            kill()
    return captures[pipes[0]], captures[pipes[1]], timed_out


def run_process_group(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float,
    started: Callable[[int], None] | None = None,
) -> ExecResult:
    """Run argv in its own session with stdin closed; on timeout SIGKILL its process group.

    `started(pid)` is called once the process exists (to kill its group from elsewhere).
    Output beyond MAX_OUTPUT_BYTES per stream is dropped with a note at the end.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    if started is not None:
        started(proc.pid)
    if proc.stdout is None or proc.stderr is None:
        raise RuntimeError("Popen gave no pipes")  # cannot happen with PIPE; for the types
    try:
        out, err, timed_out = pump(proc, (proc.stdout, proc.stderr), timeout,
                                   lambda: kill_group(proc.pid))
    finally:
        if proc.poll() is None:
            kill_group(proc.pid)
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    return ExecResult(
        returncode=proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
    )
