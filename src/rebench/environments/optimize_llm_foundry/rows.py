"""Finetuning rows (JSONL: prompt, response) cut from corpus documents: the prompt names
the work and quotes a passage, the response is the passage that follows it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rebench.assets.corpus import Document

PROMPT_CHARS = (80, 200)
RESPONSE_CHARS = (150, 300)


def _cut(text: str, start: int, length: int) -> tuple[str, int]:
    """`length` characters from `start`, extended to the end of a word; and where it ends."""
    end = min(len(text), start + length)
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end].strip(), end


def make_rows(documents: Sequence[Document], n_rows: int,
              rng: np.random.Generator) -> list[dict[str, str]]:
    """`n_rows` rows from random places of `documents` (chosen in proportion to length)."""
    docs = [d for d in documents if len(d.text) > 1000]
    sizes = np.array([len(d.text) for d in docs], dtype=np.float64)
    rows: list[dict[str, str]] = []
    while len(rows) < n_rows:
        doc = docs[int(rng.choice(len(docs), p=sizes / sizes.sum()))]
        p_len = int(rng.integers(*PROMPT_CHARS))
        r_len = int(rng.integers(*RESPONSE_CHARS))
        start = int(rng.integers(0, len(doc.text) - p_len - r_len - 50))
        while start > 0 and not doc.text[start - 1].isspace():
            start -= 1
        passage, end = _cut(doc.text, start, p_len)
        response, _ = _cut(doc.text, end, r_len)
        if passage and response:
            prompt = f"Continue this passage from {doc.group} ({doc.source}):\n{passage}\n"
            rows.append({"prompt": prompt, "response": response})
    return rows


def write_jsonl(rows: Sequence[dict[str, str]], path: Path) -> None:
    """One JSON object a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
