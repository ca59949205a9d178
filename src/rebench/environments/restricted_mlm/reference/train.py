"""Train model.py's conv net as a masked LM on data/train.bin and save model.pt.

The loss is the scorer's: cross-entropy at the masked positions (15% of 128 tokens set to
the mask id). Run: python train.py   (numbers for the cpu and gpu profiles below)

cpu: the counted tables (model.py) come from all of data/train.bin. The net learns to
weigh them on text the tables did not count: the split is cut into `folds` parts, and a
batch drawn from one part reads tables counted from the others (in-sample counts would
look more certain than they are on new text).
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
# cpu: about 3-6 minutes on 2 shared cores (195 s in the sandbox at load 2.5-4.6, 2026-12-07),
# counting the tables about 6 s of it; gpu: a bigger net, longer (6000 steps in 355 s on a
# shared H200, about 49 s per 1000 steps alone; docs/benchmarks/restricted_mlm-h200.md)
SETTINGS = {
    "cpu": {"steps": 400, "batch_size": 32, "lr": 2e-3, "folds": 4},
    "gpu": {"steps": 6000, "batch_size": 64, "lr": 1e-3, "folds": 0},
}[config["profile"]]
seed = 1234
# -----------------------------------------------------------------------------
t_start = time.time()
torch.manual_seed(seed)
rng = np.random.default_rng(seed)
device = "cuda" if torch.cuda.is_available() and config["profile"] == "gpu" else "cpu"
seq_len, mask_id, fraction = config["seq_len"], config["mask_id"], config["mask_fraction"]
vocab = config["vocab_size"]
data = np.memmap(config["data"]["train"], dtype=np.uint16, mode="r")


def get_batch(batch_size, lo, hi):
    starts = rng.integers(lo, hi - seq_len, batch_size)  # windows within data[lo:hi]
    targets = torch.from_numpy(np.stack([data[s:s + seq_len] for s in starts]).astype(np.int64))
    mask = torch.rand(targets.shape) < fraction
    inputs = torch.where(mask, torch.full_like(targets, mask_id), targets)
    return inputs.to(device), targets.to(device), mask.to(device)


def log_unigram(tokens):
    counts = np.bincount(tokens, minlength=vocab) + 1.0
    return np.log(counts / counts.sum())


def count_tables(tokens, reach):
    """model.tables' weight counted from `tokens`: for the neighbour at -1, +1, -2, +2, ...
    a block of vocab rows, row n = log P(x | that neighbour is n) - log P(x) over x
    (add-0.1 smoothed); the mask id's rows are 0 (a masked neighbour says nothing)."""
    blocks = []
    for d in range(1, reach + 1):
        pairs = np.bincount(tokens[:-d] * vocab + tokens[d:], minlength=vocab * vocab)
        counts = pairs.reshape(vocab, vocab) + 0.1  # [a, b]: b comes d tokens after a
        # [a, b] = log P(b | a) - log P(b), the same as log P(a | b) - log P(a)
        pmi = np.log(counts / counts.sum(1, keepdims=True)) - log_unigram(tokens)
        for table in (pmi, pmi.T):  # the left neighbour a: [a, x]; the right one b: [b, x]
            table = table.astype(np.float32)
            table[mask_id] = 0.0
            blocks.append(table)
    return torch.from_numpy(np.concatenate(blocks))


model = build_model().to(device)
folds = SETTINGS["folds"]
bounds = [(0, len(data))]
if model.reach:
    tokens = np.asarray(data).astype(np.int64)
    model.tables.weight.data.copy_(count_tables(tokens, model.reach))
    bounds = [(k * len(data) // folds, (k + 1) * len(data) // folds) for k in range(folds)]
    held_out = [count_tables(np.concatenate([tokens[:lo], tokens[hi:]]), model.reach).to(device)
                for lo, hi in bounds]
    # Start from the tables alone: the unigram in the head's bias, table d weighted 1/d.
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.copy_(torch.from_numpy(log_unigram(tokens)).float())
        model.gate.weight.zero_()
        model.gate.bias.copy_(torch.tensor([1.0 / abs(o) for o in model.offsets]))
    print(f"{len(model.offsets)} neighbour tables counted ({folds + 1} times), "
          f"{time.time() - t_start:.0f} s")
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=SETTINGS["lr"],
                        weight_decay=0.0)
steps = SETTINGS["steps"]
t0 = time.time()
for step in range(steps):
    lr = SETTINGS["lr"] * 0.5 * (1 + math.cos(math.pi * step / steps))  # cosine to 0
    for group in opt.param_groups:
        group["lr"] = lr
    fold = step % len(bounds)
    inputs, targets, mask = get_batch(SETTINGS["batch_size"], *bounds[fold])
    # The head only at masked positions: the same loss as model(inputs)[mask], 7x cheaper.
    h = model.body(inputs)[mask]
    if model.reach:
        logits = model.logits(h, model.neighbour_rows(inputs)[mask], held_out[fold])
    else:
        logits = model.logits(h, None)  # [n_masked, vocab]
    loss = torch.nn.functional.cross_entropy(logits, targets[mask])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == steps - 1:
        print(f"step {step}/{steps}: masked loss {loss.item():.3f}, {time.time() - t0:.0f} s")
torch.save(model.state_dict(), "model.pt")
print(f"saved model.pt, {time.time() - t_start:.0f} s in all")
