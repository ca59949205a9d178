"""The append-only, hash-chained, fsynced score log (protected/score_log.jsonl)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from rebench.core.errors import ScoreLogError
from rebench.harness.records import ScoreEntry

GENESIS = "0" * 64


def entry_hash(payload: dict[str, object]) -> str:
    """sha256 over the canonical JSON of a line without its own hash (it includes prev_hash)."""
    body = {k: v for k, v in payload.items() if k != "hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def read_log(path: Path, verify: bool = True) -> list[ScoreEntry]:
    """All entries; with `verify`, raise ScoreLogError if the chain is broken.

    A torn last line (the harness died mid-write, before fsync returned) is ignored: such a
    score was never shown to the agent, since the agent sees a score only after the fsync.
    """
    if not path.is_file():
        return []
    lines = path.read_bytes().split(b"\n")
    entries: list[ScoreEntry] = []
    prev = GENESIS
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            payload = json.loads(line)
        except json.JSONDecodeError:
            if lineno >= len(lines) - 1:  # torn final line
                break
            raise ScoreLogError(f"{path}: line {lineno} is not JSON") from None
        if verify:
            if payload.get("prev_hash") != prev:
                raise ScoreLogError(f"{path}: line {lineno} does not chain to the line before")
            if payload.get("hash") != entry_hash(payload):
                raise ScoreLogError(f"{path}: line {lineno} was altered (hash mismatch)")
        prev = str(payload.get("hash", ""))
        entries.append(ScoreEntry.from_json(payload))
    return entries


def last_hash(path: Path) -> str:
    if not path.is_file():
        return GENESIS
    last = GENESIS
    for line in path.read_bytes().split(b"\n"):
        if line.strip():
            try:
                last = json.loads(line)["hash"]
            except (json.JSONDecodeError, KeyError):
                break
    return last


def append_entry(path: Path, entry: ScoreEntry) -> str:
    """Append one entry and fsync file and folder before returning its hash.

    Raises OSError (e.g. disk full) without leaving a partial line the reader would trust.
    """
    payload = entry.to_json()
    if payload["prev_hash"] != last_hash(path):
        raise ScoreLogError(f"{path}: entry does not chain to the last line")
    payload["hash"] = entry_hash(payload)
    data = (json.dumps(payload, sort_keys=True, allow_nan=False) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    size_before = path.stat().st_size if path.exists() else 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to {path}")
            os.fsync(fd)
        except OSError:
            os.ftruncate(fd, size_before)  # drop the partial line; earlier lines stay
            raise
    finally:
        os.close(fd)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return str(payload["hash"])
