"""The scorer's own implementation of the function, used to verify results (trusted side).

Only ever called after the child process tree is dead, so a correct answer never exists
while solution code runs.
"""

from __future__ import annotations

import torch


def expected_prefix_sum(x: torch.Tensor) -> torch.Tensor:
    """y_i = sum_{j <= i} x_j * [number of positive x_k with k < j is odd]; y_0 = 0.

    Sums wrap modulo 2**32 like int32 arithmetic (computed in int64, then truncated).
    """
    if x.numel() == 0:
        return torch.empty(0, dtype=torch.int32, device=x.device)
    positives = torch.cumsum(x > 0, dim=0)  # inclusive count, int64
    odd_before = torch.zeros_like(positives, dtype=torch.bool)
    odd_before[1:] = (positives[:-1] & 1).bool()
    terms = torch.where(odd_before, x.to(torch.int64), 0)
    return torch.cumsum(terms, dim=0).to(torch.int32)


def slow_prefix_sum(values: list[int]) -> list[int]:
    """The definition, element by element (for tests of the fast version)."""
    out, total, odd = [], 0, False
    for v in values:
        if odd:
            total += v
        out.append(((total + 2**31) % 2**32) - 2**31)
        odd ^= v > 0
    return out
