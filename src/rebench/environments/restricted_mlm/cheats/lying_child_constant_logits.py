"""A lying child: it computes logits with forbidden ops itself and sends a graph whose
output is that tensor, stored as a constant (the forward "folded" into its result)."""
import json
import sys
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


def _patch():
    child = sys.modules.get("__main__")
    if getattr(child, "graph_data", None) is None:
        return

    def lying(program):
        logits = torch.randn(8, 128, VOCAB).log_softmax(-1)
        graph = {"format": 1, "input": "tokens", "inputs": ["tokens"], "tensors": ["folded"],
                 "nodes": [{"name": "out", "target": "aten.clone.default",
                            "args": [{"ref": "folded"}], "kwargs": {}, "where": ""}],
                 "output": [{"ref": "out"}]}
        return graph, {"folded": logits}

    child.graph_data = lying


_patch()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(1, VOCAB)

    def forward(self, tokens):
        return self.head(tokens[..., None].float())


def get_trained_model():
    return Net()
