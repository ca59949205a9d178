"""Tokenize, train and save in one process with the hyperparameters of finetune.yaml.

What the starting pipeline wastes and this skips: a pool of tokenizer processes and shard
files, three interpreter start-ups, data-loader worker processes, evaluation passes (they
never change the weights) and full checkpoints with optimizer state; the weights are
written once, from memory. Same data order, same batches, same optimizer steps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import torch
from foundry.config import FinetuneConfig, config_from_argv
from foundry.data import EOT, collate, encode_row, global_batches, read_rows
from foundry.training import load_base_model, lr_at, make_optimizer, train_step
from safetensors.torch import save_file
from tokenizers import Tokenizer


def main(cfg: FinetuneConfig) -> None:
    torch.manual_seed(cfg.seed)
    device = torch.device(cfg.device)
    tok = Tokenizer.from_file(cfg.tokenizer)
    eot = int(tok.token_to_id(EOT))
    rows = read_rows(cfg.train_file)
    prompts = tok.encode_batch([p for p, _ in rows])
    responses = tok.encode_batch([r for _, r in rows])
    seqs = [encode_row(p.ids, r.ids, eot, cfg.max_seq_len)
            for p, r in zip(prompts, responses, strict=True)]
    data = [(np.asarray(ids, dtype=np.int64), n) for ids, n in seqs]
    model = load_base_model(cfg).to(device)
    model.train()
    opt = make_optimizer(model, cfg)
    total_steps = (len(data) // cfg.global_train_batch_size) * cfg.max_duration_epochs
    step = 0
    for epoch in range(cfg.max_duration_epochs):
        for batch in global_batches(len(data), cfg.global_train_batch_size, cfg.seed, epoch):
            inputs, labels = collate([data[i] for i in batch], cfg.max_seq_len, pad_id=0)
            train_step(model, opt, inputs.to(device), labels.to(device),
                       lr_at(step, total_steps, cfg), cfg)
            step += 1
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to("cpu", torch.float32).contiguous()
               for k, v in model.state_dict().items()}
    save_file(weights, str(out / "model.safetensors"))
    shutil.copyfile(Path(cfg.base_model) / "config.json", out / "config.json")
    print(json.dumps({"steps": step, "rows": len(data)}), flush=True)


if __name__ == "__main__":
    main(config_from_argv())
