"""Tokenizers: GPT-2 BPE loaded offline from openai-whisper's `gpt2.tiktoken` (the file is
byte-identical to tiktoken's r50k_base), and small byte-level BPEs trained on the corpus
with the `tokenizers` library for CPU profiles. Both libraries are imported lazily."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from rebench.assets.packages import missing_package_message
from rebench.core.errors import RebenchError

EOT = "<|endoftext|>"
GPT2_VOCAB = 50257
# sha256 of r50k_base.tiktoken as published by tiktoken; whisper ships the same bytes.
GPT2_TIKTOKEN_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
# The GPT-2 pre-tokenization regex (tiktoken's r50k_base pattern).
GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)


class TokenizerError(RebenchError):
    """A tokenizer file is missing or does not match its checksum."""


class Tokenizer(Protocol):
    """What the asset pipeline needs from a tokenizer."""

    name: str
    vocab_size: int
    eot_id: int

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


def gpt2_tiktoken_path() -> Path:
    """whisper/assets/gpt2.tiktoken of the installed openai-whisper, found without importing
    whisper (it would pull in its own heavy dependencies)."""
    try:
        dist = importlib.metadata.distribution("openai-whisper")
        path = Path(str(dist.locate_file("whisper/assets/gpt2.tiktoken")))
        if path.is_file():
            return path
    except importlib.metadata.PackageNotFoundError:
        pass
    spec = importlib.util.find_spec("whisper")
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / "assets" / "gpt2.tiktoken"
        if path.is_file():
            return path
    raise TokenizerError(missing_package_message("GPT-2 BPE file whisper/assets/gpt2.tiktoken"))


class GPT2Tokenizer:
    """GPT-2's BPE through tiktoken, built from the local ranks file (no network)."""

    name = "gpt2"
    vocab_size = GPT2_VOCAB
    eot_id = GPT2_VOCAB - 1

    def __init__(self, path: Path | None = None) -> None:
        import tiktoken

        data = (path or gpt2_tiktoken_path()).read_bytes()
        if hashlib.sha256(data).hexdigest() != GPT2_TIKTOKEN_SHA256:
            raise TokenizerError("gpt2.tiktoken does not match the r50k_base checksum")
        ranks = {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }
        self._enc = tiktoken.Encoding(
            name="gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
            special_tokens={EOT: self.eot_id}, explicit_n_vocab=GPT2_VOCAB,
        )

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(ids) for ids in self._enc.encode_ordinary_batch(list(texts))]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._enc.decode(list(ids)))


class TrainedBPE:
    """A byte-level BPE trained with `tokenizers`; the end-of-text token has id 0."""

    def __init__(self, tokenizer: Any, name: str) -> None:
        self._tok = tokenizer
        self.name = name
        self.vocab_size = int(tokenizer.get_vocab_size())
        self.eot_id = int(tokenizer.token_to_id(EOT))

    @classmethod
    def train(cls, texts: Sequence[str], vocab_size: int) -> TrainedBPE:
        """Train on `texts`. Deterministic: the trainer's merges depend only on pair counts
        (ties broken by the pair itself), not on thread scheduling."""
        from tokenizers import Tokenizer as HFTokenizer
        from tokenizers import decoders, models, pre_tokenizers, trainers

        tok = HFTokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=[EOT], show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), min_frequency=2,
        )
        tok.train_from_iterator(texts, trainer=trainer)
        return cls(tok, f"bpe{vocab_size}")

    @classmethod
    def load(cls, path: Path) -> TrainedBPE:
        from tokenizers import Tokenizer as HFTokenizer

        tok = HFTokenizer.from_file(str(path))
        return cls(tok, f"bpe{tok.get_vocab_size()}")

    def save(self, path: Path) -> None:
        self._tok.save(str(path))

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        # encode_batch_fast (tokenizers >= 0.20) skips offset tracking: the same ids, half
        # the CPU time.
        encode = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)
        return [list(e.ids) for e in encode(list(texts))]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids)))


def parse_tokenizer_name(name: str) -> int | None:
    """`gpt2` -> None (the GPT-2 BPE); `bpe2048` -> 2048 (a trained BPE of that size)."""
    if name == "gpt2":
        return None
    if name.startswith("bpe") and name[3:].isdigit() and 260 <= int(name[3:]) <= 65535:
        return int(name[3:])
    raise TokenizerError(f"unknown tokenizer {name!r}: use 'gpt2' or 'bpe<size>' (e.g. bpe2048)")
