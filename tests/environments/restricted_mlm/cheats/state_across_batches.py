"""A forward that updates a buffer in place: statistics gathered over the held-out batches
would leak into later batches' predictions (test-time learning on the held-out set)."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("counts", torch.zeros(VOCAB))
        self.head = nn.Linear(1, VOCAB)

    def forward(self, tokens):
        self.counts.index_add_(0, tokens.flatten(), torch.ones(tokens.numel()))
        return self.head(tokens[..., None].float() * 0.0) + self.counts * 1e-3


def get_trained_model():
    return Net()
