"""GPU buffers and the trusted side of the GPU timing protocol (see README, "How a score is
taken").

The scorer owns `batch` pairs of CUDA input and output buffers (shared once with the child
through CUDA IPC) and a small shared-memory flag page (a sealed memfd inherited by the
child; no path on disk). Calls are timed in batches, one batch per sample:

1. prepare (the child's processes frozen): on the scorer's own stream, poison every
   output and draw secret sample positions and the seeds of the inputs. No input of the
   batch exists yet: whatever the child left armed on the GPU (a kernel, a stream waiting
   on a memory value) has nothing to compute on. GPU contexts are time-sliced: if
   anything else keeps the GPU busy meanwhile (a solution kernel left running, a hog),
   the scorer's own work waits for its turn. Each slot's work is timed on the wall clock
   and with the scorer's CUDA events (which count only once its work runs); if the
   difference, summed over the batch, exceeds a limit, the batch is refused.
2. time: the clock starts, the child's tree is resumed, and the scorer draws every
   slot's fresh input on its stream and waits for it (`draw`): the inputs come into
   existence inside the clock, so no work of the child on them, armed before or not,
   can run outside it (a probe in 1.2.0 finished several calls' work in the untimed
   preparation, 17-18% faster than the same kernels run honestly). Then for each slot in
   turn the slot and the call's number are written to the flag page (the child
   busy-waits on it) and the scorer busy-waits for the child's done number. After the
   last call the scorer reads every output at its secret lattice of positions with
   strided copies on a copy engine (strided_read.py) and waits for them; then the clock
   stops. "Done" is established by the scorer's own read, not by anything the child
   says: nothing orders the copies after the child's kernels, so work the child left
   running leaves sampled positions unwritten (the batch is wrong). A child that reports
   one call early only moves time into the next call of the same batch. Nothing is
   subtracted: the sample is the batch's time over its number of calls.
3. after the clock: the tree is frozen and every output is hashed with secret weights; the
   expected answers (and their hashes) are computed only after the child is dead.

One wake-up, the drawing of the inputs (about 0.1 ms per call on an H200: a write of
the input), the first call's cold launch path and the strided read per batch are the
protocol's cost; a batch of B calls spreads them over B calls.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from rebench.environments.triton_cumsum.buffers import (
    fill_input,
    fresh_seed,
    input_generator,
    poison,
    sealed_memfd,
)
from rebench.environments.triton_cumsum.protocol import (
    DONE,
    FLAG_BYTES,
    GO,
    RETURNED,
    SEEN,
    SLOT,
    SYNCED,
    Tag,
    send,
)
from rebench.environments.triton_cumsum.strided_read import Lattice, draw_lattice, read_async

# Positions read inside the clock, per output: rows of LATTICE_WIDTH values (a copy
# engine's cost is per row), so 1e-3 of an output left unwritten is caught w.p. 1 - e^-16,
# and any unwritten stretch longer than the lattice's pitch (n / 256 elements) always.
LATTICE_SAMPLES, LATTICE_WIDTH = 16384, 64

# Called every few thousand spins of a wait with the deadline; raises to stop the wait.
CheckFn = Callable[[int], None]


@dataclass(frozen=True)
class Prepared:
    """One batch's secrets: the input seeds and sample positions; and how long the scorer's
    own GPU work waited for the GPU (wall time minus its GPU time, summed over the slots)."""

    seeds: tuple[int, ...]
    positions: tuple[Lattice, ...]
    prep_ms: float
    waited_ms: float
    dests: tuple[torch.Tensor, ...]  # pinned host buffers the gather reads into, per slot
    generators: tuple[torch.Generator, ...] = ()  # seeded with `seeds`, used by `draw`


def pinned_int32(size: int) -> torch.Tensor:
    """A pinned host buffer the gather reads a lattice into."""
    return torch.empty(size, dtype=torch.int32, pin_memory=True)


def hash_output(out: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """A 64-bit fingerprint of `out` under secret random weights (wrapping arithmetic)."""
    return (out.to(torch.int64) * weights).sum()


class CudaTransport:
    """The scorer's CUDA buffers, flag page and private stream (trusted side)."""

    def __init__(self, n: int, batch: int) -> None:
        self.n = n
        self.xs = [torch.empty(n, dtype=torch.int32, device="cuda") for _ in range(batch)]
        self.outs = [torch.empty_like(x) for x in self.xs]
        self.stream = torch.cuda.Stream()  # type: ignore[no-untyped-call]
        gen = torch.Generator(device="cuda").manual_seed(fresh_seed())
        with torch.cuda.stream(self.stream):
            self.weights = torch.randint(-(2**62), 2**62, (n,), dtype=torch.int64,
                                         device="cuda", generator=gen)
        self._flag_fd = sealed_memfd("rebench-flags", FLAG_BYTES)
        self._map = mmap.mmap(self._flag_fd, FLAG_BYTES)
        self.flags = memoryview(self._map).cast("q")
        self._events = (torch.cuda.Event(enable_timing=True),  # type: ignore[no-untyped-call]
                        torch.cuda.Event(enable_timing=True))  # type: ignore[no-untyped-call]
        self.draw(self.prepare())  # warm-up: allocator, generator kernels, clocks

    @property
    def batch(self) -> int:
        return len(self.xs)

    # ---- child set-up ----------------------------------------------------------------
    def child_args(self) -> list[str]:
        return ["--flag-fd", str(self._flag_fd)]

    def pass_fds(self) -> tuple[int, ...]:
        return (self._flag_fd,)

    def after_spawn(self, go_fd: int) -> None:
        from multiprocessing.reduction import ForkingPickler

        import torch.multiprocessing  # noqa: F401  (registers CUDA IPC reductions)

        send(go_fd, Tag.HANDLES, bytes(ForkingPickler.dumps((self.xs, self.outs))))

    # ---- per batch -------------------------------------------------------------------
    def prepare(self) -> Prepared:
        """Poisoned outputs, secret positions and the inputs' seeds, slot by slot on the
        scorer's stream, each slot waited for and timed twice: on the wall clock and with
        the scorer's CUDA events (GPU time of its own work once it runs). Draws no input:
        that is `draw`, inside the clock."""
        seeds, positions, waited = [], [], 0.0
        began = time.perf_counter()
        first, last = self._events
        for out in self.outs:
            seed = fresh_seed()
            slot_began = time.perf_counter()
            with torch.cuda.stream(self.stream):
                first.record()
                # Poison and positions from seeds of their own: the child may read the
                # poisoned output before the clock, and nothing in it follows from x.
                poison(out, fresh_seed())
                positions.append(draw_lattice(self.n, LATTICE_SAMPLES, LATTICE_WIDTH,
                                              fresh_seed()))
                last.record()
            last.synchronize()  # each slot waits: time-slicing shows in every one
            wall = (time.perf_counter() - slot_began) * 1e3
            waited += max(0.0, wall - first.elapsed_time(last))
            seeds.append(seed)
        dests = tuple(pinned_int32(p.rows * p.width) for p in positions)
        generators = tuple(input_generator(seed, self.xs[0].device) for seed in seeds)
        return Prepared(tuple(seeds), tuple(positions), (time.perf_counter() - began) * 1e3,
                        waited, dests, generators)

    def draw(self, prepared: Prepared) -> None:
        """Draw every slot's input from its seed and wait for it: the first step inside
        the clock (the child may already run; its GPU work then shares the clock's time)."""
        with torch.cuda.stream(self.stream):
            for x, gen in zip(self.xs, prepared.generators, strict=True):
                fill_input(x, gen)
        self.stream.synchronize()

    def gather(self, prepared: Prepared) -> list[torch.Tensor]:
        """Read every output at its secret positions and wait for it: the last step inside
        the clock. Strided copies into pinned memory on a copy engine (strided_read.py),
        not a kernel: no switch of the compute engine away from the child's context."""
        for out, where, dest in zip(self.outs, prepared.positions, prepared.dests,
                                    strict=True):
            read_async(out, where, dest, self.stream)
        self.stream.synchronize()
        return list(prepared.dests)

    def fingerprints(self) -> list[torch.Tensor]:
        """Hash of every whole output (after the clock, with the child frozen)."""
        with torch.cuda.stream(self.stream):
            digests = [hash_output(out, self.weights) for out in self.outs]
        self.stream.synchronize()
        return digests

    def call(self, slot: int, number: int, deadline_ns: int, check: CheckFn) -> int:
        """Start call `number` on `slot` and busy-wait until the child's done slot holds
        it; returns when the go flag was written (perf_counter_ns). Every few thousand spins
        `check()` runs (errors, EOF, the deadline)."""
        flags = self.flags
        flags[SLOT] = slot
        go_ns = time.perf_counter_ns()
        flags[GO] = number
        spins = 0
        while flags[DONE] != number:
            spins += 1
            if spins & 0xFFF == 0:
                check(deadline_ns)
        return go_ns

    def child_stamps(self) -> tuple[int, int, int]:
        """The child's own stamps of its last call (untrusted: diagnostics only)."""
        return self.flags[SEEN], self.flags[RETURNED], self.flags[SYNCED]

    def close(self) -> None:
        torch.cuda.synchronize()
        self.flags.release()
        self._map.close()
        os.close(self._flag_fd)
