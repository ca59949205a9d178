"""Each op's output under the element limit, but nine of them alive at once: 2.25 GiB of
the scorer's memory (more with more copies), before any check of the live total. The
export runs on fake tensors, so it costs the child nothing."""
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
        wide = self.embed(tokens).repeat(1, 1, 4096)  # [8, 128, 65536] = 2**26 floats
        copies = [wide * float(i + 1) for i in range(9)]
        total = copies[0]
        for c in copies[1:]:
            total = total + c
        return self.head(self.embed(tokens)) + total[..., :VOCAB]


def get_trained_model():
    return Net()
