"""References captured at import, before any enforcement could patch torch: the captured
function still runs aten.log_softmax / aten.exp in the exported graph."""
import json
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]
_log_softmax = torch.log_softmax  # captured before any patching
_exp = torch.Tensor.exp


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        h = _exp(self.embed(tokens))
        return _log_softmax(self.head(h), -1)


def get_trained_model():
    return Net()
