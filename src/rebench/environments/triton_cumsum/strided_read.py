"""Reading sampled positions of a CUDA buffer with the GPU's copy engine (trusted side).

The scorer ends its clock when it has read every output of a batch at secret positions.
A gather kernel does that on the compute engine, which the GPU time-slices between CUDA
contexts: reading there costs a switch away from the child's context. A strided copy into
pinned host memory (`cuMemcpy2DAsync`: `rows` rows of `width` int32 values, `pitch` bytes
apart, from a secret offset) runs on a copy engine instead, and nothing orders it after
the child's kernels: it reads whatever the memory holds at that moment, which is exactly
the check "every sampled position is already right".
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch

_HOST, _DEVICE = 1, 2  # CUmemorytype


class _Memcpy2D(ctypes.Structure):
    """CUDA_MEMCPY2D (driver API, v2 layout; ctypes adds the C padding)."""

    _fields_ = [
        ("srcXInBytes", ctypes.c_size_t), ("srcY", ctypes.c_size_t),
        ("srcMemoryType", ctypes.c_int), ("srcHost", ctypes.c_void_p),
        ("srcDevice", ctypes.c_uint64), ("srcArray", ctypes.c_void_p),
        ("srcPitch", ctypes.c_size_t),
        ("dstXInBytes", ctypes.c_size_t), ("dstY", ctypes.c_size_t),
        ("dstMemoryType", ctypes.c_int), ("dstHost", ctypes.c_void_p),
        ("dstDevice", ctypes.c_uint64), ("dstArray", ctypes.c_void_p),
        ("dstPitch", ctypes.c_size_t),
        ("WidthInBytes", ctypes.c_size_t), ("Height", ctypes.c_size_t),
    ]


@cache
def _copy_2d() -> Callable[..., int]:
    fn: Any = ctypes.CDLL("libcuda.so.1").cuMemcpy2DAsync_v2
    fn.argtypes = [ctypes.POINTER(_Memcpy2D), ctypes.c_void_p]
    fn.restype = ctypes.c_int
    copy: Callable[..., int] = fn
    return copy


@dataclass(frozen=True)
class Lattice:
    """Positions offset + r * pitch + c for r < rows, c < width (in int32 elements)."""

    offset: int
    pitch: int
    rows: int
    width: int

    def positions(self, device: torch.device | str) -> torch.Tensor:
        rows = torch.arange(self.rows, device=device, dtype=torch.int64) * self.pitch
        cols = torch.arange(self.width, device=device, dtype=torch.int64)
        return (self.offset + rows[:, None] + cols[None, :]).reshape(-1)


def draw_lattice(n: int, samples: int, width: int, seed: int) -> Lattice:
    """A lattice of about `samples` positions covering [0, n) with a secret offset."""
    rows = max(1, samples // width)
    pitch = n // rows
    if pitch < width:
        raise ValueError(f"{samples} samples of width {width} do not fit in {n} elements")
    offset = int(torch.randint(0, pitch - width + 1, (1,),
                               generator=torch.Generator().manual_seed(seed)))
    return Lattice(offset=offset, pitch=pitch, rows=rows, width=width)


def read_async(src: torch.Tensor, lattice: Lattice, dest: torch.Tensor,
               stream: torch.cuda.Stream) -> None:
    """Queue the copy of `src` at `lattice` into pinned `dest` (rows x width int32) on
    `stream`; the caller synchronizes the stream before reading `dest`."""
    if src.dtype != torch.int32 or dest.dtype != torch.int32 or not dest.is_pinned():
        raise TypeError("strided reads copy int32 device memory into pinned int32 memory")
    if dest.numel() != lattice.rows * lattice.width:
        raise ValueError("the destination does not match the lattice")
    last = lattice.offset + (lattice.rows - 1) * lattice.pitch + lattice.width
    if last > src.numel():
        raise ValueError("the lattice reaches past the buffer")
    spec = _Memcpy2D()
    spec.srcMemoryType = _DEVICE
    spec.srcDevice = src.data_ptr() + 4 * lattice.offset
    spec.srcPitch = 4 * lattice.pitch
    spec.dstMemoryType = _HOST
    spec.dstHost = dest.data_ptr()
    spec.dstPitch = 4 * lattice.width
    spec.WidthInBytes = 4 * lattice.width
    spec.Height = lattice.rows
    status = _copy_2d()(ctypes.byref(spec), ctypes.c_void_p(stream.cuda_stream))
    if status != 0:
        raise RuntimeError(f"cuMemcpy2DAsync failed with CUresult {status}")
