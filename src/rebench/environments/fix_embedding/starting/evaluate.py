"""Local check: the validation loss of a model file, measured the way the scorer measures
the held-out loss (fixed, evenly spread windows; fp32), but on data/val.bin.

Run: python evaluate.py [fixed_model.pth]
"""

import json
import sys

import numpy as np
import torch
from model import GPT, GPTConfig

path = sys.argv[1] if len(sys.argv) > 1 else "fixed_model.pth"
batch_size = 32

with open("config.json") as f:
    config = json.load(f)
n_windows = config["eval_windows"]  # windows of block_size tokens, spread evenly over the split
model = GPT(GPTConfig.from_json(config["large_model"]))
model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
model.eval()

data = np.memmap(config["data"]["val"], dtype=np.uint16, mode="r")
block = model.config.block_size
starts = np.linspace(0, len(data) - block - 1, num=n_windows).astype(np.int64)
total = 0.0
with torch.no_grad():
    for i in range(0, n_windows, batch_size):
        chunk = starts[i : i + batch_size]
        rows = np.stack([data[s : s + block + 1].astype(np.int64) for s in chunk])
        t = torch.from_numpy(rows)
        _, loss = model(t[:, :-1], t[:, 1:])
        total += loss.item() * len(rows)
print(f"{path}: validation loss {total / n_windows:.4f}")
