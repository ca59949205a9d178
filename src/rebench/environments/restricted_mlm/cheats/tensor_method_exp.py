"""A tensor method METR's block-list missed: x.exp() (a softmax-like nonlinearity)."""
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
        return self.head(h.exp())


def get_trained_model():
    return Net()
