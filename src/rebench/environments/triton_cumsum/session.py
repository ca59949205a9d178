"""One untrusted child and the timed calls made to it (trusted side).

Per call: while the child's process tree is frozen, draw a fresh input and poison the output;
start the clock, resume the tree, send `go`, wait for `done` (with the per-call timeout),
then take the result out of reach before the clock stops: on CPU by freezing the whole
tree (SIGSTOP), on GPU by copying the output into a private buffer on the scorer's own
stream (the copy's separately measured time is subtracted). Verification happens later,
after the child is dead.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rebench.environments.triton_cumsum.buffers import Transport, draw_input, fresh_seed, poison
from rebench.environments.triton_cumsum.proctree import ChildTree, TreeNotStoppedError, descendants
from rebench.environments.triton_cumsum.protocol import (
    ChildGone,
    ProtocolError,
    Tag,
    Timeout,
    pending,
    receive,
    send,
)

MAX_LOG_TAIL = 1500
MAX_FILE_BYTES = 256 * 1024 * 1024  # compiler caches of a solution fit easily


class SubmissionError(Exception):
    """The submission failed; the text is the agent-visible reason."""


@dataclass(frozen=True)
class CallResult:
    """One call: its seed, trusted-side seconds, and (timed calls) the output snapshot."""

    seed: int
    seconds: float
    snapshot: torch.Tensor | None
    walk_charged: bool


@dataclass
class ChildSession:
    """Starts the child, makes calls, and always kills the child tree on `close`."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    transport: Transport
    log_path: Path
    startup_timeout_s: float
    call_timeout_s: float
    proc: subprocess.Popen[bytes] | None = None
    tree: ChildTree | None = None
    _go: int = -1
    _done: int = -1
    _fds: list[int] = field(default_factory=list)

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> float:
        """Spawn the child and wait for READY; returns the start-up seconds."""
        go_r, self._go = os.pipe()
        self._done, done_w = os.pipe()
        self._fds = [self._go, self._done]
        fds = (go_r, done_w, *self.transport.pass_fds())
        argv = [*self.argv, "--go-fd", str(go_r), "--done-fd", str(done_w),
                *self.transport.child_args()]
        baseline = descendants(os.getpid())
        began = time.monotonic()
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=fds, start_new_session=True, env=self.env, cwd=self.cwd,
                close_fds=True,
                preexec_fn=_limit_file_size,
            )
        os.close(go_r)
        os.close(done_w)
        self.tree = ChildTree(self.proc.pid, baseline)
        try:
            self.transport.after_spawn(self._go)
        except OSError as exc:
            raise self._died("while receiving its buffers") from exc
        self._expect_ready(began + self.startup_timeout_s)
        self._freeze()
        return time.monotonic() - began

    def _expect_ready(self, deadline: float) -> None:
        try:
            message = receive(self._done, deadline)
        except Timeout:
            raise SubmissionError(
                f"solution.py did not finish loading within {self.startup_timeout_s:.0f} s"
            ) from None
        except ChildGone:
            raise self._died("while loading solution.py") from None
        except ProtocolError as exc:
            raise SubmissionError(f"the solution process broke the protocol: {exc}") from None
        if message.tag is Tag.ERROR:
            raise SubmissionError(message.text)
        if message.tag is not Tag.READY:
            raise SubmissionError(f"unexpected message {message.tag.name} while loading")

    def close(self) -> None:
        """Kill the whole child tree (always safe to call)."""
        if self.tree is not None:
            self.tree.kill()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    # ---- calls -----------------------------------------------------------------------
    def call(self, label: str, slot: int, keep: bool) -> CallResult:
        """One call on a fresh input; `keep` stores a snapshot of the output for checking."""
        tree = self._tree()
        seed = fresh_seed()
        draw_input(self.transport.x, seed)
        poison(self.transport.out, seed)
        self.transport.settle()
        if pending(self._done):
            if not os.read(self._done, 1):
                raise self._died(f"before {label}")
            raise SubmissionError(f"{label}: the solution sent a message before it was asked")
        start = time.perf_counter()
        tree.resume()
        try:
            send(self._go, Tag.GO)
        except OSError:
            raise self._died(f"before {label}") from None
        self._await_done(label)
        walk_charged = False
        snap: torch.Tensor | None = None
        if self.transport.snapshot_in_clock:
            snap = self.transport.snapshot(slot)
            stop = time.perf_counter()
            self._freeze()
        else:
            tree.stop_fast()
            stop = time.perf_counter()
            walk_charged = self._freeze()
            if walk_charged:  # something escaped the fast stop and ran during the walk
                stop = time.perf_counter()
            if keep:  # the tree is frozen: nothing can change the output any more
                snap = self.transport.snapshot(slot)
        return CallResult(seed, stop - start, snap if keep else None, walk_charged)

    def _await_done(self, label: str) -> None:
        try:
            message = receive(self._done, time.monotonic() + self.call_timeout_s)
        except Timeout:
            raise SubmissionError(
                f"{label} did not finish within the {self.call_timeout_s:.0f} s limit"
            ) from None
        except ChildGone:
            raise self._died(f"during {label}") from None
        except ProtocolError as exc:
            raise SubmissionError(f"the solution process broke the protocol: {exc}") from None
        if message.tag is Tag.ERROR:
            raise SubmissionError(f"{label}: {message.text}")
        if message.tag is not Tag.DONE:
            raise SubmissionError(f"{label}: unexpected message {message.tag.name}")

    def _tree(self) -> ChildTree:
        if self.tree is None:
            raise RuntimeError("ChildSession.start() must succeed before calls")
        return self.tree

    def _freeze(self) -> bool:
        tree = self._tree()
        tree.stop_fast()
        try:
            return tree.stop_all()
        except TreeNotStoppedError as exc:
            raise SubmissionError(str(exc)) from None

    # ---- errors ----------------------------------------------------------------------
    def _died(self, when: str) -> SubmissionError:
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        if code is None:
            how = "it closed its result pipe"
        elif code > 128:  # a sandbox wrapper reports a signal as 128 + signal number
            how = f"exit code {code}: signal {code - 128}?"
        else:
            how = f"exit code {code}" if code >= 0 else f"signal {-code}"
        tail = self.log_tail()
        text = f"the solution process died {when} ({how})"
        return SubmissionError(text + (f"; its last output:\n{tail}" if tail else ""))

    def log_tail(self, limit: int = MAX_LOG_TAIL) -> str:
        """The end of the child's output (it may be large: read only the end)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(0, self.log_path.stat().st_size - limit))
                data = log.read(limit)
        except OSError:
            return ""
        return data.decode("utf-8", errors="replace").strip()


def _limit_file_size() -> None:
    """Runs in the forked child before exec: no file it writes (its log included) may
    outgrow MAX_FILE_BYTES, so a chatty or hostile solution cannot fill the disk."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))


def child_command() -> list[str]:
    """The untrusted entry point, run by this interpreter."""
    return [sys.executable, "-m", "rebench.environments.triton_cumsum.child"]
