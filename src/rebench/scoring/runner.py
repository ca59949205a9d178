"""The untrusted runner: run one command of the agent's solution to completion, sandboxed,
under the profile's limits, and say plainly how it ended.

    outcome = run_child(ctx, [sys.executable, "-m", "rebench.environments.x.child", ...],
                        timeout_s=60)
    if outcome.failure is not ChildFailure.NONE:
        return ScoreResult.invalid(outcome.reason, **outcome.private())
    data = json.loads(outcome.stdout)   # data only: the verdict is computed here

The child's stdout is its data channel (capped: a child that writes more is stopped and
fails with OUTPUT_CAP); the last part of its stderr is kept for the message. Every process
it started is killed when it ends (its sandbox's whole process group).

A child whose output is a log rather than data (a training script) can send stdout and
stderr to a file instead (`output_file=`): the runner then waits for the child's own
process, not for its output to close, and caps the file's size.
"""

from __future__ import annotations

import contextlib
import enum
import os
import select
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rebench.core.hardware import load_stretch
from rebench.sandbox import Isolation
from rebench.scoring.context import ScoringContext

_TAIL_BYTES = 8000
_CHUNK = 1 << 16
_POLL_S = 0.1  # output_file: how often its size is checked


class ChildFailure(enum.Enum):
    """How an untrusted child ended, when it did not end well."""

    NONE = "none"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT_CAP = "output_cap"
    CRASH = "crash"


@dataclass(frozen=True)
class ChildOutcome:
    """What the runner saw: the exit status, how it failed, its wall time (from just
    before its start until its process returned or was stopped, before its tree is torn
    down), its stdout (the data channel; empty with an output file) and the tail of its
    stderr (of the output file)."""

    returncode: int | None
    failure: ChildFailure
    seconds: float
    stdout: bytes
    stderr_tail: str

    @property
    def reason(self) -> str:
        """The failure's feedback reason (core/feedback.COMMON_REASONS): a fixed code the
        agent may see. The exit status and stderr are not in it: code that ran on held-out
        data chooses them, so they go to the private details only (`private()`)."""
        if self.failure is ChildFailure.NONE:
            raise ValueError("the child did not fail")
        return str(self.failure.value)

    def describe(self) -> str:
        """One line for the operator (private details): why the child's result cannot be
        used, with its exit status and the last line of its stderr."""
        texts = {
            ChildFailure.TIMEOUT: f"the solution did not finish within {self.seconds:.0f} s",
            ChildFailure.MEMORY: "the solution ran out of memory (the profile's limit)",
            ChildFailure.OUTPUT_CAP: "the solution wrote more output than allowed",
            ChildFailure.CRASH: f"the solution failed (exit status {self.returncode})",
            ChildFailure.NONE: "the solution ran",
        }
        last = self.stderr_tail.strip().splitlines()[-1:] if self.stderr_tail else []
        return texts[self.failure] + (f": {last[0][:300]}" if last else "")

    def private(self) -> dict[str, object]:
        """What the operator may read of the child's end (a ScoreResult's details)."""
        return {"child_failure": self.failure.value, "child_exit": self.returncode,
                "child_seconds": round(self.seconds, 3), "child_said": self.describe(),
                "stderr": self.stderr_tail[-2000:]}


