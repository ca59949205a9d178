"""A torch.library custom op: an opaque kernel (here a softmax) behind a new op name."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


@torch.library.custom_op("mlmcheat::mix", mutates_args=())
def mix(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


@mix.register_fake
def _(x):
    return torch.empty_like(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        return self.head(mix(self.embed(tokens)))


def get_trained_model():
    return Net()
