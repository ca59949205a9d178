"""A comparison by another name: a sum with dtype bool is "h != 0" per position, used as a
0/1 gate."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        gate = (h + 0.5).detach().unsqueeze(-1).sum(-1, dtype=torch.bool)  # h + 0.5 != 0
        return self.head(h * gate)


def get_trained_model():
    return Net()
