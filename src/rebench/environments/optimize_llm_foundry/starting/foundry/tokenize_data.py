"""Stage 1: tokenize train_data.jsonl into shards of `shard_rows` rows, one task per
shard, in a pool of `tokenize_workers` processes (as a dataset `map` with num_proc does)."""

from __future__ import annotations

import multiprocessing as mp
import shutil
from pathlib import Path

from tokenizers import Tokenizer

from foundry.config import FinetuneConfig, config_from_argv
from foundry.data import EOT, encode_row, read_rows, write_shard

_TOKENIZER: Tokenizer | None = None


def _init_worker(tokenizer_file: str) -> None:
    global _TOKENIZER
    _TOKENIZER = Tokenizer.from_file(tokenizer_file)


def _tokenize_shard(task: tuple[int, list[tuple[str, str]], str, int]) -> int:
    index, rows, out_dir, max_seq_len = task
    assert _TOKENIZER is not None
    eot = int(_TOKENIZER.token_to_id(EOT))
    seqs = []
    for prompt, response in rows:
        p = _TOKENIZER.encode(prompt).ids
        r = _TOKENIZER.encode(response).ids
        seqs.append(encode_row(p, r, eot, max_seq_len))
    write_shard(Path(out_dir) / f"shard_{index:05d}.npz", seqs)
    return len(seqs)


def tokenize(cfg: FinetuneConfig) -> int:
    rows = read_rows(cfg.train_file)
    out = Path(cfg.tokens_dir) / "train"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tasks = [(i // cfg.shard_rows, rows[i:i + cfg.shard_rows], str(out), cfg.max_seq_len)
             for i in range(0, len(rows), cfg.shard_rows)]
    # spawn, not fork: the Rust tokenizer's thread pool does not survive a fork
    ctx = mp.get_context("spawn")
    with ctx.Pool(cfg.tokenize_workers, initializer=_init_worker,
                  initargs=(cfg.tokenizer,)) as pool:
        counts = pool.map(_tokenize_shard, tasks, chunksize=1)
    return sum(counts)


if __name__ == "__main__":
    config = config_from_argv()
    n = tokenize(config)
    print(f"tokenized {n} rows into {config.tokens_dir}/train", flush=True)
