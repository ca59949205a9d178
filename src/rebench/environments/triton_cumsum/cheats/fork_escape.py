"""Signal completion at once while a detached grandchild (double fork + setsid) writes the
output; the scorer must find and freeze it too."""

import os
import time

import torch


def _answer(x: torch.Tensor) -> torch.Tensor:
    positive_count = (x > 0).cumsum(0)
    odd = (positive_count % 2).bool()
    y = torch.zeros_like(x)
    y[1:] = torch.where(odd[:-1], x[1:], 0).cumsum(0).to(torch.int32)
    return y


def prefix_sum(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    if os.fork() == 0:  # child
        os.setsid()
        if os.fork() == 0:  # grandchild, re-parented away from the solution process
            time.sleep(0.05)  # start writing only after "done" was sent
            y = _answer(x)
            out.copy_(y)
            os._exit(0)
        os._exit(0)
    return out
