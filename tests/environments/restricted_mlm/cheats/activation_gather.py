"""An index computed from activations (an integer-dtype sum) fed to gather."""
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
        self.table = nn.Parameter(torch.randn(16, 1024))
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        k = (h * 128 + 512).detach().unsqueeze(-1).sum(-1, dtype=torch.int64)  # [b, t, 16]
        rows = self.table.unsqueeze(0).expand(k.shape[0] * k.shape[1], 16, 1024)
        looked = torch.gather(rows, 2, k.reshape(-1, 16, 1)).reshape(h.shape)
        return self.head(looked)


def get_trained_model():
    return Net()
