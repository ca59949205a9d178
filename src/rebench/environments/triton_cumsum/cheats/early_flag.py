"""Forge "done": a thread writes the done slot of the scorer's flag page (gpu protocol) the
moment the go slot changes, while the call does its (slow) work. The scorer must not take
the forged flag for the end of the work."""

import mmap
import sys
import threading

import torch


def _forge(fd: int) -> None:
    flags = memoryview(mmap.mmap(fd, 64, mmap.MAP_SHARED)).cast("q")
    while True:
        if flags[0] > flags[1]:
            flags[1] = flags[0]


if "--flag-fd" in sys.argv:  # gpu profile only: the cpu protocol has no flag page
    _fd = int(sys.argv[sys.argv.index("--flag-fd") + 1])
    threading.Thread(target=_forge, args=(_fd,), daemon=True).start()


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    positive_count = (x > 0).cumsum(0)
    odd = (positive_count % 2).bool()
    out = torch.zeros_like(x)
    out[1:] = torch.where(odd[:-1], x[1:], 0).cumsum(0).to(torch.int32)
    return out
