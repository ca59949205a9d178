"""One batch of 1.7e10 multiply-adds per forward (4 matmuls of 1024 x 2048 x 2048): cheap to
export (fake tensors), minutes for the scorer over its batches."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 2048)
        self.mix = nn.Parameter(torch.zeros(2048, 2048))
        self.head = nn.Linear(2048, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        for _ in range(4):
            h = h + h @ self.mix
        return self.head(h)


def get_trained_model():
    return Net()
