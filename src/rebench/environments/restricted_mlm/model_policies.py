"""restricted_mlm's degenerate policies that make a model in the workspace (a red-team
review, 2026-12-07): the start's weights jittered and the best draw kept, the start plus
the unigram table in logit space, a small conv net trained a few steps on public batches,
and a model.py that trains when it is asked for its model. degenerate.py declares them;
the shared workspace helpers are here.
"""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np

from rebench.scoring.declarations import PolicyContext

# What a workspace holds besides the starting files (data/ is read from public_dir).
_PUBLIC = ("config.json", "model.pt", "tokenizer.json", "export_child.py", "graph_check.py",
           "graph_rules.py")


def copy_public_files(ctx: PolicyContext) -> None:
    for name in _PUBLIC:
        if (ctx.public_dir / name).is_file():
            shutil.copyfile(ctx.public_dir / name, ctx.workspace / name)


def vocab_size(ctx: PolicyContext) -> int:
    import json

    return int(json.loads((ctx.public_dir / "config.json").read_text())["vocab_size"])


def _val_batches(ctx: PolicyContext, n: int, seed: int) -> list[tuple[Any, Any, Any]]:
    """n masked batches of 8 x 128 from the public validation split (train.py's masking)."""
    import json

    import torch

    config = json.loads((ctx.public_dir / "config.json").read_text())
    data = np.memmap(ctx.public_dir / "data" / "val.bin", dtype=np.uint16, mode="r")
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    out = []
    seq = int(config["seq_len"])
    for _ in range(n):
        starts = rng.integers(0, len(data) - seq, 8)
        targets = torch.from_numpy(np.stack([data[s:s + seq] for s in starts]).astype(np.int64))
        mask = torch.rand(targets.shape, generator=gen) < float(config["mask_fraction"])
        inputs = torch.where(mask, torch.full_like(targets, int(config["mask_id"])), targets)
        out.append((inputs, targets, mask))
    return out


def seed_fished(ctx: PolicyContext) -> None:
    """A lottery: eight copies of the start with its weights jittered by 2% noise, each
    scored on public validation batches; the best one's weights replace model.pt."""
    import torch

    copy_public_files(ctx)
    module = ctx.module("model.py")
    base = torch.load(ctx.workspace / "model.pt", map_location="cpu", weights_only=True)
    batches = _val_batches(ctx, 6, seed=7)
    best: tuple[float, dict[str, torch.Tensor]] | None = None
    for seed in range(8):
        gen = torch.Generator().manual_seed(seed)
        state = {k: v + 0.02 * v.std() * torch.randn(v.shape, generator=gen)
                 for k, v in base.items()}
        model = module.build_model()
        model.load_state_dict(state)
        model.eval()
        with torch.no_grad():
            loss = float(np.mean([
                torch.nn.functional.cross_entropy(model(i)[m], t[m]).item()
                for i, t, m in batches]))
        if best is None or loss < best[0]:
            best = (loss, state)
    assert best is not None
    torch.save(best[1], ctx.workspace / "model.pt")


def verify_seed_fished(ctx: PolicyContext) -> None:
    import torch

    new = torch.load(ctx.workspace / "model.pt", map_location="cpu", weights_only=True)
    old = torch.load(ctx.public_dir / "model.pt", map_location="cpu", weights_only=True)
    assert new.keys() == old.keys()
    assert any(not torch.equal(new[k], old[k]) for k in new), "weights not jittered"


_ENSEMBLE = """

# --- ensemble: the trained MLP plus the train split's unigram log-frequencies ---
import numpy as np  # noqa: E402


class Ensemble(nn.Module):
    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner
        self.register_buffer("prior", torch.from_numpy(np.load(HERE / "unigram.npy")).float())

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.inner(tokens) + self.prior


_start_model = get_trained_model


def get_trained_model() -> nn.Module:  # noqa: F811
    return Ensemble(_start_model()).eval()
"""


