"""`rebench list` without importing every environment (two of them import torch, which
takes seconds on a busy machine): the listed fields are kept in the cache, keyed by the
size and modification time of every Python file of rebench and of the environments, so any
edit, install or new environment makes it read the specs again."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

LISTING_FILE = "environment-listing.json"
FIELDS = ("id", "version", "title", "direction", "profiles")


def _key(roots: list[Path]) -> str:
    """A digest of (path, size, mtime) of every .py file under `roots` and of Python's
    version: what the spec values can depend on, short of the installed libraries."""
    digest = hashlib.sha256(sys.version.encode())
    for root in roots:
        digest.update(f"root {root}\n".encode())
        for path in sorted(root.rglob("*.py")):
            try:
                stat = path.stat()
            except OSError:
                continue
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _read_specs() -> list[dict[str, Any]]:
    from rebench.core.discovery import all_specs

    return [{"id": s.id, "version": s.version, "title": s.title,
             "direction": s.direction.value, "profiles": sorted(s.profiles)}
            for s in all_specs()]


def environment_listing() -> list[dict[str, Any]]:
    """id, version, title, direction and profiles of every environment; from the cache when
    no Python file changed since it was written, else from the specs (and cached)."""
    import rebench
    from rebench.core.discovery import environment_roots
    from rebench.core.paths import cache_root

    roots = [Path(rebench.__file__).resolve().parent,
             *(r for r in environment_roots() if not r.is_relative_to(
                 Path(rebench.__file__).resolve().parent))]
    key = _key(roots)
    path = cache_root() / LISTING_FILE
    try:
        cached = json.loads(path.read_text())
        if cached.get("key") == key:
            return list(cached["environments"])
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    listing = _read_specs()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": key, "environments": listing}))
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs the next listing its time
    return listing
