"""Python control flow on activation values: a hand-made max() over positions."""
import json
from pathlib import Path

from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        h = self.embed(tokens)
        if h.sum() > 0:  # data-dependent branch
            h = h * 2
        return self.head(h)


def get_trained_model():
    return Net()
