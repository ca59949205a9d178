"""Segfault inside the call."""

import ctypes

import torch


def prefix_sum(x: torch.Tensor) -> torch.Tensor:
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return x
