"""Build restricted_mlm's assets: token splits of the shared corpus, a held-out test split
chosen by a secret, and the agent's copies of the export and check code.

public/   (copied into every workspace)
  data/train.bin, data/val.bin   uint16 token ids (train; the agent's validation split)
  tokenizer.json                 the profile's BPE (BPE profiles only)
  config.json                    vocabulary, mask id, shapes, masking and evaluation settings
  model.pt                       the starting MLP, trained here by starting/train.py, so
                                 that a fresh workspace is a valid, scorable solution
  export_child.py, graph_check.py, graph_rules.py  the scorer's export child and checks,
                                 for evaluate.py
protected/ (trusted scorer only)
  test.bin                       held-out tokens
  secret.bin                     the randomness that split held-out chunks into val/test
  eval.json                      the tokenizer's vocabulary and mask id (the scorer's
                                 EvalPlan takes them from here), and the profile's
                                 evaluation settings, as a record of this prepare
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from rebench.assets.data import AssetError, TokenSplits, token_splits
from rebench.assets.secret import derive
from rebench.core.discovery import environment_dir
from rebench.environments.restricted_mlm import export_child, graph_check, graph_rules
from rebench.environments.restricted_mlm.environment import MlmParams
from rebench.scoring.context import PrepareContext

SECRET_BYTES = 32


def split_heldout(tokens: np.ndarray, chunk: int, secret: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Cut held-out tokens into chunks and give each to validation or test at random (half
    each), with randomness that only the secret determines."""
    n_chunks = len(tokens) // chunk
    rng = np.random.default_rng(int.from_bytes(secret, "little"))
    order = rng.permutation(n_chunks)
    test_ids = np.sort(order[: n_chunks // 2])
    val_ids = np.sort(order[n_chunks // 2:])

    def gather(ids: np.ndarray) -> np.ndarray:
        parts = [tokens[i * chunk:(i + 1) * chunk] for i in ids]
        return np.concatenate(parts).astype("<u2") if parts else np.zeros(0, dtype="<u2")

    return gather(val_ids), gather(test_ids)


def _write_public(ctx: PrepareContext, splits: TokenSplits, val: np.ndarray,
                  config: dict[str, object]) -> None:
    pub = ctx.public_dir
    (pub / "data").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(splits.path("train"), pub / "data" / "train.bin")
    val.tofile(pub / "data" / "val.bin")
    tokenizer_file = splits.root / "tokenizer.json"
    if tokenizer_file.is_file():
        shutil.copyfile(tokenizer_file, pub / "tokenizer.json")
    for module in (export_child, graph_check, graph_rules):
        shutil.copyfile(Path(str(module.__file__)), pub / Path(str(module.__file__)).name)
    (pub / "config.json").write_text(json.dumps(config, indent=2))


def train_starting_model(ctx: PrepareContext) -> None:
    """Run starting/train.py (our code) on the public files; keep its model.pt."""
    starting = environment_dir(ctx.spec.id) / ctx.spec.solutions["starting"].folder
    with tempfile.TemporaryDirectory(prefix="rebench-mlm-start-") as tmp:
        work = Path(tmp)
        for name in ("model.py", "train.py"):
            shutil.copyfile(starting / name, work / name)
        shutil.copyfile(ctx.public_dir / "config.json", work / "config.json")
        (work / "data").symlink_to(ctx.public_dir / "data")
        done = subprocess.run([sys.executable, "train.py"], cwd=work, capture_output=True,
                              text=True, timeout=3600)
        if done.returncode != 0:
            raise AssetError(f"training the starting model failed:\n{done.stderr[-2000:]}")
        shutil.copyfile(work / "model.pt", ctx.public_dir / "model.pt")


def prepare(ctx: PrepareContext) -> None:
    """Build the assets of one profile (see the module docstring for the layout). The corpus
    split and the held-out test chunks both follow from one secret drawn here."""
    secret = secrets.token_bytes(SECRET_BYTES)
    ctx.protected_dir.mkdir(parents=True, exist_ok=True)
    (ctx.protected_dir / "secret.bin").write_bytes(secret)
    params: MlmParams = ctx.profile.typed
    with tempfile.TemporaryDirectory(dir=ctx.assets_dir, prefix=".build-") as scratch:
        splits = token_splits(params.tokenizer, ctx.options.get("corpus"),
                              params.max_user_tokens,
                              derive(secret, "restricted_mlm/corpus-split"),
                              Path(scratch) / "corpus", ctx.progress)
        _build(ctx, params, splits, secret)


def _build(ctx: PrepareContext, p: MlmParams, splits: TokenSplits, secret: bytes) -> None:
    ctx.progress("choosing the held-out test split from fresh randomness", 0.6)
    heldout = np.concatenate([np.asarray(splits.tokens("val")),
                              np.asarray(splits.tokens("test"))])
    val, test = split_heldout(heldout, p.chunk_tokens, secret)
    test.tofile(ctx.protected_dir / "test.bin")
    shape: dict[str, object] = {
        "vocab_size": splits.vocab_size, "mask_id": splits.eot_id,
        "seq_len": p.seq_len, "batch_size": p.batch_size,
        "mask_fraction": p.mask_fraction, "mask_seed": p.mask_seed,
    }
    # The scorer takes the vocabulary and the mask id from this record and the rest from the
    # profile (the same numbers: the record says what this prepare was made for).
    record: dict[str, object] = {
        **shape, "eval_batches": p.eval_batches, "loss_floor": p.loss_floor,
        "export_timeout_s": p.export_timeout_s, "eval_time_limit_s": p.eval_time_limit_s,
        "max_node_elements": p.max_node_elements, "max_tensor_bytes": p.max_tensor_bytes,
        "max_live_bytes": p.max_live_bytes, "max_forward_macs": p.max_forward_macs,
        "tokenizer": splits.tokenizer, "tokens": {"val": len(val), "test": len(test)},
    }
    (ctx.protected_dir / "eval.json").write_text(json.dumps(record, indent=2))
    config: dict[str, object] = {
        **shape, "tokenizer": splits.tokenizer, "profile": p.train_profile,
        "loss_floor": p.loss_floor, "max_node_elements": p.max_node_elements,
        "max_live_bytes": p.max_live_bytes, "max_forward_macs": p.max_forward_macs,
        "val_batches": p.eval_batches,
        "data": {"train": "data/train.bin", "val": "data/val.bin", "dtype": "uint16"},
    }
    _write_public(ctx, splits, val, config)
    ctx.progress("training the starting model (starting/train.py)", 0.7)
    train_starting_model(ctx)
    ctx.progress(f"done: {len(val)} validation and {len(test)} held-out test tokens", 1.0)
