"""Issue 26, class 8: no work of a submission may run between the scorer's preparation of
a gpu batch and its clock. 1.2.0 drew every input of the batch while the child was frozen,
before the clock; GPU work the child had left armed (a stream waiting for an input word to
change) computed several calls there, 17-18% faster than the same kernels run honestly.
Since 1.3.0 the preparation poisons the outputs only, and the inputs are drawn after the
clock started. These tests run the real transport's preparation and draw on CPU tensors
(CUDA streams and events replaced by stand-ins) and the real session's batch with a
stand-in transport that logs the order of events: structural, so they need no GPU and
take no timing. The timing side is measured on an H200 by benchmarks/triton_cumsum_prearm.py."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import torch

from rebench.environments.triton_cumsum import gpu_transport, session
from rebench.environments.triton_cumsum.buffers import make_input, poison
from rebench.environments.triton_cumsum.gpu_transport import CudaTransport, Prepared
from rebench.environments.triton_cumsum.protocol import DONE
from rebench.scoring.interactive import InteractiveChild

N, BATCH = 4096, 3


class _Event:
    """Stands in for a CUDA timing event on the CPU (work is synchronous there)."""

    def record(self) -> None: ...

    def synchronize(self) -> None: ...

    def elapsed_time(self, other: _Event) -> float:
        del other
        return 0.0


class _Stream:
    def synchronize(self) -> None: ...


@pytest.fixture
def cpu_transport(monkeypatch: pytest.MonkeyPatch) -> CudaTransport:
    """The real CudaTransport's per-batch methods over CPU tensors."""
    monkeypatch.setattr(torch.cuda, "stream",
                        lambda stream: contextlib.nullcontext())
    monkeypatch.setattr(gpu_transport, "pinned_int32",
                        lambda size: torch.empty(size, dtype=torch.int32))
    monkeypatch.setattr(gpu_transport, "LATTICE_SAMPLES", 64)
    monkeypatch.setattr(gpu_transport, "LATTICE_WIDTH", 8)
    transport = object.__new__(CudaTransport)
    transport.n = N
    transport.xs = [torch.full((N,), 7, dtype=torch.int32) for _ in range(BATCH)]
    transport.outs = [torch.zeros(N, dtype=torch.int32) for _ in range(BATCH)]
    transport.stream = cast(Any, _Stream())
    transport._events = cast(Any, (_Event(), _Event()))
    return transport


def test_preparation_leaves_no_input_of_the_batch_in_the_shared_buffers(
        cpu_transport: CudaTransport) -> None:
    """What the child can read before the clock: the inputs must not be there yet."""
    before = [x.clone() for x in cpu_transport.xs]
    prepared = cpu_transport.prepare()
    for x, old, seed in zip(cpu_transport.xs, before, prepared.seeds, strict=True):
        assert torch.equal(x, old), "an input was drawn before the clock"
        assert not torch.equal(x, make_input(N, seed, "cpu"))
    assert all(not torch.equal(out, torch.zeros(N, dtype=torch.int32))
               for out in cpu_transport.outs), "outputs are poisoned before the clock"


def test_the_draw_makes_each_slots_input_from_its_seed(cpu_transport: CudaTransport) -> None:
    prepared = cpu_transport.prepare()
    cpu_transport.draw(prepared)
    for x, seed in zip(cpu_transport.xs, prepared.seeds, strict=True):
        assert torch.equal(x, make_input(N, seed, "cpu"))  # what verification redraws


def test_the_poison_does_not_follow_from_the_input_seed(cpu_transport: CudaTransport) -> None:
    """The child may read the poisoned output before the clock: it must tell nothing
    about the input that is drawn later (1.2.0 poisoned from the input's seed)."""
    prepared = cpu_transport.prepare()
    for out, seed in zip(cpu_transport.outs, prepared.seeds, strict=True):
        again = torch.empty_like(out)
        poison(again, seed)
        assert not torch.equal(out, again)


class _Log:
    def __init__(self) -> None:
        self.events: list[str] = []
        self._ns = itertools.count(1_000_000, 1000)

    def clock(self) -> int:
        self.events.append("clock")
        return next(self._ns)


class _OrderTransport(CudaTransport):
    """Logs what the session asks of it, in order; the child 'answers' every call."""

    def __init__(self, log: _Log) -> None:  # no CUDA
        self.log = log
        self.xs = [torch.zeros(1, dtype=torch.int32) for _ in range(BATCH)]
        self.flags = cast(Any, [0] * 8)

    def prepare(self) -> Prepared:
        self.log.events.append("prepare")
        return Prepared(seeds=(1,) * BATCH, positions=(), prep_ms=0.0, waited_ms=0.0,
                        dests=())

    def draw(self, prepared: Prepared) -> None:
        self.log.events.append("draw_inputs")

    def call(self, slot: int, number: int, deadline_ns: int, check: Any) -> int:
        self.log.events.append("call")
        self.flags[DONE] = number
        return deadline_ns

    def gather(self, prepared: Prepared) -> list[torch.Tensor]:
        self.log.events.append("gather")
        return [torch.zeros(1)] * BATCH

    def fingerprints(self) -> list[torch.Tensor]:
        return [torch.zeros(1)] * BATCH

    def child_stamps(self) -> tuple[int, int, int]:
        return 0, 0, 0


class _Tree:
    def __init__(self, log: _Log) -> None:
        self.log = log

    def resume(self) -> None:
        self.log.events.append("resume")

    def freeze(self) -> bool:
        self.log.events.append("freeze")
        return False


@pytest.fixture
def pipe() -> Iterator[int]:
    read, write = os.pipe()
    yield read
    os.close(read)
    os.close(write)


def test_the_clock_starts_before_the_inputs_exist(monkeypatch: pytest.MonkeyPatch,
                                                   pipe: int, tmp_path: Path) -> None:
    log = _Log()
    monkeypatch.setattr(time, "perf_counter_ns", log.clock)
    child = session.ChildSession(ctx=cast(Any, None), argv=[], env={},
                                 transport=_OrderTransport(log), log_path=tmp_path / "log",
                                 startup_timeout_s=1, call_timeout_s=1)
    child.child = cast(InteractiveChild, _Tree(log))
    child._done = pipe
    child.gpu_batch("timed batch 1")
    events = log.events
    first_clock = events.index("clock")
    assert events.index("prepare") < first_clock
    assert first_clock < events.index("resume") < events.index("draw_inputs")
    assert events.index("draw_inputs") < events.index("call")
    last_clock = len(events) - 1 - events[::-1].index("clock")
    assert events.index("gather") < last_clock < events.index("freeze")
