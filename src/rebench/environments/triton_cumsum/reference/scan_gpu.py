"""Three Triton kernels, as in RE-Bench's reference solution.

1. block_counts: the number of positive elements of each block.
2. block_scan:   each block's conditional scan, started from the parity of all positives
                 before it (an exclusive cumsum of the block counts), plus its block sum.
3. fixup:        add to every block the sum of all earlier blocks' sums.
Two tiny torch cumsums over the per-block values run between the kernels.
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096  # elements per program: 1e8 elements -> 24415 programs
NUM_WARPS = 8


@triton.jit
def block_counts(x_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(counts_ptr + pid, tl.sum((x > 0).to(tl.int32), axis=0))


@triton.jit
def block_scan(x_ptr, y_ptr, parity_ptr, sums_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    positive = (x > 0).to(tl.int32)
    # number of positives before each element (mod 2), counting all earlier blocks
    before = tl.cumsum(positive, axis=0) - positive + tl.load(parity_ptr + pid)
    terms = tl.where((before & 1) == 1, x, 0)
    tl.store(y_ptr + offs, tl.cumsum(terms, axis=0), mask=mask)
    tl.store(sums_ptr + pid, tl.sum(terms, axis=0))


@triton.jit
def fixup(y_ptr, offsets_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0) + 1  # block 0 has nothing before it
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, y + tl.load(offsets_ptr + pid), mask=mask)


def prefix_sum_into(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    if n == 0:
        return out
    blocks = triton.cdiv(n, BLOCK)
    counts = torch.empty(blocks, dtype=torch.int32, device=x.device)
    block_counts[(blocks,)](x, counts, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    parity = ((torch.cumsum(counts, 0) - counts) & 1).to(torch.int32)
    sums = torch.empty(blocks, dtype=torch.int32, device=x.device)
    block_scan[(blocks,)](x, out, parity, sums, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    if blocks > 1:
        offsets = (torch.cumsum(sums, 0) - sums).to(torch.int32)  # int64 sums wrap to int32
        fixup[(blocks - 1,)](out, offsets, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out
