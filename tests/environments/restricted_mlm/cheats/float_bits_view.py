"""A float's bits read as an integer (view with a dtype): its exponent is a log2."""
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
        bits = h.view(torch.int32)
        return self.head(bits.to(torch.float32) * (2.0 ** -23))


def get_trained_model():
    return Net()
