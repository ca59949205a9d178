"""Kill the parent (the scorer, when not sandboxed) at the first call."""

import os
import signal

import torch


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    os.kill(os.getppid(), signal.SIGKILL)
    return torch.zeros_like(x)