def start_unigram_ensemble(ctx: PolicyContext) -> None:
    """Two context-free predictors added in logit space: the start and the unigram."""
    copy_public_files(ctx)
    tokens = np.memmap(ctx.public_dir / "data" / "train.bin", dtype=np.uint16, mode="r")
    counts = np.bincount(np.asarray(tokens), minlength=vocab_size(ctx)).astype(np.float64)
    np.save(ctx.workspace / "unigram.npy",
            np.log((counts + 1.0) / (counts.sum() + len(counts))).astype(np.float32))
    path = ctx.workspace / "model.py"
    path.write_text(path.read_text() + _ENSEMBLE)


def verify_ensemble(ctx: PolicyContext) -> None:
    import torch

    module = ctx.module("model.py")
    model = module.get_trained_model()
    tokens = torch.randint(0, vocab_size(ctx), (2, 128))
    with torch.no_grad():
        diff = model(tokens) - model.inner(tokens)
    prior = torch.from_numpy(np.load(ctx.workspace / "unigram.npy"))
    assert torch.allclose(diff, prior.expand_as(diff), atol=1e-4)


_CONV = '''
"""A residual 1-D conv net over the sequence: as_strided windows of the embeddings,
mixed by a Linear, relu, residual adds, then a Linear head."""
import json
from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
CONFIG = json.loads((HERE / "config.json").read_text())
K = 5


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.mix = nn.Linear(K * width, width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        pad = torch.zeros(b, K // 2, c)
        xp = torch.cat([pad, x, pad], dim=1).contiguous()
        win = xp.as_strided((b, t, K, c), (xp.shape[1] * c, c, c, 1))
        return x + self.out(torch.relu(self.mix(win.reshape(b, t, K * c))))


class ConvNet(nn.Module):
    def __init__(self, vocab: int, width: int = 64, depth: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def build_model() -> ConvNet:
    return ConvNet(CONFIG["vocab_size"])


def get_trained_model() -> nn.Module:
    model = build_model()
    model.load_state_dict(torch.load(HERE / "model.pt", map_location="cpu", weights_only=True))
    return model.eval()
'''


def conv_few_steps(ctx: PolicyContext) -> None:
    import torch

    copy_public_files(ctx)
    (ctx.workspace / "model.py").write_text(_CONV.lstrip())
    module = ctx.module("model.py")
    torch.manual_seed(0)
    model = module.build_model()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for inputs, targets, mask in _val_batches(ctx, 6, seed=11):
        loss = torch.nn.functional.cross_entropy(model(inputs)[mask], targets[mask])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
    torch.save(model.state_dict(), ctx.workspace / "model.pt")


def verify_conv(ctx: PolicyContext) -> None:
    import torch

    model = ctx.module("model.py").get_trained_model()
    with torch.no_grad():
        out = model(torch.randint(0, vocab_size(ctx), (8, 128)))
    assert out.shape == (8, 128, vocab_size(ctx)) and torch.isfinite(out).all()


_TRAIN_AT_LOAD = """


def get_trained_model() -> nn.Module:  # noqa: F811
    \"\"\"Trains the model when it is asked for (no model.pt to keep in sync): 40 steps of
    train.py's recipe on the train split.\"\"\"
    import numpy as np

    config = json.loads((HERE / "config.json").read_text())
    data = np.memmap(HERE / config["data"]["train"], dtype=np.uint16, mode="r")
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    model = build_model()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    seq = config["seq_len"]
    for _ in range(40):
        starts = rng.integers(0, len(data) - seq, 32)
        targets = torch.from_numpy(np.stack([data[s:s + seq] for s in starts]).astype(np.int64))
        mask = torch.rand(targets.shape) < config["mask_fraction"]
        inputs = torch.where(mask, torch.full_like(targets, config["mask_id"]), targets)
        loss = nn.functional.cross_entropy(model(inputs)[mask], targets[mask])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()
"""


def trains_at_scoring(ctx: PolicyContext) -> None:
    copy_public_files(ctx)
    path = ctx.workspace / "model.py"
    path.write_text(path.read_text() + _TRAIN_AT_LOAD)


def verify_trains_at_scoring(ctx: PolicyContext) -> None:
    text = (ctx.workspace / "model.py").read_text()
    assert text.count("def get_trained_model") == 2 and 'config["data"]["train"]' in text
    compile(text, "model.py", "exec")
