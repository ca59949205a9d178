"""Never return."""

import torch


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    while True:
        pass
    return x
