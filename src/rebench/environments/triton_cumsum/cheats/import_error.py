"""Fails at import."""

import torch

raise RuntimeError("this solution does not even import")


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    return x
