"""Right values on the wrong device (meta on CPU, the CPU on a GPU)."""

import torch


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    positive_count = (x > 0).cumsum(0)
    odd = (positive_count % 2).bool()
    y = torch.zeros_like(x)
    y[1:] = torch.where(odd[:-1], x[1:], 0).cumsum(0).to(torch.int32)
    return y.cpu() if x.is_cuda else y.to("meta")
