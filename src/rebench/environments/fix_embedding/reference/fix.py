"""Reference fix: rebuild the large model's embedding from the small model's.

1. adapter: embedding = small_embedding @ A, with A (small_dim x large_dim) the only thing
   trained while every weight of the large model stays frozen;
2. bake A in: the large model's embedding becomes small_embedding @ A;
3. train the whole large model on.

Run: python fix.py   (REBENCH_PROFILE=cpu|gpu picks the recipe; writes fixed_model.pth)
"""

import json
import math
import os
import time

import numpy as np
import torch
from model import GPT, GPTConfig
from torch.func import functional_call

# ---------------------------------------------------------------- defaults (gpu recipe)
adapter_steps = 400  # phase 1: only the adapter learns
adapter_lr = 3e-3
finetune_steps = 500  # phase 3: everything learns
finetune_lr = 6e-4
batch_size = 64
seed = 0
device = "cuda" if torch.cuda.is_available() else "cpu"
# ---------------------------------------------------------------- cpu recipe: numbers only
if os.environ.get("REBENCH_PROFILE", "cpu") == "cpu":
    adapter_steps = 100
    adapter_lr = 1e-2
    finetune_steps = 250
    finetune_lr = 1.5e-3
    batch_size = 16
    device = "cpu"
# -----------------------------------------------------------------------------------

torch.manual_seed(seed)
rng = np.random.default_rng(seed)
with open("config.json") as f:
    config = json.load(f)
train_data = np.memmap(config["data"]["train"], dtype=np.uint16, mode="r")
val_data = np.memmap(config["data"]["val"], dtype=np.uint16, mode="r")


def load(name: str, key: str) -> GPT:
    model = GPT(GPTConfig.from_json(config[key]))
    model.load_state_dict(torch.load(name, map_location="cpu", weights_only=True))
    return model.to(device)


large = load("large_model.pth", "large_model")
small = load("small_correct_model.pth", "small_model")
block = large.config.block_size


def get_batch(data: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    starts = rng.integers(0, len(data) - block - 1, size=batch_size)
    rows = np.stack([data[s : s + block + 1].astype(np.int64) for s in starts])
    t = torch.from_numpy(rows).to(device)
    return t[:, :-1], t[:, 1:]  # inputs (B, T), targets (B, T)


def cosine(step: int, total: int, lr: float) -> float:
    warmup = max(1, total // 20)
    if step < warmup:
        return lr * (step + 1) / warmup
    return lr * (0.1 + 0.45 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup))))


@torch.no_grad()
def val_loss(model: GPT, weights: dict | None = None, batches: int = 20) -> float:
    model.eval()
    eval_rng = np.random.default_rng(1)  # the same windows every call
    losses = []
    for _ in range(batches):
        starts = eval_rng.integers(0, len(val_data) - block - 1, size=batch_size)
        rows = np.stack([val_data[s : s + block + 1].astype(np.int64) for s in starts])
        t = torch.from_numpy(rows).to(device)
        args = (t[:, :-1], t[:, 1:])
        _, loss = functional_call(model, weights, args) if weights else model(*args)
        losses.append(loss.item())
    return sum(losses) / len(losses)


def autocast():
    return torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device == "cuda")


t0 = time.time()
print(f"corrupted large model: val loss {val_loss(large):.3f}")
print(f"small model:           val loss {val_loss(small):.3f}")

# ---- phase 1: train the adapter A, everything else frozen
small_emb = small.transformer.wte.weight.detach()  # (vocab, small_dim)
for p in large.parameters():
    p.requires_grad_(False)
# Least-squares start is impossible (the rows are scrambled), so start small and random.
adapter = torch.nn.Parameter(torch.randn(small_emb.shape[1], large.config.n_embd, device=device)
                             / math.sqrt(small_emb.shape[1]))  # (small_dim, large_dim)
opt = torch.optim.AdamW([adapter], lr=adapter_lr, weight_decay=0.0)
for step in range(adapter_steps):
    for g in opt.param_groups:
        g["lr"] = cosine(step, adapter_steps, adapter_lr)
    x, y = get_batch(train_data)
    with autocast():
        _, loss = functional_call(large, {"transformer.wte.weight": small_emb @ adapter}, (x, y))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"adapter step {step}: loss {loss.item():.3f} ({time.time() - t0:.0f} s)")

# ---- phase 2: bake the adapter into the embedding
with torch.no_grad():
    large.transformer.wte.weight.copy_(small_emb @ adapter)
print(f"after the adapter: val loss {val_loss(large):.3f}")

# ---- phase 3: train everything
for p in large.parameters():
    p.requires_grad_(True)
large.train()
decay = [p for p in large.parameters() if p.dim() >= 2]
no_decay = [p for p in large.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": no_decay, "weight_decay": 0.0}],
                        lr=finetune_lr, betas=(0.9, 0.95))
for step in range(finetune_steps):
    for g in opt.param_groups:
        g["lr"] = cosine(step, finetune_steps, finetune_lr)
    x, y = get_batch(train_data)
    with autocast():
        _, loss = large(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(large.parameters(), 1.0)
    opt.step()
    if step % 50 == 0:
        print(f"finetune step {step}: loss {loss.item():.3f} ({time.time() - t0:.0f} s)")

print(f"fixed model: val loss {val_loss(large):.3f} ({time.time() - t0:.0f} s)")
state = {k: v.detach().float().cpu().contiguous() for k, v in large.state_dict().items()}
torch.save(state, "fixed_model.pth")
