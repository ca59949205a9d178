"""Blocked parallel scan on the CPU: Numba kernels that release the GIL, run by a thread
pool with one thread per usable core.

Phase 1 reduces each block to (parity of its positive count, its total, the sum of the
elements it would include if it started at even parity). A serial pass over the blocks
turns those into each block's starting parity and offset. Phase 2 rescans every block
from its start state, writing the output.
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch

THREADS = len(os.sched_getaffinity(0))  # one block per usable core
_POOL = ThreadPoolExecutor(THREADS)


@numba.njit("UniTuple(int64, 3)(int32[::1])", nogil=True, cache=False)
def reduce_block(x):
    parity = 0  # parity of positives seen so far in this block
    odd_sum = 0  # sum of elements preceded by an odd count (if the block starts even)
    total = 0
    for j in range(x.shape[0]):
        v = x[j]
        odd_sum += v * parity
        total += v
        parity ^= v > 0
    return parity, total, odd_sum


@numba.njit("void(int32[::1], int32[::1], int64, int64)", nogil=True, cache=False)
def scan_block(x, y, parity, acc):
    for j in range(x.shape[0]):
        v = x[j]
        acc += v * parity  # branch-free: include v when the count before it is odd
        y[j] = acc
        parity ^= v > 0


def prefix_sum_into(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    xs, ys = x.numpy(), out.numpy()
    n = xs.shape[0]
    step = max(1, -(-n // THREADS))
    bounds = [(lo, min(n, lo + step)) for lo in range(0, n, step)]
    aggregates = list(_POOL.map(lambda b: reduce_block(xs[b[0]:b[1]]), bounds))
    starts, parity, acc = [], 0, 0
    for block_parity, total, odd_sum in aggregates:
        starts.append((parity, acc))
        acc += odd_sum if parity == 0 else total - odd_sum
        parity ^= block_parity
    list(_POOL.map(lambda i: scan_block(xs[bounds[i][0]:bounds[i][1]],
                                        ys[bounds[i][0]:bounds[i][1]], *starts[i]),
                   range(len(bounds))))
    return out


_warm = np.zeros(8, np.int32)
scan_block(_warm, _warm.copy(), 0, 0)  # nothing left to compile at the first timed call
