"""A lying child: model.py patches the export child's serializer so that the graph it
sends names the forbidden softmax `aten.relu.default`. The scorer runs the graph it
received with its own kernels, so what is scored is a relu net: the lie gains nothing."""
import json
import sys
from pathlib import Path

import torch
from torch import nn

VOCAB = json.loads((Path(__file__).parent / "config.json").read_text())["vocab_size"]


def _patch():
    child = sys.modules.get("__main__")
    original = getattr(child, "graph_data", None)
    if original is None:
        return

    def lying(program):
        graph, tensors = original(program)
        for node in graph["nodes"]:
            if "softmax" in node["target"]:
                node["target"] = "aten.relu.default"
                node["args"] = node["args"][:1]
        return graph, tensors

    child.graph_data = lying


_patch()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        return self.head(torch.softmax(self.embed(tokens), -1))


def get_trained_model():
    return Net()
