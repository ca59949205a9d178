"""How the judge and the evaluation start untrusted processes: a narrow `Runner` protocol
(one process run to completion) and `run_local`, the plain-subprocess runner.

The official scorer injects a runner over rebench's one untrusted runner (scoring.py:
`sandboxed_runner`, a fresh sandbox per process under the profile's limits). `run_local`
serves the local evaluate tool and the judge's own tests. Portable: standard library only,
because prepare copies this module into the workspace (where `rebench` is not importable).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

TAIL_BYTES = 8000  # the stderr kept (its end), as rebench's runner keeps
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Request:
    """One process to run: `env` is its whole environment, `stdin` its input (a pipe, never
    a path), `writable` whether it may write in `cwd` (what a sandbox mounts read-write)."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    timeout_s: float
    stdin: bytes = b""
    writable: bool = False
    max_output_bytes: int = 64 << 20  # more stdout than this stops the process


@dataclass(frozen=True)
class Outcome:
    """How it ended: exit status (negative: the signal that killed it), stdout (at most the
    request's cap), the tail of stderr, whether it ran out of time or over the output cap
    (either way it was killed), and its wall time."""

    returncode: int
    stdout: bytes
    stderr_tail: str
    timed_out: bool
    output_capped: bool
    seconds: float


class Runner(Protocol):
    """Runs one process to completion; never raises for anything the process does."""

    def __call__(self, request: Request) -> Outcome: ...


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid`; quiet if it is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_local(request: Request) -> Outcome:
    """No sandbox: the process in its own process group (killed whole when it ends), stdout
    read up to the cap, stderr's tail kept, stopped at the timeout."""
    start = time.monotonic()
    proc = subprocess.Popen(list(request.argv), cwd=request.cwd, env=dict(request.env),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    if proc.stdin is None or proc.stdout is None or proc.stderr is None:
        raise RuntimeError("Popen gave no pipes")  # cannot happen with PIPE; for the types
    out, err = bytearray(), bytearray()
    capped = threading.Event()
    threads = [threading.Thread(target=_feed, args=(proc.stdin, request.stdin), daemon=True),
               threading.Thread(target=_read, daemon=True,
                                args=(proc.stdout, out, request.max_output_bytes, capped,
                                      proc.pid)),
               threading.Thread(target=_read, args=(proc.stderr, err, -1, capped, proc.pid),
                                daemon=True)]
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        proc.wait(timeout=request.timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = not capped.is_set()
    finally:
        kill_group(proc.pid)  # what it left behind in its group
        proc.wait()
    for thread in threads:
        thread.join(timeout=5)  # a process that left the group may hold a pipe open
    return Outcome(returncode=proc.returncode, stdout=bytes(out[:request.max_output_bytes]),
                   stderr_tail=bytes(err[-TAIL_BYTES:]).decode(errors="replace"),
                   timed_out=timed_out, output_capped=capped.is_set(),
                   seconds=time.monotonic() - start)


def _feed(pipe: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError):
        pipe.write(data)
    with contextlib.suppress(OSError):
        pipe.close()


def _read(pipe: IO[bytes], into: bytearray, cap: int, capped: threading.Event,
          pid: int) -> None:
    """Read `pipe` to its end: at most `cap` bytes (then the group is killed), or with
    `cap` < 0 all of it, keeping only its tail."""
    while chunk := os.read(pipe.fileno(), _CHUNK):
        into.extend(chunk)
        if cap < 0 and len(into) > 4 * TAIL_BYTES:
            del into[:-TAIL_BYTES]
        elif 0 <= cap < len(into):
            capped.set()
            kill_group(pid)
            return
