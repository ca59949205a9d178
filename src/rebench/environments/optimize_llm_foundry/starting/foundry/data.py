"""JSONL rows -> token sequences -> shards -> padded batches."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

IGNORE = -100  # label of positions without a loss (prompt and padding)
EOT = "<|endoftext|>"


def read_rows(path: str | Path) -> list[tuple[str, str]]:
    """(prompt, response) of every line of a JSONL file."""
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            rows.append((str(item["prompt"]), str(item["response"])))
    return rows


def encode_row(prompt_ids: Sequence[int], response_ids: Sequence[int], eot_id: int,
               max_seq_len: int) -> tuple[list[int], int]:
    """The row's token ids (prompt, response, end of text; cut to max_seq_len) and the
    number of prompt tokens among them."""
    ids = [*prompt_ids, *response_ids, eot_id][:max_seq_len]
    return ids, min(len(prompt_ids), max_seq_len)


def write_shard(path: Path, seqs: Sequence[tuple[list[int], int]]) -> None:
    """One shard: concatenated ids, each row's length and prompt length."""
    tokens = np.array([t for ids, _ in seqs for t in ids], dtype=np.uint16)
    np.savez(path, tokens=tokens, lengths=np.array([len(ids) for ids, _ in seqs], np.int32),
             prompt_lens=np.array([p for _, p in seqs], np.int32))


def read_shards(folder: str | Path) -> list[tuple[np.ndarray, int]]:
    """Every row of a folder of shards, in shard order."""
    rows: list[tuple[np.ndarray, int]] = []
    for path in sorted(Path(folder).glob("shard_*.npz")):
        with np.load(path, allow_pickle=False) as shard:
            tokens, lengths, prompts = shard["tokens"], shard["lengths"], shard["prompt_lens"]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        for i in range(len(lengths)):
            rows.append((tokens[offsets[i]:offsets[i + 1]].astype(np.int64), int(prompts[i])))
    return rows


def collate(rows: Sequence[tuple[np.ndarray, int]], max_seq_len: int,
            pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids and labels (batch, max_seq_len); labels hide the prompt and the padding.
    Position t's label is the token at t + 1 (next-token prediction)."""
    inputs = torch.full((len(rows), max_seq_len), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), max_seq_len), IGNORE, dtype=torch.long)
    for i, (ids, prompt_len) in enumerate(rows):
        n = len(ids)
        inputs[i, :n] = torch.from_numpy(np.asarray(ids, dtype=np.int64))
        # token j (j >= prompt_len) is predicted at position j - 1
        first = max(prompt_len, 1)
        labels[i, first - 1:n - 1] = inputs[i, first:n]
    return inputs, labels


def epoch_order(n_rows: int, seed: int, epoch: int) -> np.ndarray:
    """The row order of one epoch (the same in every process and every stage)."""
    return np.random.Generator(np.random.PCG64([seed, epoch])).permutation(n_rows)


def global_batches(n_rows: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """Row indices of each full global batch of an epoch (the last partial one is dropped)."""
    order = epoch_order(n_rows, seed, epoch)
    return [order[i:i + batch_size].tolist()
            for i in range(0, n_rows - batch_size + 1, batch_size)]
