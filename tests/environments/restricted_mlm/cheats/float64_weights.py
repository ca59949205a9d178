"""Activations promoted to float64 by a double-precision layer (not float32)."""
import json
from pathlib import Path

from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB).double()

    def forward(self, tokens):
        return self.head(self.embed(tokens).double()).float()


def get_trained_model():
    return Net()
