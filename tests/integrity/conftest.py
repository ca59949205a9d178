"""Fixtures for the integrity tests: a cache of their own (stand-in assets stay out of the
other tests' cache), and the stand-in scorer patched into the harness."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from integrity_support import SHARED_CACHE_VAR, stand_in_score


@pytest.fixture(autouse=True)
def integrity_cache(rebench_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """REBENCH_CACHE -> the integrity tests' own cache; assets prepared for real are made
    in the session's shared cache and linked in (tests/integrity/integrity_support.py)."""
    own = rebench_dirs / "integrity-cache"
    own.mkdir(exist_ok=True)
    monkeypatch.setenv(SHARED_CACHE_VAR, os.environ["REBENCH_CACHE"])
    monkeypatch.setenv("REBENCH_CACHE", str(own))
    yield own


@pytest.fixture
def stand_in_scorer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr("rebench.harness.run.official_score", stand_in_score)
    yield
