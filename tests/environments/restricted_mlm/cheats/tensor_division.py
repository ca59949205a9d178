"""Division through the `/` operator (aten.div), e.g. a hand-made normalization."""
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
        norm = (h * h).sum(-1, keepdim=True) + 1.0
        return self.head(h / norm)


def get_trained_model():
    return Net()
