"""One untrusted child and the timed calls made to it (trusted side).

cpu, per call: while the child's process tree is frozen, draw a fresh input and poison the
output; start the clock, resume the tree, send `go` over a pipe, wait for `done`, freeze
the whole tree (SIGSTOP) and stop the clock; copy the output out while it is frozen.
gpu, per batch: see gpu_transport.py (outputs poisoned while the tree is frozen; the clock
starts before any input of the batch exists; flag page, busy waits; the scorer's own
gather ends the clock). Verification happens later, after the child is dead.

Every failure is a SubmissionError with a reason code (environment.FEEDBACK) for the
agent and a free text (labels, exit status, the child's words) kept in private details.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rebench.environments.triton_cumsum.buffers import CpuTransport, draw_input, fresh_seed, poison
from rebench.environments.triton_cumsum.gpu_transport import CudaTransport
from rebench.environments.triton_cumsum.protocol import (
    CHILD_REASONS,
    DONE,
    ChildGone,
    ProtocolError,
    Tag,
    Timeout,
    pending,
    receive,
    send,
)
from rebench.environments.triton_cumsum.strided_read import Lattice
from rebench.scoring.context import ScoringContext
from rebench.scoring.interactive import ChildTreeError, InteractiveChild, start_interactive

MAX_FILE_BYTES = 256 * 1024 * 1024  # compiler caches of a solution fit easily


class SubmissionError(Exception):
    """The submission failed: `reason` is a code of environment.FEEDBACK (all the agent
    sees), `detail` the free text for the operator (never shown to the agent)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def child_error(text: str, where: str = "") -> SubmissionError:
    """The error the child reported: its first line is a code (protocol.CHILD_REASONS),
    the rest its own words. An unknown code is a protocol breach."""
    code, _, rest = text.partition("\n")
    reason = code if code in CHILD_REASONS else "protocol"
    return SubmissionError(reason, f"{where}: {rest or text}" if where else (rest or text))


@dataclass(frozen=True)
class CallResult:
    """One call: its seed, trusted-side seconds, and (timed calls) the output snapshot."""

    seed: int
    seconds: float
    snapshot: torch.Tensor | None
    walk_charged: bool


@dataclass(frozen=True)
class GpuBatchResult:
    """One gpu batch: per slot its seed, secret positions, what was read there inside the
    clock and the whole output's hash (after the clock); the seconds per call (the batch's
    time over its calls), the preparation's wall time, and each call's time as the
    child reported it (not trusted; shown to explain where time goes)."""

    seeds: tuple[int, ...]
    seconds: float
    positions: tuple[Lattice, ...]
    samples: tuple[torch.Tensor, ...]
    digests: tuple[torch.Tensor, ...]
    prep_ms: float
    waited_ms: float
    call_ms: tuple[float, ...]
    trace_ms: tuple[tuple[float, ...], ...] = ()
    gather_ms: float = 0.0
    draw_ms: float = 0.0  # inside the clock: drawing the batch's inputs


