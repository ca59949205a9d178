"""Train model.py's conv net as a masked LM on data/train.bin and save model.pt.

The loss is the scorer's: cross-entropy at the masked positions (15% of 128 tokens set to
the mask id). Run: python train.py   (numbers for the cpu and gpu profiles below)
"""

import json
import math
import time

import numpy as np
import torch
from model import build_model

with open("config.json") as f:
    config = json.load(f)
# -----------------------------------------------------------------------------
# cpu: about 2-3 minutes on 2 cores; gpu: a bigger net, longer (6000 steps in 355 s on a
# shared H200, about 49 s per 1000 steps alone; docs/benchmarks/restricted_mlm-h200.md)
SETTINGS = {
    "cpu": {"steps": 400, "batch_size": 32, "lr": 2e-3},
    "gpu": {"steps": 6000, "batch_size": 64, "lr": 1e-3},
}[config["profile"]]
seed = 1234
# -----------------------------------------------------------------------------
torch.manual_seed(seed)
rng = np.random.default_rng(seed)
device = "cuda" if torch.cuda.is_available() and config["profile"] == "gpu" else "cpu"
seq_len, mask_id, fraction = config["seq_len"], config["mask_id"], config["mask_fraction"]
data = np.memmap(config["data"]["train"], dtype=np.uint16, mode="r")


def get_batch(batch_size):
    starts = rng.integers(0, len(data) - seq_len, batch_size)
    targets = torch.from_numpy(np.stack([data[s:s + seq_len] for s in starts]).astype(np.int64))
    mask = torch.rand(targets.shape) < fraction
    inputs = torch.where(mask, torch.full_like(targets, mask_id), targets)
    return inputs.to(device), targets.to(device), mask.to(device)


model = build_model().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=SETTINGS["lr"], weight_decay=0.0)
steps = SETTINGS["steps"]
t0 = time.time()
for step in range(steps):
    lr = SETTINGS["lr"] * 0.5 * (1 + math.cos(math.pi * step / steps))  # cosine to 0
    for group in opt.param_groups:
        group["lr"] = lr
    inputs, targets, mask = get_batch(SETTINGS["batch_size"])
    # The head only at masked positions: the same loss as model(inputs)[mask], 7x cheaper.
    logits = model.head(model.body(inputs)[mask])  # [n_masked, vocab]
    loss = torch.nn.functional.cross_entropy(logits, targets[mask])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == steps - 1:
        print(f"step {step}/{steps}: masked loss {loss.item():.3f}, {time.time() - t0:.0f} s")
torch.save(model.state_dict(), "model.pt")
print("saved model.pt")
