"""The reference model: a residual 1-D convolution net over token embeddings, its windows
built with as_strided and mixed with einsum (no nn.Conv1d, no normalization).

Each block sees `kernel` neighbouring positions on both sides of every token:
    h = h + W2 relu(sum_k W1[k] h[t + k - kernel//2] + b1)
so a masked token is predicted from its context. Forward uses only allowed ops:
Embedding, cat, as_strided, einsum, add, mul, relu, Linear.
"""

import json
import math
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SETTINGS = {  # model sizes per profile
    "cpu": {"n_embd": 128, "n_hidden": 256, "kernel": 5, "n_layer": 4},
    "gpu": {"n_embd": 512, "n_hidden": 1024, "kernel": 7, "n_layer": 8},
}


class ConvBlock(nn.Module):
    def __init__(self, n_embd: int, n_hidden: int, kernel: int, n_layer: int):
        super().__init__()
        self.kernel = kernel
        self.w1 = nn.Parameter(torch.randn(kernel, n_embd, n_hidden) / math.sqrt(kernel * n_embd))
        self.b1 = nn.Parameter(torch.zeros(n_hidden))
        self.out = nn.Linear(n_hidden, n_embd)
        # Small residual branches keep activations bounded without normalization.
        nn.init.normal_(self.out.weight, std=0.5 / math.sqrt(n_hidden * n_layer))
        nn.init.zeros_(self.out.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, t, c = h.shape  # [batch, seq, n_embd]
        pad = torch.zeros(b, self.kernel // 2, c, dtype=h.dtype, device=h.device)
        padded = torch.cat([pad, h, pad], dim=1)  # [b, t + kernel - 1, c], contiguous
        # windows[b, i, k, :] = padded[b, i + k, :]
        windows = padded.as_strided((b, t, self.kernel, c), (padded.stride(0), c, c, 1))
        u = torch.relu(torch.einsum("btkc,kcd->btd", windows, self.w1) + self.b1)
        return h + self.out(u)


class ConvNet(nn.Module):
    def __init__(self, vocab_size: int, n_embd: int, n_hidden: int, kernel: int, n_layer: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, n_embd)
        self.blocks = nn.ModuleList(
            ConvBlock(n_embd, n_hidden, kernel, n_layer) for _ in range(n_layer))
        self.head = nn.Linear(n_embd, vocab_size)

    def body(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)  # [batch, seq, n_embd]
        for block in self.blocks:
            h = block(h)
        return h

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # tokens: [batch, 128] int64 -> logits [batch, 128, vocab]
        return self.head(self.body(tokens))


def build_model() -> ConvNet:
    config = json.loads((HERE / "config.json").read_text())
    return ConvNet(config["vocab_size"], **SETTINGS[config["profile"]])


def get_trained_model() -> nn.Module:
    model = build_model()
    model.load_state_dict(torch.load(HERE / "model.pt", map_location="cpu", weights_only=True))
    return model.eval()
