"""Truncation by reduction: a sum with dtype int32 rounds each activation toward zero."""
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
        steps = (h * 4).detach().unsqueeze(-1).sum(-1, dtype=torch.int32)
        return self.head(steps.to(torch.float32))


def get_trained_model():
    return Net()