def run_child(ctx: ScoringContext, argv: Sequence[str], *, timeout_s: float,
              workdir: Path | None = None, writable: bool = False,
              extra_ro: tuple[Path, ...] = (), env: Mapping[str, str] | None = None,
              gpu: bool | None = None, stdin: bytes = b"",
              max_output_bytes: int = 64 << 20, clear_env: bool = False,
              output_file: Path | None = None) -> ChildOutcome:
    """Run `argv` in a fresh sandbox of the scoring (see ScoringContext.untrusted_argv) and
    wait for it, at most `timeout_s` stretched by the machine's load
    (core.hardware.load_stretch); never raises for anything the child does.

    Under local isolation the child gets the host's environment (without REBENCH_*) plus
    `env`, or with `clear_env` exactly `env`; a bwrap sandbox always builds its own.

    With `output_file` (a new file, created here and never through a link: put it where
    the sandbox cannot reach, e.g. the scratch dir), the child's stdout and stderr both go
    to that file instead of memory. The runner then waits for the child's own process
    only: when it returns, everything it left running is killed, so a detached process
    that keeps the file open can neither hold the runner up nor write on. The file may
    grow to `max_output_bytes` (OUTPUT_CAP beyond); `stdout` comes back empty and
    `stderr_tail` is the file's tail."""
    # A busy machine is not a slow solution: the time limit stretches with the load.
    timeout_s *= load_stretch()
    sandbox = ctx.untrusted_sandbox(workdir=workdir, writable=writable, extra_ro=extra_ro,
                                    gpu=gpu, env=env)
    wrapped = sandbox.wrap(list(argv))
    log = None if output_file is None else _create_output(output_file)
    sink = subprocess.PIPE if log is None else log
    start = time.monotonic()
    local = ctx.isolation is Isolation.LOCAL
    local_env = dict(env or {}) if clear_env else _local_env(env)
    proc = subprocess.Popen(wrapped, stdin=subprocess.PIPE, stdout=sink, stderr=sink,
                            start_new_session=True,
                            env=local_env if local else None,
                            cwd=str(workdir or ctx.solution_dir))
    oom = False
    out, err = bytearray(), b""
    try:
        if log is None:
            out, err, failure = _pump(proc, stdin, timeout_s, max_output_bytes)
        else:
            failure = _watch(proc, stdin, log, timeout_s, max_output_bytes)
        proc.wait()
        seconds = time.monotonic() - start
        oom = sandbox.oom_killed()
    finally:
        sandbox.destroy()  # the child's whole tree, detached processes included
        proc.wait()
        if log is not None:
            err = _file_tail(log)  # nothing of the child is left to write to it
            os.close(log)
    if failure is ChildFailure.NONE and proc.returncode != 0:
        memory = oom or b"MemoryError" in err[-_TAIL_BYTES:]
        failure = ChildFailure.MEMORY if memory else ChildFailure.CRASH
    return ChildOutcome(returncode=proc.returncode, failure=failure, seconds=seconds,
                        stdout=bytes(out), stderr_tail=err[-_TAIL_BYTES:].decode(errors="replace"))


def _create_output(path: Path) -> int:
    """A new, empty, private file (not through a link; an existing file is a caller bug)."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                   0o600)


def _file_tail(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, _TAIL_BYTES, max(size - _TAIL_BYTES, 0))


def _local_env(env: Mapping[str, str] | None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("REBENCH_")}
    return {**base, **(env or {})}


def _pump(proc: subprocess.Popen[bytes], stdin: bytes, timeout_s: float,
          max_output: int) -> tuple[bytearray, bytes, ChildFailure]:
    """Feed stdin, read stdout (capped) and stderr (tail) until EOF or the deadline."""
    if proc.stdin is None or proc.stdout is None or proc.stderr is None:
        raise RuntimeError("Popen gave no pipes")  # cannot happen with PIPE; for the types
    feeder = threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True)
    feeder.start()  # a child that never reads its stdin cannot block the runner
    out, err = bytearray(), bytearray()
    failure = ChildFailure.NONE
    deadline = time.monotonic() + timeout_s
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, out)
    selector.register(proc.stderr, selectors.EVENT_READ, err)
    while selector.get_map():
        left = deadline - time.monotonic()
        if left <= 0:
            failure = ChildFailure.TIMEOUT
            break
        for key, _ in selector.select(timeout=min(left, 0.5)):
            chunk = os.read(key.fd, _CHUNK)
            if not chunk:
                selector.unregister(key.fileobj)
                continue
            key.data.extend(chunk)
            if key.data is err and len(err) > 4 * _TAIL_BYTES:
                del err[:-_TAIL_BYTES]
        if len(out) > max_output:
            failure = ChildFailure.OUTPUT_CAP
            break
    selector.close()
    if failure is not ChildFailure.NONE:
        _kill(proc)
    else:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            failure = ChildFailure.TIMEOUT
            _kill(proc)
    return out[:max_output], bytes(err), failure


def _watch(proc: subprocess.Popen[bytes], stdin: bytes, log: int, timeout_s: float,
           max_output: int) -> ChildFailure:
    """output_file: feed stdin and wait for the child's process to return (without reaping
    it, so its process group cannot be reused), stopping it at the deadline or when the
    file passes the cap; then kill its process group (what it left behind)."""
    if proc.stdin is None:
        raise RuntimeError("Popen gave no stdin pipe")  # cannot happen with PIPE
    threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True).start()
    deadline = time.monotonic() + timeout_s
    pidfd = os.pidfd_open(proc.pid)  # readable once the process has exited
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                failure = ChildFailure.TIMEOUT
                break
            exited = select.select([pidfd], [], [], min(left, _POLL_S))[0]
            if os.fstat(log).st_size > max_output:
                failure = ChildFailure.OUTPUT_CAP
                break
            if exited:
                failure = ChildFailure.NONE
                break
    finally:
        os.close(pidfd)
    _kill(proc)
    return failure


def _feed(pipe: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError):
        pipe.write(data)
    with contextlib.suppress(OSError):
        pipe.close()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
