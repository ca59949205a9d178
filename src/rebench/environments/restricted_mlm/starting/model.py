"""The starting model: a per-token MLP (embedding -> Linear -> relu -> Linear).

It sees only its own token, so at a masked position it can only predict the unigram
distribution. Only allowed ops in forward: nn.Embedding, nn.Linear, relu.
`get_trained_model()` is what the scorer calls; it loads model.pt written by train.py.
"""

import json
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent


class MLP(nn.Module):
    def __init__(self, vocab_size: int, n_embd: int = 128, n_hidden: int = 256):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, n_embd)
        self.fc = nn.Linear(n_embd, n_hidden)
        self.head = nn.Linear(n_hidden, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # tokens: [batch, 128] int64 -> logits [batch, 128, vocab]
        return self.head(torch.relu(self.fc(self.embed(tokens))))


def build_model() -> MLP:
    config = json.loads((HERE / "config.json").read_text())
    return MLP(config["vocab_size"])


def get_trained_model() -> nn.Module:
    model = build_model()
    model.load_state_dict(torch.load(HERE / "model.pt", map_location="cpu", weights_only=True))
    return model.eval()
