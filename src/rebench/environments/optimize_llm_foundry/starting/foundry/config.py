"""finetune.yaml, typed. Every stage reads the same file."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class FinetuneConfig:
    """The options of finetune.yaml (see the comments there)."""

    seed: int
    train_file: str
    tokenizer: str
    max_seq_len: int
    tokenize_workers: int
    shard_rows: int
    tokens_dir: str
    base_model: str
    global_train_batch_size: int
    device_train_microbatch_size: int
    max_duration_epochs: int
    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    warmup_batches: int
    alpha_f: float
    grad_clip_norm: float
    precision: str
    device: str
    eval_interval_batches: int
    eval_first: bool
    num_workers: int
    save_folder: str
    save_interval_batches: int
    output_dir: str

    @classmethod
    def load(cls, path: str | Path) -> FinetuneConfig:
        raw: dict[str, Any] = yaml.safe_load(Path(path).read_text())
        data, model, train = raw["data"], raw["model"], raw["train"]
        opt, sched = train["optimizer"], train["scheduler"]
        return cls(
            seed=int(raw["seed"]),
            train_file=str(data["train_file"]), tokenizer=str(data["tokenizer"]),
            max_seq_len=int(data["max_seq_len"]),
            tokenize_workers=int(data["tokenize_workers"]),
            shard_rows=int(data["shard_rows"]), tokens_dir=str(data["tokens_dir"]),
            base_model=str(model["base"]),
            global_train_batch_size=int(train["global_train_batch_size"]),
            device_train_microbatch_size=int(train["device_train_microbatch_size"]),
            max_duration_epochs=int(train["max_duration_epochs"]),
            lr=float(opt["lr"]), betas=(float(opt["betas"][0]), float(opt["betas"][1])),
            eps=float(opt["eps"]), weight_decay=float(opt["weight_decay"]),
            warmup_batches=int(sched["t_warmup_batches"]), alpha_f=float(sched["alpha_f"]),
            grad_clip_norm=float(train["grad_clip_norm"]),
            precision=str(train["precision"]), device=str(train["device"]),
            eval_interval_batches=int(raw["eval"]["eval_interval_batches"]),
            eval_first=bool(raw["eval"]["eval_first"]),
            num_workers=int(raw["loader"]["num_workers"]),
            save_folder=str(raw["save"]["folder"]),
            save_interval_batches=int(raw["save"]["save_interval_batches"]),
            output_dir=str(raw["output_dir"]),
        )


def config_from_argv() -> FinetuneConfig:
    """The config named on the command line (default: finetune.yaml)."""
    return FinetuneConfig.load(sys.argv[1] if len(sys.argv) > 1 else "finetune.yaml")
