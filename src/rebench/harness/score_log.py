"""The append-only, keyed, hash-chained, fsynced score log (protected/score_log.jsonl).

Each line carries `hash` = HMAC-SHA256 over its canonical JSON (which includes the previous
line's hash), keyed with the run's key: HMAC(master key, run id), the master key a random
secret in `key_file()` that no sandbox mounts. Without the key nobody can make a log that
verifies, so a forged, rewritten, reordered or spliced log fails `rebench verify`; the run
record keeps the count and last hash, so a truncated log fails it too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

from rebench.core.errors import ScoreLogError
from rebench.core.paths import key_file
from rebench.harness.records import ScoreEntry

GENESIS = "0" * 64
_KEY_BYTES = 32


def master_key() -> bytes:
    """The installation's secret (made on first use, mode 0600)."""
    path = key_file()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first
            return path.read_bytes()
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(_KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        data = path.read_bytes()
    if len(data) < _KEY_BYTES:
        raise ScoreLogError(f"the score-log key {path} is damaged (too short)")
    return data


def run_key(run_id: str) -> bytes:
    """The key of one run's log."""
    return hmac.new(master_key(), f"rebench-score-log:{run_id}".encode(), "sha256").digest()


def log_key(path: Path) -> bytes:
    """The key of the log at runs/<run_id>/protected/score_log.jsonl."""
    return run_key(path.resolve().parent.parent.name)


def entry_hash(payload: dict[str, object], key: bytes) -> str:
    """HMAC-SHA256 over the canonical JSON of a line without its own hash (it includes
    prev_hash)."""
    body = {k: v for k, v in payload.items() if k != "hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def read_log(path: Path, verify: bool = True) -> list[ScoreEntry]:
    """All entries; with `verify`, raise ScoreLogError if a line was not written by this
    installation's harness for this run, or the chain is broken.

    A torn last line (the harness died mid-write, before fsync returned) is ignored: such a
    score was never shown to the agent, since the agent sees a score only after the fsync.
    """
    if not path.is_file():
        return []
    lines = path.read_bytes().split(b"\n")
    entries: list[ScoreEntry] = []
    prev = GENESIS
    key = log_key(path) if verify else b""
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
            if not hmac.compare_digest(str(payload.get("hash")), entry_hash(payload, key)):
                raise ScoreLogError(f"{path}: line {lineno} was altered or forged "
                                    "(its keyed hash does not verify)")
        prev = str(payload.get("hash", ""))
        try:
            entries.append(ScoreEntry.from_json(payload))
        except (ValueError, TypeError) as exc:  # a field missing, unknown or of no kind
            raise ScoreLogError(f"{path}: line {lineno} is not a score entry: {exc}") from None
    return entries


def read_hashes(path: Path) -> list[str]:
    """The `hash` of every complete line (call after `read_log` verified the log)."""
    hashes = []
    for line in path.read_bytes().split(b"\n") if path.is_file() else []:
        if line.strip():
            try:
                hashes.append(str(json.loads(line)["hash"]))
            except (json.JSONDecodeError, KeyError):
                break
    return hashes


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
    payload["hash"] = entry_hash(payload, log_key(path))
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
