"""Build optimize_llm_foundry's assets: pretrain a small GPT (the base model) on the
corpus with fixed seeds, cut finetuning rows from the corpus, then train the reference
weights by running the starting pipeline on a held-out data file drawn from fresh secret
randomness.

public/   (copied into every workspace)
  base_model/model.safetensors, base_model/config.json   the pretrained base model
  tokenizer.json                                         the BPE (tokenizers format)
  foundry/model.py                                       the GPT (a copy of rebench.assets.gpt)
  finetune.yaml                                          the profile's finetuning run
  train_data.jsonl                                       rows from the corpus's train split
protected/ (trusted scorer only)
  heldout_data.jsonl            rows from the held-out works, from a secret seed
  reference_model.safetensors   the starting pipeline's weights on heldout_data.jsonl
  reference.json                how they were made (seconds, output tail)
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
import yaml
from safetensors.torch import save_file

from rebench.assets import gpt as gpt_module
from rebench.assets.corpus import offline_documents, split_documents
from rebench.assets.data import offline_token_splits
from rebench.assets.gpt import GPT, GPTConfig
from rebench.assets.secret import derive, draw_secret, store_secret
from rebench.assets.train import TrainConfig, new_model, train
from rebench.environments.optimize_llm_foundry.environment import FoundryParams
from rebench.environments.optimize_llm_foundry.pipeline import (
    PipelineError,
    lay_out,
    run_local,
    starting_folder,
)
from rebench.environments.optimize_llm_foundry.rows import make_rows, write_jsonl
from rebench.scoring.context import PrepareContext
from rebench.scoring.kit import torch_device

# The public rows' seed is fixed (the agent has them anyway); the held-out rows' is secret.
_PUBLIC_ROWS_SEED = 20241115
# Where token_splits puts held-out works: the same seed and fractions (rebench.assets.data).
_SPLIT_FRACTION = 0.05  # of each source's text for each of val and test


def finetune_yaml(p: FoundryParams) -> dict[str, object]:
    """finetune.yaml of a profile (hyperparameters and the pipeline's options)."""
    return {
        "seed": p.finetune_seed,
        "data": {"train_file": "train_data.jsonl", "tokenizer": "tokenizer.json",
                 "max_seq_len": p.max_seq_len, "tokenize_workers": p.tokenize_workers,
                 "shard_rows": p.shard_rows, "tokens_dir": "finetuning_tokens"},
        "model": {"base": "base_model"},
        "train": {
            "global_train_batch_size": p.global_train_batch_size,
            "device_train_microbatch_size": p.device_train_microbatch_size,
            "max_duration_epochs": p.epochs,
            "optimizer": {"lr": p.lr, "betas": [0.9, 0.95], "eps": 1e-8,
                          "weight_decay": p.weight_decay},
            "scheduler": {"t_warmup_batches": p.warmup_batches, "alpha_f": p.alpha_f},
            "grad_clip_norm": p.grad_clip_norm, "precision": p.precision,
            "device": p.device,
        },
        "eval": {"eval_interval_batches": p.eval_interval_batches, "eval_first": False},
        "loader": {"num_workers": p.num_workers},
        "save": {"folder": "checkpoints",
                 "save_interval_batches": p.save_interval_batches},
        "output_dir": "trained_model",
    }


def _pretrain(ctx: PrepareContext, tokens: np.ndarray, vocab: int) -> GPT:
    p: FoundryParams = ctx.profile.typed
    cfg = GPTConfig(vocab_size=vocab, block_size=p.block_size, n_layer=p.n_layer,
                    n_head=p.n_head, n_embd=p.n_embd)
    steps, lr = p.pretrain_steps, p.pretrain_lr
    device = torch_device(ctx.profile)
    tcfg = TrainConfig(steps=steps, batch_size=p.pretrain_batch_size, lr=lr,
                       min_lr=lr / 10, warmup_steps=max(1, steps // 20),
                       seed=p.pretrain_seed, bf16=device.type == "cuda")
    model = new_model(cfg, p.pretrain_seed)

    def report(step: int, loss: float) -> None:
        if step % max(1, steps // 10) == 0 or step == steps - 1:
            ctx.progress(f"pretraining the base model: step {step + 1}/{steps}, "
                         f"loss {loss:.3f}", 0.2 + 0.4 * (step + 1) / steps)

    train(model, tokens, tcfg, device, report)
    return model.cpu()


def _write_public(ctx: PrepareContext, model: GPT, tokenizer: Path,
                  rows: list[dict[str, str]]) -> None:
    pub = ctx.public_dir
    (pub / "base_model").mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float32).contiguous().clone()
             for k, v in model.state_dict().items()}
    save_file(state, str(pub / "base_model" / "model.safetensors"))
    (pub / "base_model" / "config.json").write_text(json.dumps(model.config.to_json(), indent=2))
    shutil.copyfile(tokenizer, pub / "tokenizer.json")
    (pub / "foundry").mkdir(exist_ok=True)
    shutil.copyfile(Path(gpt_module.__file__), pub / "foundry" / "model.py")
    params: FoundryParams = ctx.profile.typed
    text = yaml.safe_dump(finetune_yaml(params), sort_keys=False)
    (pub / "finetune.yaml").write_text(
        f"# Finetuning run of the {ctx.profile.name} profile. Hyperparameters (seed, data, "
        "model, train) define the result;\n# eval, loader and save options do not.\n" + text)
    write_jsonl(rows, pub / "train_data.jsonl")


def reference_weights(ctx: PrepareContext) -> None:
    """Run the starting pipeline on the held-out rows; keep its weights (protected)."""
    timeout = 3 * ctx.profile.scoring_timeout_s
    with tempfile.TemporaryDirectory(prefix="foundry-prepare-") as tmp:
        work = Path(tmp) / "work"
        starting_folder(work, ctx.public_dir)
        lay_out(work, ctx.public_dir, ctx.protected_dir / "heldout_data.jsonl")
        run = run_local(work, timeout)
        if run.returncode != 0:
            raise PipelineError(f"the starting pipeline failed on the held-out data "
                                f"(exit {run.returncode}):\n{run.output_tail}")
        shutil.copyfile(work / "trained_model" / "model.safetensors",
                        ctx.protected_dir / "reference_model.safetensors")
    record = {"seconds": round(run.seconds, 3), "output_tail": run.output_tail[-1500:]}
    (ctx.protected_dir / "reference.json").write_text(json.dumps(record, indent=2))
    ctx.progress(f"reference weights trained in {run.seconds:.1f} s", 1.0)


def prepare(ctx: PrepareContext) -> None:
    """Build the assets of one profile (see the module docstring for the layout). Which works
    are held out, and which held-out rows are drawn, follow from a secret drawn here."""
    p: FoundryParams = ctx.profile.typed
    secret = draw_secret()
    store_secret(ctx.protected_dir, secret)
    key = derive(secret, "optimize_llm_foundry/corpus-split")
    with tempfile.TemporaryDirectory(dir=ctx.assets_dir, prefix=".build-") as scratch:
        splits = offline_token_splits(p.tokenizer, key, Path(scratch) / "corpus",
                                      _SPLIT_FRACTION, _SPLIT_FRACTION, progress=ctx.progress)
        documents = split_documents(offline_documents(), key, _SPLIT_FRACTION, _SPLIT_FRACTION)
        n_rows = p.rows
        public_rows = make_rows(documents["train"], n_rows,
                                np.random.default_rng(_PUBLIC_ROWS_SEED))
        # Held-out rows: works the agent never sees (val and test), drawn with the secret.
        rows_rng = np.random.default_rng(int.from_bytes(derive(secret, "foundry/rows"), "little"))
        heldout = make_rows([*documents["val"], *documents["test"]], n_rows, rows_rng)
        write_jsonl(heldout, ctx.protected_dir / "heldout_data.jsonl")
        model = _pretrain(ctx, splits.tokens("train"), splits.vocab_size)
        _write_public(ctx, model, splits.root / "tokenizer.json", public_rows)
    ctx.progress("training the reference weights with the starting pipeline", 0.7)
    reference_weights(ctx)
