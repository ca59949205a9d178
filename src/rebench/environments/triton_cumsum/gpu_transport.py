"""GPU buffers and the trusted side of the GPU timing protocol (see README, "How a score is
taken").

The scorer owns the CUDA input and output buffers (shared once with the child through CUDA
IPC) and a small shared-memory flag page (a sealed memfd, inherited by the child; no path
on disk). Per call:

1. prepare: on the scorer's own stream, draw a fresh input, poison the output, draw secret
   sample positions; time that with the scorer's CUDA events. GPU contexts are
   time-sliced, so if anything else keeps the GPU busy meanwhile (a solution kernel that
   polls the input to start early, a hog) this preparation takes far longer than it does
   alone, and the call is refused.
2. time: the clock starts, the go number is written to the flag page (the child busy-waits
   on it), the scorer busy-waits for the child's done number, then gathers the output at
   the secret sample positions on its own stream and synchronizes. The clock stops when
   that gather has finished: "done" is established by the scorer's own GPU work, not by
   anything the child says. If the child reported early, the gather either waits for the
   child's context to yield the GPU (its time is counted) or reads unwritten positions
   (the call is wrong). Nothing is subtracted from the clock.
3. after the clock: the child tree is frozen and the scorer hashes the whole output with
   secret weights; the expected answer's hash is computed only after the child is dead.
"""

from __future__ import annotations

import mmap
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch

from rebench.environments.triton_cumsum.buffers import (
    draw_input,
    fresh_seed,
    poison,
    sealed_memfd,
)
from rebench.environments.triton_cumsum.protocol import DONE, FLAG_BYTES, Tag, send

SAMPLES = 65536  # positions read inside the clock; 1e-4 unwritten is caught w.p. 1 - e^-6.5

# Called every few thousand spins of a wait with the deadline; raises to stop the wait.
CheckFn = Callable[[int], None]


@dataclass(frozen=True)
class Prepared:
    """One call's secrets: the input seed, the sample positions, the prep's GPU time."""

    seed: int
    positions: torch.Tensor
    prep_ms: float


def hash_output(out: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """A 64-bit fingerprint of `out` under secret random weights (wrapping arithmetic)."""
    return (out.to(torch.int64) * weights).sum()


class CudaTransport:
    """The scorer's CUDA buffers, flag page and private stream (trusted side)."""

    def __init__(self, n: int, samples: int = SAMPLES) -> None:
        self.n = n
        self.samples = samples
        self.x = torch.empty(n, dtype=torch.int32, device="cuda")
        self.out = torch.empty(n, dtype=torch.int32, device="cuda")
        self.stream = torch.cuda.Stream()  # type: ignore[no-untyped-call]
        gen = torch.Generator(device="cuda").manual_seed(fresh_seed())
        with torch.cuda.stream(self.stream):
            self.weights = torch.randint(-(2**62), 2**62, (n,), dtype=torch.int64,
                                         device="cuda", generator=gen)
        self._flag_fd = sealed_memfd("rebench-flags", FLAG_BYTES)
        self._map = mmap.mmap(self._flag_fd, FLAG_BYTES, mmap.MAP_SHARED)
        self.flags = memoryview(self._map).cast("q")
        self._events = (torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
                        torch.cuda.Event(enable_timing=True))  # type: ignore[no-untyped-call]
        self.prep_alone_ms = statistics.median(self.prepare().prep_ms for _ in range(7))

    # ---- child set-up ----------------------------------------------------------------
    def child_args(self) -> list[str]:
        return ["--flag-fd", str(self._flag_fd)]

    def pass_fds(self) -> tuple[int, ...]:
        return (self._flag_fd,)

    def after_spawn(self, go_fd: int) -> None:
        from multiprocessing.reduction import ForkingPickler

        import torch.multiprocessing  # noqa: F401  (registers CUDA IPC reductions)

        send(go_fd, Tag.HANDLES, bytes(ForkingPickler.dumps((self.x, self.out))))

    # ---- per call --------------------------------------------------------------------
    def prepare(self) -> Prepared:
        """Fresh input, poisoned output, secret positions; timed on the scorer's stream."""
        seed = fresh_seed()
        start, end = self._events
        with torch.cuda.stream(self.stream):
            start.record()
            draw_input(self.x, seed)
            poison(self.out, seed)
            gen = torch.Generator(device="cuda").manual_seed(seed ^ 0xA11CE)
            positions = torch.randint(0, self.n, (self.samples,), device="cuda",
                                      generator=gen)
            end.record()
        end.synchronize()
        return Prepared(seed, positions, start.elapsed_time(end))

    def gather(self, positions: torch.Tensor) -> torch.Tensor:
        """Read the output at `positions` on the scorer's stream and wait for it: the last
        step inside the clock."""
        with torch.cuda.stream(self.stream):
            sample = torch.index_select(self.out, 0, positions)
        self.stream.synchronize()
        return sample

    def fingerprint(self) -> torch.Tensor:
        """Hash of the whole output (after the clock, with the child frozen)."""
        with torch.cuda.stream(self.stream):
            digest = hash_output(self.out, self.weights)
        self.stream.synchronize()
        return digest

    def wait_done(self, number: int, deadline_ns: int, check: CheckFn) -> None:
        """Busy-wait until the child's done slot holds `number`. Every few thousand spins
        `check()` runs (the pipe for errors or EOF, the deadline): it raises to stop."""
        flags = self.flags
        spins = 0
        while flags[DONE] != number:
            spins += 1
            if spins & 0xFFF == 0:
                check(deadline_ns)

    def close(self) -> None:
        torch.cuda.synchronize()
        self.flags.release()
        self._map.close()
        os.close(self._flag_fd)


