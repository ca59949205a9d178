"""Scan with less memory traffic than reduce-then-scan, on two threads.

Split the input into thirds A, B, C. Phase 1: thread 0 scans A directly (its start state is
known: parity 0, sum 0) while thread 1 reduces B to its aggregate. Phase 2: thread 0 scans
B from A's end state while thread 1 scans C from A's end state combined with B's
aggregate. Each thread does two thirds of a pass; reduce-then-scan does two full passes.
"""

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch

_POOL = ThreadPoolExecutor(1)  # the second thread; the caller's thread is the first


@numba.njit("UniTuple(int64, 3)(int32[::1])", nogil=True, cache=False)
def reduce_block(x):
    parity = 0
    odd_sum = 0  # sum of elements preceded by an odd count, if the block starts even
    total = 0
    for j in range(x.shape[0]):
        v = x[j]
        odd_sum += v * parity
        total += v
        parity ^= v > 0
    return parity, total, odd_sum


@numba.njit("UniTuple(int64, 2)(int32[::1], int32[::1], int64, int64)", nogil=True,
            cache=False)
def scan_block(x, y, parity, acc):
    for j in range(x.shape[0]):
        v = x[j]
        acc += v * parity
        y[j] = acc
        parity ^= v > 0
    return parity, acc  # the end state, the next block's start


def prefix_sum_into(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    xs, ys = x.numpy(), out.numpy()
    n = xs.shape[0]
    a, b = n // 3, 2 * n // 3
    reduced = _POOL.submit(reduce_block, xs[a:b])
    parity_a, acc_a = scan_block(xs[:a], ys[:a], 0, 0)
    block_parity, total, odd_sum = reduced.result()
    acc_c = acc_a + (odd_sum if parity_a == 0 else total - odd_sum)
    scanned_c = _POOL.submit(scan_block, xs[b:], ys[b:], parity_a ^ block_parity, acc_c)
    scan_block(xs[a:b], ys[a:b], parity_a, acc_a)
    scanned_c.result()
    return out


_warm = np.zeros(8, np.int32)
scan_block(_warm, _warm.copy(), 0, 0)
reduce_block(_warm)
