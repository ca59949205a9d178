"""Optimize LLM Foundry: make a finetuning pipeline (tokenize, train, convert) fast without
changing the weights it produces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rebench.core.spec import (
    Aggregation,
    Direction,
    EnvironmentSpec,
    ParamValue,
    Profile,
    SolutionRecipe,
)


@dataclass(frozen=True)
class FoundryParams:
    """A profile's numbers: the finetuning run (prepare writes it as finetune.yaml), the base
    model prepare pretrains, and the scorer's threshold."""

    rows: int  # rows of train_data.jsonl (the public file and the held-out one alike)
    max_seq_len: int  # tokens per finetuning sequence
    finetune_seed: int  # finetune.yaml's seed
    global_train_batch_size: int  # sequences per optimizer step
    device_train_microbatch_size: int  # sequences per forward/backward
    epochs: int  # max_duration_epochs
    lr: float  # AdamW (betas 0.9, 0.95; eps 1e-8)
    weight_decay: float
    warmup_batches: int  # cosine schedule: warm-up batches, final lr factor
    alpha_f: float
    grad_clip_norm: float
    precision: Literal["fp32", "amp_bf16"]
    device: Literal["cpu", "cuda"]
    tokenize_workers: int  # pipeline options (they leave the weights as they are): tokenizers
    shard_rows: int  # rows per token shard
    eval_interval_batches: int  # batches between evaluations
    num_workers: int  # data loader workers
    save_interval_batches: int  # batches between full checkpoints (model and optimizer)
    tokenizer: str  # the base model's: "gpt2" or "bpe<size>" (rebench.assets.tokenizer)
    n_layer: int  # the base model's shape
    n_head: int
    n_embd: int
    block_size: int
    pretrain_steps: int  # how prepare pretrains the base model
    pretrain_batch_size: int
    pretrain_lr: float
    pretrain_seed: int
    norm_threshold: float  # valid iff sum over tensors of ||w - w_ref||_2 is below this


# What finetune.yaml says, per profile (prepare writes it into the workspace).
_FINETUNE_CPU: dict[str, ParamValue] = {
    "rows": 640, "max_seq_len": 128, "finetune_seed": 17,
    "global_train_batch_size": 16, "device_train_microbatch_size": 8, "epochs": 1,
    "lr": 1e-3, "weight_decay": 0.0, "warmup_batches": 4, "alpha_f": 0.1,
    "grad_clip_norm": 1.0, "precision": "fp32", "device": "cpu",
    "tokenize_workers": 8, "shard_rows": 16, "eval_interval_batches": 8, "num_workers": 2,
    "save_interval_batches": 8,
}

CPU = Profile(
    name="cpu",
    description="2 CPU cores: a 2-layer/64-wide GPT (BPE 2048, context 128), "
    "640 rows, 40 fp32 steps",
    # Official scorings (bwrap sandbox, torch 2.13.0 CPU, 2026-11-30) on a HEAVILY LOADED
    # shared 2-core machine (load average 15-19): reference 126 s (`rebench calibrate
    # optimize_llm_foundry -p cpu -n 1`), start 340 s (a scoring 2 min later; the
    # calibrate session's start took 814 s, an outlier of the load: 2-thread math suffers
    # most on an oversubscribed machine). Ratio 2.7, as for 1-thread local runs (336 s vs
    # 131 s). To be re-measured on an idle machine.
    starting_raw=5.8301484013081515,
    reference_raw=4.839034399619527,
    anchors_hardware="cpu:Intel(R) Xeon(R) Processor x2",
    params={
        **_FINETUNE_CPU,
        "tokenizer": "bpe2048",
        "n_layer": 2, "n_head": 2, "n_embd": 64, "block_size": 128,
        "pretrain_steps": 150, "pretrain_batch_size": 8, "pretrain_lr": 3e-3,
        "pretrain_seed": 1,
        # sum over tensors of ||w - w_ref||_2 must stay below this. Measured (README):
        # float noise 0.00066 (2 threads vs 1), bf16 autocast 0.106, half the learning
        # rate 3.34, half the steps 4.90, base weights 7.31.
        "norm_threshold": 0.01,
    },
    gpus=0,
    memory_gb=6.0,
    default_budget_s=8 * 3600.0,
    # generous: a loaded shared machine can be several times slower than an idle one
    scoring_timeout_s=1200.0,
)

_FINETUNE_GPU: dict[str, ParamValue] = {
    **_FINETUNE_CPU,
    "rows": 1000, "max_seq_len": 512, "global_train_batch_size": 16,
    "device_train_microbatch_size": 4, "lr": 3e-4, "warmup_batches": 6,
    "precision": "amp_bf16", "device": "cuda", "tokenize_workers": 16, "shard_rows": 8,
    "eval_interval_batches": 8, "num_workers": 4,
    # a full checkpoint of this model with AdamW state is about 8 GB: four of them
    "save_interval_batches": 16,
}

GPU = Profile(
    name="gpu",
    description="one GPU: a 24-layer/1536-wide GPT (about 0.7 B parameters, BPE 8192, "
    "context 512), 1000 rows, 62 bf16-autocast steps",
    # NOT MEASURED YET: these are the paper's anchors, standing in until
    # `rebench calibrate optimize_llm_foundry -p gpu` is run on an H200 (target: start
    # about 4-5 min, reference about 1.5 min, as in the paper); the sizes below are a
    # first guess to be tuned there, and norm_threshold must be set from measured drift
    # (benchmarks/optimize_llm_foundry_distances.py --profile gpu).
    starting_raw=5.605802066295998,
    reference_raw=4.543294782270004,
    anchors_hardware="paper:4xH100 (placeholder until measured on the H200)",
    params={
        **_FINETUNE_GPU,
        "tokenizer": "bpe8192",
        "n_layer": 24, "n_head": 16, "n_embd": 1536, "block_size": 512,
        "pretrain_steps": 600, "pretrain_batch_size": 32, "pretrain_lr": 6e-4,
        "pretrain_seed": 1,
        "norm_threshold": 1.0,
    },
    gpus=1,
    memory_gb=64.0,
    default_budget_s=8 * 3600.0,
    scoring_timeout_s=900.0,
)

SPEC = EnvironmentSpec(
    id="optimize_llm_foundry",
    version="1.0.1",
    title="Optimize LLM Foundry",
    direction=Direction.LOWER,
    raw_score_meaning="ln(seconds) of the whole `bash finetune.sh` run on held-out data, "
    "valid only if the trained weights are within the profile's norm_threshold of the "
    "reference weights",
    profiles={"cpu": CPU, "gpu": GPU},
    solutions={
        # The scorer runs finetune.sh itself: nothing to build.
        "starting": SolutionRecipe("starting"),
        "reference": SolutionRecipe("reference"),
    },
    aggregation=Aggregation.BEST,
    # Code and configuration only: data, tokens, checkpoints and weights are never taken.
    solution_globs=("**/*.sh", "**/*.py", "**/*.yaml", "**/*.yml", "**/*.json",
                    "**/*.toml", "**/*.cfg", "**/*.txt", "**/*.c", "**/*.cpp", "**/*.h"),
    snapshot_max_bytes=16 * 1024**2,
    params_type=FoundryParams,
    paper_starting_raw=5.605802066295998,
    paper_reference_raw=4.543294782270004,
)
