"""Right values, wrong dtype: int64 (torch's cumsum of int32 gives int64)."""

import torch


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    positive_count = (x > 0).cumsum(0)
    odd = (positive_count % 2).bool()
    y = torch.zeros(x.shape, dtype=torch.int64, device=x.device)
    y[1:] = torch.where(odd[:-1], x[1:], 0).cumsum(0)
    return y
