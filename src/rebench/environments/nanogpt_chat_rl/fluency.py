"""The judge's frozen fluency model: a character n-gram LM with Witten-Bell interpolation,
trained at prepare on the offline corpus (English prose), stored as sorted count tables.

`mean_logprob(text)` is the mean log-probability per character of `text` after the answer
prompt "A: ": higher reads more like the corpus. It is deterministic and has no state
between calls, so a judgement never depends on what was judged before.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rebench.environments.nanogpt_chat_rl.chat import VOCAB_SIZE, encode

ORDER = 5
_BASE = VOCAB_SIZE
_CONTEXT = "A: "


@dataclass(frozen=True)
class _Table:
    keys: np.ndarray  # sorted int64 keys of n-grams (context * base + char)
    counts: np.ndarray  # their counts
    ctx_keys: np.ndarray  # sorted context keys
    ctx_total: np.ndarray  # how often each context was followed by anything
    ctx_types: np.ndarray  # how many distinct characters followed it


def _grams(ids: np.ndarray, n: int) -> np.ndarray:
    key = np.zeros(len(ids) - n + 1, dtype=np.int64)
    for j in range(n):
        key = key * _BASE + ids[j: len(ids) - n + 1 + j]
    return key


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    where = np.searchsorted(keys, query).clip(max=len(keys) - 1)
    hit = keys[where] == query
    return np.where(hit, values[where], 0)


class FluencyModel:
    """A character n-gram LM of order ORDER."""

    def __init__(self, tables: list[_Table]) -> None:
        self.tables = tables  # tables[n - 1]: n-grams

    @classmethod
    def train(cls, text: str) -> FluencyModel:
        ids = np.asarray(encode(text), dtype=np.int64)
        tables = []
        for n in range(1, ORDER + 1):
            keys, counts = np.unique(_grams(ids, n), return_counts=True)
            contexts = keys // _BASE
            ctx_keys, first = np.unique(contexts, return_index=True)
            ctx_total = np.add.reduceat(counts, first)
            ctx_types = np.diff(np.append(first, len(keys)))
            tables.append(_Table(keys, counts.astype(np.int64), ctx_keys,
                                 ctx_total.astype(np.int64), ctx_types.astype(np.int64)))
        return cls(tables)

    def save(self, path: Path) -> None:
        arrays = {}
        for n, t in enumerate(self.tables, start=1):
            for name in ("keys", "counts", "ctx_keys", "ctx_total", "ctx_types"):
                arrays[f"{name}{n}"] = getattr(t, name)
        np.savez_compressed(path, **arrays)

    @classmethod
    def load(cls, path: Path) -> FluencyModel:
        with np.load(path) as data:
            tables = [_Table(*(data[f"{name}{n}"] for name in
                               ("keys", "counts", "ctx_keys", "ctx_total", "ctx_types")))
                      for n in range(1, ORDER + 1)]
        return cls(tables)

    def logprobs(self, text: str) -> np.ndarray:
        """Log-probability of each character of `text` after the answer prompt."""
        ids = np.asarray(encode(_CONTEXT + text), dtype=np.int64)
        start = len(_CONTEXT)
        if len(ids) <= start:
            return np.zeros(0)
        targets = ids[start:]
        prob = np.full(len(targets), 1.0 / VOCAB_SIZE)
        for n in range(1, ORDER + 1):
            table = self.tables[n - 1]
            # the n-gram ending at each target: its n - 1 preceding characters and itself
            positions = np.arange(start, len(ids))
            ok = positions - (n - 1) >= 0
            key = np.zeros(len(targets), dtype=np.int64)
            for j in range(n - 1, -1, -1):
                key = key * _BASE + np.where(ok, ids[np.maximum(positions - j, 0)], 0)
            ctx = key // _BASE
            total = _lookup(table.ctx_keys, table.ctx_total, ctx)
            types = _lookup(table.ctx_keys, table.ctx_types, ctx)
            count = _lookup(table.keys, table.counts, key)
            seen = ok & (total > 0)
            weight = np.where(seen, total / np.maximum(total + types, 1), 0.0)
            ml = np.where(seen, count / np.maximum(total, 1), 0.0)
            prob = weight * ml + (1 - weight) * prob
        result: np.ndarray = np.log(prob)
        return result

    def mean_logprob(self, text: str) -> float:
        """Mean log-probability per character (-inf for empty text)."""
        lp = self.logprobs(text)
        return float(lp.mean()) if len(lp) else float("-inf")
