"""The reference model: a residual 1-D convolution net over token embeddings, its windows
built with as_strided and mixed with einsum (no nn.Conv1d, no normalization).

Each block sees `kernel` neighbouring positions on both sides of every token:
    h = h + W2 relu(sum_k W1[k] h[t + k - kernel//2] + b1)
so a masked token is predicted from its context. Forward uses only allowed ops:
Embedding, cat, stack, slicing, as_strided, einsum, add, mul, sum, relu, Linear.

On the cpu profile (a 2048-token vocabulary) the logits also add counted tables: for each
neighbour within `reach` tokens on either side, a vocab x vocab table of pointwise mutual
information (log P(x | neighbour) - log P(x)), counted from the training split by train.py
and fixed; the net weights each table per position (`gate`, a Linear of its hidden state)
and learns what they miss. Counted tables alone beat a net trained for minutes on 2 cores
(decision 0018); with GPT-2's 50257 tokens (gpu) one such table would take 10 GB.
"""

import json
import math
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SETTINGS = {  # model sizes per profile; reach: neighbours on each side with a counted table
    "cpu": {"n_embd": 128, "n_hidden": 256, "kernel": 5, "n_layer": 4, "reach": 3},
    "gpu": {"n_embd": 512, "n_hidden": 1024, "kernel": 7, "n_layer": 8, "reach": 0},
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
    def __init__(self, vocab_size: int, n_embd: int, n_hidden: int, kernel: int, n_layer: int,
                 reach: int = 0, mask_id: int = 0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, n_embd)
        self.blocks = nn.ModuleList(
            ConvBlock(n_embd, n_hidden, kernel, n_layer) for _ in range(n_layer))
        self.head = nn.Linear(n_embd, vocab_size)
        self.vocab_size, self.mask_id, self.reach = vocab_size, mask_id, reach
        # The neighbour of each table: -1, +1, -2, +2, ... (table i is rows i*vocab...)
        self.offsets = [side * d for d in range(1, reach + 1) for side in (-1, 1)]
        if reach:  # tables counted by train.py, then fixed; gate: each table's weight
            self.tables = nn.Embedding(len(self.offsets) * vocab_size, vocab_size)
            self.tables.requires_grad_(False)
            self.gate = nn.Linear(n_embd, len(self.offsets))

    def neighbour_rows(self, tokens: torch.Tensor) -> torch.Tensor:
        """[batch, seq, tables]: each position's row of each table (its neighbour's id in
        table i's block of rows; the mask id past either end)."""
        b, t = tokens.shape
        edge = (tokens[:, :1] * 0 + self.mask_id).expand(b, self.reach)
        padded = torch.cat([edge, tokens, edge], dim=1)
        ids = torch.stack([padded[:, self.reach + o:self.reach + o + t] for o in self.offsets],
                          dim=2)
        block = torch.arange(len(self.offsets), device=tokens.device) * self.vocab_size
        return ids + block

    def logits(self, h: torch.Tensor, rows: torch.Tensor | None,
               tables: torch.Tensor | None = None) -> torch.Tensor:
        """The head over `h` [..., n_embd], plus each counted table's row `rows` [..., tables]
        weighted by the gate (`tables`: other table weights, for training)."""
        out = self.head(h)
        if rows is not None:
            found = self.tables(rows) if tables is None else nn.functional.embedding(rows, tables)
            out = out + (self.gate(h).unsqueeze(-1) * found).sum(-2)
        return out

    def body(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)  # [batch, seq, n_embd]
        for block in self.blocks:
            h = block(h)
        return h

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # tokens: [batch, 128] int64 -> logits [batch, 128, vocab]
        rows = self.neighbour_rows(tokens) if self.reach else None
        return self.logits(self.body(tokens), rows)


def build_model() -> ConvNet:
    config = json.loads((HERE / "config.json").read_text())
    return ConvNet(config["vocab_size"], **SETTINGS[config["profile"]],
                   mask_id=config["mask_id"])


def get_trained_model() -> nn.Module:
    model = build_model()
    model.load_state_dict(torch.load(HERE / "model.pt", map_location="cpu", weights_only=True))
    return model.eval()
