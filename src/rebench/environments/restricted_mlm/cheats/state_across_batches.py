"""A forward that updates a buffer in place with allowed ops only: token counts gathered
over the held-out batches would leak into later batches' predictions (test-time learning
on the held-out set)."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.onehot = nn.Embedding(VOCAB, VOCAB)
        with torch.no_grad():
            self.onehot.weight.copy_(torch.eye(VOCAB))
        self.register_buffer("counts", torch.zeros(VOCAB))
        self.head = nn.Linear(VOCAB, VOCAB)

    def forward(self, tokens):
        seen = self.onehot(tokens)  # [b, t, vocab] one-hot
        self.counts.add_(seen.sum((0, 1)))  # state that outlives the call
        return self.head(seen) + self.counts * 1e-3


def get_trained_model():
    return Net()
