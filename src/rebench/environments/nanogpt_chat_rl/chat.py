"""Chat utilities for the student GPT: the character tokenizer, the prompt format, batched
sampling with a key/value cache, and fine-tuning on (prompt, response) pairs.

Self-contained on purpose (it imports only torch): `prepare` copies it into workspaces as
`chat.py` next to `model.py`, and the trusted scorer samples with this same code from its
own copy (it never imports anything from the workspace). The scorer's settings are
SCORING_TEMPERATURE, SCORING_TOP_K and MAX_NEW_TOKENS below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

# Token 0 ends a response; then "\n" and the printable ASCII characters.
EOT = 0
VOCAB: tuple[str, ...] = ("<eot>", "\n", *[chr(i) for i in range(32, 127)])
VOCAB_SIZE = len(VOCAB)  # 97
_INDEX = {ch: i for i, ch in enumerate(VOCAB) if i != EOT}
_UNKNOWN = _INDEX["?"]

MAX_NEW_TOKENS = 60  # the paper's response length
MAX_PROMPT_CHARS = 60  # "Q: " + 60 + "\nA: " + 60 new characters fit the context of 128
SCORING_TEMPERATURE = 1.0
SCORING_TOP_K = 0  # 0: the full distribution


def encode(text: str) -> list[int]:
    """Characters to token ids (characters outside the vocabulary become "?")."""
    return [_INDEX.get(ch, _UNKNOWN) for ch in text]


def decode(ids: Sequence[int]) -> str:
    """Token ids to text, stopping at the first end-of-response token."""
    out = []
    for i in ids:
        if i == EOT:
            break
        out.append(VOCAB[i] if 0 < i < VOCAB_SIZE else "?")
    return "".join(out)


def format_prompt(prompt: str) -> str:
    """What the model sees before its response."""
    return f"Q: {' '.join(prompt.split())[:MAX_PROMPT_CHARS]}\nA: "


def format_pair(prompt: str, response: str) -> list[int]:
    """A whole exchange as token ids, the response ended by EOT."""
    return encode(format_prompt(prompt)) + encode(response) + [EOT]


def _attend(block: Any, x: torch.Tensor, cache: list[torch.Tensor], mask: torch.Tensor
            ) -> torch.Tensor:
    """One block on new positions `x` (b, t, c), appending their keys and values to
    `cache` ([k, v] or empty); `mask` (b, 1, t, T) says which keys each query sees."""
    attn = block.attn
    b, t, c = x.shape
    heads = attn.n_head
    q, k, v = attn.c_attn(block.ln_1(x)).split(c, dim=2)
    q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
    if cache:
        k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        cache[0], cache[1] = k, v
    else:
        cache.extend([k, v])
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    x = x + attn.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))
    out: torch.Tensor = x + block.mlp(block.ln_2(x))
    return out


@torch.no_grad()
def sample(model: Any, prompts: Sequence[str], *, generator: torch.Generator,
           temperature: float = SCORING_TEMPERATURE, top_k: int = SCORING_TOP_K,
           max_new_tokens: int = MAX_NEW_TOKENS, batch_size: int = 256) -> list[str]:
    """One sampled response per prompt (the model is a GPT of model.py, in eval mode).
    Prompts are left-padded into batches; a response ends at EOT or `max_new_tokens`.
    With the same generator state, prompts and model, the responses are the same."""
    device = next(model.parameters()).device
    out: list[str] = []
    for start in range(0, len(prompts), batch_size):
        chunk = [encode(format_prompt(p)) for p in prompts[start: start + batch_size]]
        out.extend(_sample_batch(model, chunk, generator, temperature, top_k,
                                 max_new_tokens, device))
    return out


def _sample_batch(model: Any, rows: list[list[int]], generator: torch.Generator,
                  temperature: float, top_k: int, max_new: int, device: torch.device
                  ) -> list[str]:
    tr = model.transformer
    width = max(len(r) for r in rows)
    if width + max_new > model.config.block_size:
        raise ValueError(f"prompt of {width} tokens + {max_new} new > block_size "
                         f"{model.config.block_size}")
    b = len(rows)
    idx = torch.full((b, width), EOT, dtype=torch.long)
    valid = torch.zeros((b, width + max_new), dtype=torch.bool)
    for i, r in enumerate(rows):
        idx[i, width - len(r):] = torch.tensor(r)
        valid[i, width - len(r):] = True
    idx, valid = idx.to(device), valid.to(device)
    pos = (valid[:, :width].long().cumsum(1) - 1).clamp(min=0)
    causal = torch.ones(width, width, dtype=torch.bool, device=device).tril()
    mask = (causal[None] & valid[:, None, :width]) | torch.eye(width, dtype=torch.bool,
                                                                device=device)[None]
    caches: list[list[torch.Tensor]] = [[] for _ in tr.h]
    x = tr.wte(idx) + tr.wpe(pos)
    for block, cache in zip(tr.h, caches, strict=True):
        x = _attend(block, x, cache, mask[:, None])
    logits = F.linear(tr.ln_f(x[:, -1:]), tr.wte.weight)[:, 0]
    next_pos = pos[:, -1] + 1
    done = torch.zeros(b, dtype=torch.bool, device=device)
    generated = []
    for step in range(max_new):
        token = _pick(logits, generator, temperature, top_k)
        token = torch.where(done, torch.full_like(token, EOT), token)
        generated.append(token)
        done |= token == EOT
        if bool(done.all()) or step == max_new - 1:
            break
        valid[:, width + step] = True
        x = tr.wte(token[:, None]) + tr.wpe(next_pos[:, None])
        step_mask = valid[:, None, None, : width + step + 1]
        for block, cache in zip(tr.h, caches, strict=True):
            x = _attend(block, x, cache, step_mask)
        logits = F.linear(tr.ln_f(x), tr.wte.weight)[:, 0]
        next_pos = next_pos + 1
    tokens = torch.stack(generated, dim=1).cpu().tolist()
    return [decode(row) for row in tokens]


def _pick(logits: torch.Tensor, generator: torch.Generator, temperature: float,
          top_k: int) -> torch.Tensor:
    logits = logits.float()
    if temperature <= 0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k > 0:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, -math.inf)
    probs = torch.softmax(logits, dim=-1)
    if probs.device != generator.device:
        probs = probs.to(generator.device)
    return torch.multinomial(probs, 1, generator=generator)[:, 0].to(logits.device)


def finetune(model: Any, pairs: Sequence[tuple[str, str]], *, steps: int, lr: float,
             batch_size: int = 32, seed: int = 0, device: torch.device | None = None
             ) -> list[float]:
    """Train `model` in place on (prompt, response) pairs: cross-entropy on the response's
    tokens (and its EOT) only, AdamW with a cosine schedule. Returns the losses."""
    if not pairs:
        return []
    device = device or next(model.parameters()).device
    block = model.config.block_size
    rows = [format_pair(p, r)[: block + 1] for p, r in pairs]
    starts = [min(len(encode(format_prompt(p))), len(row) - 1)
              for (p, _), row in zip(pairs, rows, strict=True)]
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    model.train()
    losses = []
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / max(1, steps)))
        pick = torch.randint(len(rows), (min(batch_size, len(rows)),), generator=gen).tolist()
        width = max(len(rows[i]) for i in pick)
        x = torch.full((len(pick), width - 1), EOT, dtype=torch.long)
        y = torch.full((len(pick), width - 1), -1, dtype=torch.long)
        for j, i in enumerate(pick):
            row = torch.tensor(rows[i])
            x[j, : len(row) - 1] = row[:-1]
            y[j, starts[i] - 1: len(row) - 1] = row[starts[i]:]
        x, y = x.to(device), y.to(device)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), y.reshape(-1),
                               ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.item()))
    model.eval()
    return losses
