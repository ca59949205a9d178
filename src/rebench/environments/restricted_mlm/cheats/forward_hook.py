"""Forbidden work moved into forward hooks (pre- and post-) instead of forward()."""
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
        self.embed.register_forward_hook(lambda mod, args, out: torch.tanh(out))
        self.head.register_forward_hook(lambda mod, args, out: torch.log_softmax(out, -1))

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def get_trained_model():
    return Net()
