"""A Triton kernel in the forward (torch.library.triton_op where Triton is installed; on a
machine without Triton the same kernel slot is a plain custom op). Either way it is an op
outside the allow-list."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]

try:
    import triton
    import triton.language as tl

    @triton.jit
    def _exp_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        keep = offs < n
        tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=keep)), mask=keep)

    @torch.library.triton_op("mlmcheat::texp", mutates_args=())
    def texp(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        n = x.numel()
        torch.library.wrap_triton(_exp_kernel)[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
except ImportError:
    @torch.library.custom_op("mlmcheat::texp", mutates_args=())
    def texp(x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x)

    @texp.register_fake
    def _(x):
        return torch.empty_like(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        return self.head(texp(self.embed(tokens)))


def get_trained_model():
    return Net()
