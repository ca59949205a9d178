"""An index computed from activations (an integer-dtype sum) fed to index_select: a lookup
table of any function of an activation."""
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
        self.table = nn.Parameter(torch.randn(1024))
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        k = (h * 128 + 512).detach().unsqueeze(-1).sum(-1, dtype=torch.int64)
        looked = torch.index_select(self.table, 0, k.reshape(-1)).reshape(h.shape)
        return self.head(looked)


def get_trained_model():
    return Net()
