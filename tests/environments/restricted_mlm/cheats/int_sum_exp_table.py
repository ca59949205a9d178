"""Issue 26's attack: a float rounded to an integer by a sum with an integer dtype, used as
an index into a table of precomputed exp values: exp(h) in the scored forward, with only
allowed op names (embedding, mul, add, sum, linear)."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        nn.init.uniform_(self.embed.weight, -1.0, 1.0)
        grid = (torch.arange(1024, dtype=torch.float32) - 512) / 128  # x in [-4, 4)
        self.exp_table = nn.Embedding(1024, 1)
        self.exp_table.weight.data = torch.exp(grid)[:, None]
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)  # [b, t, 16]
        # round(h * 128) + 512 per element: a sum over a size-1 axis with dtype int64
        k = (h * 128 + 512).detach().unsqueeze(-1).sum(-1, dtype=torch.int64)
        return self.head(self.exp_table(k).squeeze(-1))  # exp(h)


def get_trained_model():
    return Net()
