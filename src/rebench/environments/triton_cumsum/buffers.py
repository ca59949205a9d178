"""Input and output buffers the scorer owns and shares with the child (trusted side).

CPU: two sealed memfds mapped on both sides (the child can write bytes into them, nothing
more; sealing stops it from shrinking them under the scorer's mapping). GPU: two CUDA
tensors shared once through CUDA IPC handles (gpu_transport.py). Inputs are drawn from a
fresh os.urandom seed each call and can be redrawn from that seed after the child is dead,
so the scorer never trusts what is left in the shared input buffer.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
from typing import Protocol

import torch

VALUE_LOW, VALUE_HIGH = -10, 10  # inputs are uniform int32 in [-10, 10), as in the paper


def fresh_seed() -> int:
    """A seed nobody can predict: the solution must compute, not recall."""
    return int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)


def input_generator(seed: int, device: torch.device | str) -> torch.Generator:
    """The generator `draw_input` uses for `seed` (made ahead where the draw is timed)."""
    return torch.Generator(device=device).manual_seed(seed)


def fill_input(dest: torch.Tensor, gen: torch.Generator) -> None:
    """Fill `dest` from a fresh `input_generator`: the same values as `draw_input`."""
    dest.random_(VALUE_LOW, VALUE_HIGH, generator=gen)


def draw_input(dest: torch.Tensor, seed: int) -> None:
    """Fill `dest` with the input of `seed` (same values for the same seed and device)."""
    fill_input(dest, input_generator(seed, dest.device))


def make_input(n: int, seed: int, device: str) -> torch.Tensor:
    x = torch.empty(n, dtype=torch.int32, device=device)
    draw_input(x, seed)
    return x


def poison(dest: torch.Tensor, seed: int) -> None:
    """Overwrite `dest` with random garbage so a stale or missing result cannot pass."""
    gen = torch.Generator(device=dest.device).manual_seed(seed ^ 0x5EED)
    dest.random_(generator=gen)


class Transport(Protocol):
    """What starting the child needs from the buffers, whichever the device."""

    x: torch.Tensor
    out: torch.Tensor

    def child_args(self) -> list[str]: ...

    def pass_fds(self) -> tuple[int, ...]: ...

    def after_spawn(self, go_fd: int) -> None: ...

    def close(self) -> None: ...


def sealed_memfd(name: str, nbytes: int) -> int:
    """A memfd of `nbytes` that nobody can shrink or grow (it is mapped on both sides)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, nbytes)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


class CpuTransport:
    """memfd-backed int32 buffers; the output is copied out after the tree is frozen."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._fds = (sealed_memfd("rebench-in", n * 4), sealed_memfd("rebench-out", n * 4))
        self._maps = [mmap.mmap(fd, n * 4, mmap.MAP_SHARED) for fd in self._fds]
        self.x = torch.frombuffer(self._maps[0], dtype=torch.int32, count=n)
        self.out = torch.frombuffer(self._maps[1], dtype=torch.int32, count=n)

    def child_args(self) -> list[str]:
        return ["--in-fd", str(self._fds[0]), "--out-fd", str(self._fds[1])]

    def pass_fds(self) -> tuple[int, ...]:
        return self._fds

    def after_spawn(self, go_fd: int) -> None:
        del go_fd

    def snapshot(self, index: int) -> torch.Tensor:
        del index
        return self.out.clone()

    def close(self) -> None:
        del self.x, self.out
        for mapped in self._maps:
            # BufferError: a view still exists somewhere; closing the fd below suffices
            with contextlib.suppress(BufferError):
                mapped.close()
        for fd in self._fds:
            os.close(fd)
