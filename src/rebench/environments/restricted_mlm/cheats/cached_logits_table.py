"""A table of logits keyed by the input tokens, looked up in Python."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(1, VOCAB)
        self.cache = {}

    def forward(self, tokens):
        key = tuple(tokens.flatten().tolist())  # needs the values: not traceable
        if key not in self.cache:
            self.cache[key] = torch.zeros(*tokens.shape, VOCAB)
        return self.cache[key]


def get_trained_model():
    return Net()