@dataclass
class ChildSession:
    """Starts the child (scoring.interactive: sandboxed, its whole tree frozen between
    calls), makes calls over its pipes and flag page, and always kills it on `close`."""

    ctx: ScoringContext
    argv: list[str]
    env: dict[str, str]
    transport: CpuTransport | CudaTransport
    log_path: Path
    startup_timeout_s: float
    call_timeout_s: float
    prep_limit_ms: float = float("inf")  # gpu: longest the scorer's prep may wait for the GPU
    child: InteractiveChild | None = None
    _go: int = -1
    _done: int = -1
    _fds: list[int] = field(default_factory=list)
    _calls: int = 0  # gpu: the number of the last call (the flag page's go value)

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> float:
        """Spawn the child and wait for READY; returns the start-up seconds."""
        go_r, self._go = os.pipe()
        self._done, done_w = os.pipe()
        self._fds = [self._go, self._done]
        fds = (go_r, done_w, *self.transport.pass_fds())
        argv = [*self.argv, "--go-fd", str(go_r), "--done-fd", str(done_w),
                *self.transport.child_args()]
        began = time.monotonic()
        self.child = start_interactive(self.ctx, argv, pass_fds=fds, log_path=self.log_path,
                                       env=self.env, log_max_bytes=MAX_FILE_BYTES)
        os.close(go_r)
        os.close(done_w)
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
                "load_timeout", f"not loaded within {self.startup_timeout_s:.0f} s"
            ) from None
        except ChildGone:
            raise self._died("while loading solution.py") from None
        except ProtocolError as exc:
            raise SubmissionError("protocol", f"while loading: {exc}") from None
        if message.tag is Tag.ERROR:
            raise child_error(message.text)
        if message.tag is not Tag.READY:
            raise SubmissionError("protocol", f"unexpected message {message.tag.name} "
                                  "while loading")

    def close(self) -> None:
        """Kill the whole child tree (always safe to call)."""
        if self.child is not None:
            self.child.kill()
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    # ---- calls -----------------------------------------------------------------------
    def call(self, label: str, slot: int, keep: bool) -> CallResult:
        """cpu: one call on a fresh input; `keep` stores a copy of the output for checking."""
        transport = self._cpu()
        tree = self._tree()
        seed = fresh_seed()
        draw_input(transport.x, seed)
        poison(transport.out, seed)
        self._no_early_message(label)
        start = time.perf_counter()
        tree.resume()
        try:
            send(self._go, Tag.GO)
        except OSError:
            raise self._died(f"before {label}") from None
        self._await_done(label)
        tree.stop_fast()
        stop = time.perf_counter()
        walk_charged = self._freeze()
        if walk_charged:  # something escaped the fast stop and ran during the walk
            stop = time.perf_counter()
        # The tree is frozen: nothing can change the output any more.
        snap = transport.snapshot(slot) if keep else None
        return CallResult(seed, stop - start, snap, walk_charged)

    def gpu_batch(self, label: str) -> GpuBatchResult:
        """gpu: one batch of calls on fresh inputs (gpu_transport.py says how it is timed)."""
        transport = self._gpu()
        tree = self._tree()
        # The tree is frozen (nothing of it runs on the CPU) and no input of the batch
        # exists yet: GPU work the child left armed has nothing to work on until the clock.
        prepared = transport.prepare()
        if prepared.waited_ms > self.prep_limit_ms:
            raise SubmissionError(
                "gpu_busy", f"{label}: the scorer's own GPU work waited "
                f"{prepared.waited_ms:.2f} ms for the GPU while it prepared the batch")
        self._no_early_message(label)
        if transport.flags[DONE] != self._calls:
            raise SubmissionError("protocol", f"{label}: the done flag was written before "
                                  "it was asked")
        call_ns, stamps = [], []
        start = time.perf_counter_ns()
        tree.resume()
        transport.draw(prepared)  # the inputs come into existence inside the clock
        drawn = time.perf_counter_ns()
        for slot in range(transport.batch):
            self._calls += 1
            deadline = start + int(self.call_timeout_s * 1e9) * (slot + 1)
            go = transport.call(slot, self._calls, deadline,
                                lambda limit: self._check_waiting(label, limit))
            call_ns.append(time.perf_counter_ns())
            stamps.append((go, *transport.child_stamps()))
        samples = transport.gather(prepared)
        stop = time.perf_counter_ns()
        self._freeze()
        marks = [start, *call_ns]
        return GpuBatchResult(
            seeds=prepared.seeds, seconds=(stop - start) / 1e9 / transport.batch,
            positions=prepared.positions, samples=tuple(samples),
            digests=tuple(transport.fingerprints()), prep_ms=prepared.prep_ms,
            waited_ms=prepared.waited_ms,
            call_ms=tuple((b - a) / 1e6 for a, b in itertools.pairwise(marks)),
            trace_ms=tuple(_trace(start, stamp, done)
                           for stamp, done in zip(stamps, call_ns, strict=True)),
            gather_ms=(stop - call_ns[-1]) / 1e6, draw_ms=(drawn - start) / 1e6,
        )

    def _no_early_message(self, label: str) -> None:
        if pending(self._done):
            if not os.read(self._done, 1):
                raise self._died(f"before {label}")
            raise SubmissionError("protocol", f"{label}: a message before it was asked")

    def _check_waiting(self, label: str, deadline_ns: int) -> None:
        """While the scorer busy-waits on the done flag: errors, death, the time limit."""
        if pending(self._done):
            self._await_done(label, expect=Tag.ERROR)
        if time.perf_counter_ns() > deadline_ns:
            raise SubmissionError(
                "timeout", f"{label}: over the {self.call_timeout_s:.0f} s limit per call")

    def _await_done(self, label: str, expect: Tag = Tag.DONE) -> None:
        try:
            message = receive(self._done, time.monotonic() + self.call_timeout_s)
        except Timeout:
            raise SubmissionError(
                "timeout", f"{label}: over the {self.call_timeout_s:.0f} s limit per call"
            ) from None
        except ChildGone:
            raise self._died(f"during {label}") from None
        except ProtocolError as exc:
            raise SubmissionError("protocol", f"{label}: {exc}") from None
        if message.tag is Tag.ERROR:
            raise child_error(message.text, label)
        if message.tag is not expect:
            raise SubmissionError("protocol", f"{label}: unexpected message "
                                  f"{message.tag.name}")

    def _cpu(self) -> CpuTransport:
        if not isinstance(self.transport, CpuTransport):
            raise TypeError("cpu calls need the cpu transport")
        return self.transport

    def _gpu(self) -> CudaTransport:
        if not isinstance(self.transport, CudaTransport):
            raise TypeError("gpu calls need the CUDA transport")
        return self.transport

    def _tree(self) -> InteractiveChild:
        if self.child is None:
            raise RuntimeError("ChildSession.start() must succeed before calls")
        return self.child

    def _freeze(self) -> bool:
        try:
            return self._tree().freeze()
        except ChildTreeError as exc:
            raise SubmissionError("process_tree", str(exc)) from None

    # ---- errors ----------------------------------------------------------------------
    def _died(self, when: str) -> SubmissionError:
        how = self.child.exit_text() if self.child is not None else "it never started"
        tail = self.log_tail()
        text = f"the solution process died {when} ({how})"
        return SubmissionError("crash", text + (f"; its last output:\n{tail}" if tail else ""))

    def log_tail(self) -> str:
        """The end of the child's output."""
        return self.child.log_tail() if self.child is not None else ""


def _trace(start: int, stamp: tuple[int, int, int, int], done: int) -> tuple[float, ...]:
    """One call's (go written, child saw go, call returned, synchronized, done seen) in ms
    from the batch's start; the middle three are the child's (untrusted) stamps."""
    return tuple(round((t - start) / 1e6, 4) for t in (*stamp, done))


def child_command() -> list[str]:
    """The untrusted entry point, run by this interpreter."""
    return [sys.executable, "-m", "rebench.environments.triton_cumsum.child"]
