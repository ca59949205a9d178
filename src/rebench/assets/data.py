"""Token splits as uint16 shards (nanoGPT's .bin layout): {train,val,test}.bin plus the
tokenizer and a manifest with sha256 checksums. The offline corpus is split with a prepare
secret and built into the caller's folder; a user's corpus (`--corpus`), whose held-out half
is not ours to hide, is imported once into <cache>/shared-assets/<key>/."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rebench.assets.corpus import SPLITS, corpus_fingerprint, offline_documents, split_documents
from rebench.assets.tokenizer import (
    GPT2_VOCAB,
    GPT2Tokenizer,
    Tokenizer,
    TrainedBPE,
    parse_tokenizer_name,
)
from rebench.core.errors import RebenchError
from rebench.core.hashing import file_sha256
from rebench.core.paths import cache_root

SHARED_DIR = "shared-assets"
RECIPE_VERSION = 2  # bump when cleaning, splitting or shard layout changes
MANIFEST = "manifest.json"

Progress = Callable[[str, float | None], None]


class AssetError(RebenchError):
    """Shared assets are missing, corrupt or were given in a form we cannot read."""


@dataclass(frozen=True)
class TokenSplits:
    """Where the token shards of one corpus and tokenizer live, and what they hold."""

    root: Path
    tokenizer: str
    vocab_size: int
    eot_id: int

    def path(self, split: str) -> Path:
        return self.root / f"{split}.bin"

    def tokens(self, split: str) -> np.memmap:
        """The split as a read-only uint16 memmap."""
        return np.memmap(self.path(split), dtype=np.uint16, mode="r")


def write_shard(ids: Iterator[list[int]] | list[list[int]], eot_id: int, path: Path) -> int:
    """Concatenate documents, each followed by the end-of-text token, as uint16."""
    flat: list[int] = []
    for doc in ids:
        flat.extend(doc)
        flat.append(eot_id)
    arr = np.asarray(flat, dtype=np.int64)
    if arr.size and (arr.min() < 0 or arr.max() > np.iinfo(np.uint16).max):
        raise AssetError("token ids do not fit in uint16")
    arr.astype("<u2").tofile(path)
    return int(arr.size)


@contextmanager
def _locked(key: str) -> Iterator[None]:
    """One builder per cache key across processes (prepares of different environments)."""
    lock_dir = cache_root() / SHARED_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    with (lock_dir / f".{key}.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _load_if_intact(root: Path) -> TokenSplits | None:
    manifest = root / MANIFEST
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text())
        for name, digest in data["files"].items():
            if file_sha256(root / name) != digest:
                return None
        return TokenSplits(root, data["tokenizer"], int(data["vocab_size"]), int(data["eot_id"]))
    except (OSError, KeyError, ValueError):
        return None


def _finish(tmp: Path, root: Path, record: dict[str, object]) -> TokenSplits:
    record["files"] = {p.name: file_sha256(p) for p in sorted(tmp.iterdir()) if p.is_file()}
    (tmp / MANIFEST).write_text(json.dumps(record, indent=2))
    if root.exists():
        shutil.rmtree(root)
    os.replace(tmp, root)
    splits = _load_if_intact(root)
    if splits is None:
        raise AssetError(f"{root}: shards failed verification right after writing")
    return splits


def offline_token_splits(
    tokenizer: str, key: bytes, out_dir: Path, val_fraction: float = 0.05,
    test_fraction: float = 0.05, progress: Progress | None = None,
) -> TokenSplits:
    """Build the offline corpus tokenized with `tokenizer` ('gpt2' or 'bpe<size>') into
    `out_dir` (train/val/test .bin, tokenizer.json for a BPE, a manifest). Which works are
    held out follows from `key` (a prepare secret: see `rebench.assets.secret`), so nothing is
    shared between prepares; a BPE is trained on the train split only."""
    say = progress or (lambda message, fraction: None)
    say("reading and cleaning the offline corpus", 0.02)
    documents = offline_documents()
    splits = split_documents(documents, key, val_fraction, test_fraction)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}-"))
    bpe_size = parse_tokenizer_name(tokenizer)
    tok: Tokenizer
    if bpe_size is None:
        tok = GPT2Tokenizer()
    else:
        say(f"training a {bpe_size}-token BPE on the train split", 0.05)
        bpe = TrainedBPE.train([d.text for d in splits["train"]], bpe_size)
        bpe.save(tmp / "tokenizer.json")
        tok = bpe
    say("tokenizing the train, validation and test splits", 0.1)
    counts = {}
    for split in SPLITS:
        ids = tok.encode_batch([d.text for d in splits[split]])
        counts[split] = write_shard(ids, tok.eot_id, tmp / f"{split}.bin")
    record: dict[str, object] = {
        "recipe_version": RECIPE_VERSION, "corpus": "offline", "tokenizer": tokenizer,
        "vocab_size": tok.vocab_size, "eot_id": tok.eot_id,
        "corpus_sha256": corpus_fingerprint(documents), "tokens": counts,
        "groups": {s: sorted({f"{d.source}:{d.group}" for d in splits[s]}) for s in SPLITS},
    }
    return _finish(tmp, out_dir, record)


def user_token_splits(
    path: Path, max_train_tokens: int, progress: Progress | None = None
) -> TokenSplits:
    """A user's GPT-2-tokenized uint16 corpus (nanoGPT layout, e.g. OpenWebText): a folder
    with train.bin and val.bin (val.bin is halved into validation and held-out test), or
    one .bin file (its last 2% become validation and test). At most `max_train_tokens`
    training tokens are kept so that workspaces stay small."""
    say = progress or (lambda message, fraction: None)
    path = path.expanduser().resolve()
    if path.is_dir():
        train_src, val_src = path / "train.bin", path / "val.bin"
        if not train_src.is_file() or not val_src.is_file():
            raise AssetError(f"{path}: a corpus folder needs train.bin and val.bin")
        train: np.ndarray = np.memmap(train_src, dtype=np.uint16, mode="r")
        held: np.ndarray = np.memmap(val_src, dtype=np.uint16, mode="r")
    elif path.is_file():
        allt = np.memmap(path, dtype=np.uint16, mode="r")
        cut = int(len(allt) * 0.98)
        train, held = allt[:cut], allt[cut:]
    else:
        raise AssetError(f"corpus {path} does not exist")
    stat = path.stat()
    key = hashlib.sha256(f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{max_train_tokens}".encode())
    key_s = f"user-v{RECIPE_VERSION}-{key.hexdigest()[:16]}"
    root = cache_root() / SHARED_DIR / key_s
    with _locked(key_s):
        cached = _load_if_intact(root)
        if cached is not None:
            return cached
        say(f"importing the user corpus {path}", 0.05)
        half = len(held) // 2
        parts = {"train": train[:max_train_tokens], "val": held[:half], "test": held[half:]}
        if min(len(p) for p in parts.values()) < 10_000:
            raise AssetError(f"{path}: too few tokens for train, validation and test splits")
        tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{key_s}-"))
        for split, arr in parts.items():
            if int(arr.max()) >= GPT2_VOCAB:
                raise AssetError(f"{path}: token ids >= {GPT2_VOCAB}; expected GPT-2 tokens")
            np.asarray(arr, dtype="<u2").tofile(tmp / f"{split}.bin")
        record: dict[str, object] = {
            "recipe_version": RECIPE_VERSION, "corpus": str(path), "tokenizer": "gpt2",
            "vocab_size": GPT2_VOCAB, "eot_id": GPT2_VOCAB - 1,
            "tokens": {s: len(a) for s, a in parts.items()},
        }
        return _finish(tmp, root, record)


def token_splits(
    tokenizer: str, corpus: str | None, max_user_tokens: int, key: bytes, out_dir: Path,
    progress: Progress | None = None,
) -> TokenSplits:
    """The user's own corpus (`--corpus PATH`, GPT-2 tokens; cached in the shared cache) when
    given, else the offline corpus split with `key` and built into `out_dir`."""
    if corpus:
        return user_token_splits(Path(corpus), max_user_tokens, progress)
    return offline_token_splits(tokenizer, key, out_dir, progress=progress)
