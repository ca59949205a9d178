"""Stage 2: the trainer. Reads the shards, trains for `max_duration_epochs`, evaluates on
the validation shards every `eval_interval_batches` and saves a full checkpoint (model,
optimizer, step) every `save_interval_batches` and at the end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from foundry.config import FinetuneConfig, config_from_argv
from foundry.data import collate, global_batches, read_shards
from foundry.training import load_base_model, lr_at, make_optimizer, summed_loss, train_step


class ShardDataset(Dataset[tuple[np.ndarray, int]]):
    """Rows of a folder of shards."""

    def __init__(self, folder: Path) -> None:
        self.rows = read_shards(folder)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
        return self.rows[index]


def _loader(dataset: ShardDataset, batches: list[list[int]], cfg: FinetuneConfig,
            pad_id: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    loader = DataLoader(dataset, batch_sampler=batches, num_workers=cfg.num_workers,
                        collate_fn=partial(collate, max_seq_len=cfg.max_seq_len, pad_id=pad_id))
    yield from loader


@torch.no_grad()
def evaluate(model: torch.nn.Module, dataset: ShardDataset, cfg: FinetuneConfig,
             pad_id: int, device: torch.device) -> float:
    model.eval()
    n = len(dataset)
    micro = cfg.device_train_microbatch_size
    batches = [list(range(i, min(n, i + micro))) for i in range(0, n, micro)]
    total, count = 0.0, 0
    for inputs, labels in _loader(dataset, batches, cfg, pad_id):
        inputs, labels = inputs.to(device), labels.to(device)
        total += float(summed_loss(model, inputs, labels, cfg.precision))  # type: ignore[arg-type]
        count += int((labels != -100).sum())
    model.train()
    return total / max(1, count)


def save_checkpoint(model: torch.nn.Module, opt: torch.optim.Optimizer, step: int,
                    epoch: int, cfg: FinetuneConfig) -> None:
    folder = Path(cfg.save_folder)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"ep{epoch}-ba{step}-rank0.pt"
    state = {"model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
             "optimizer": opt.state_dict(), "step": step, "epoch": epoch,
             "rng": torch.get_rng_state()}
    torch.save({"state": state}, folder / name)
    (folder / "latest-rank0.txt").write_text(name)


def main(cfg: FinetuneConfig) -> None:
    torch.manual_seed(cfg.seed)
    device = torch.device(cfg.device)
    tokens = Path(cfg.tokens_dir)
    train_set, eval_set = ShardDataset(tokens / "train"), ShardDataset(tokens / "valid")
    pad_id = 0
    model = load_base_model(cfg).to(device)
    model.train()
    opt = make_optimizer(model, cfg)  # type: ignore[arg-type]
    per_epoch = len(train_set) // cfg.global_train_batch_size
    total_steps = per_epoch * cfg.max_duration_epochs
    print(f"training {total_steps} batches ({len(train_set)} rows, "
          f"{cfg.max_duration_epochs} epochs)", flush=True)
    start = time.monotonic()
    if cfg.eval_first:
        print(f"eval before training: loss {evaluate(model, eval_set, cfg, pad_id, device):.4f}")
    step = 0
    for epoch in range(cfg.max_duration_epochs):
        batches = global_batches(len(train_set), cfg.global_train_batch_size, cfg.seed, epoch)
        for inputs, labels in _loader(train_set, batches, cfg, pad_id):
            lr = lr_at(step, total_steps, cfg)
            loss = train_step(model, opt, inputs.to(device), labels.to(device), lr, cfg)  # type: ignore[arg-type]
            step += 1
            print(f"[batch={step}/{total_steps}] loss {loss:.4f} lr {lr:.2e} "
                  f"{time.monotonic() - start:.1f} s", flush=True)
            if cfg.eval_interval_batches > 0 and (
                    step % cfg.eval_interval_batches == 0 or step == total_steps):
                val = evaluate(model, eval_set, cfg, pad_id, device)
                print(f"[batch={step}] eval loss {val:.4f}", flush=True)
            if step % cfg.save_interval_batches == 0 or step == total_steps:
                save_checkpoint(model, opt, step, epoch, cfg)


if __name__ == "__main__":
    main(config_from_argv())
