"""Fixtures for the integrity tests: a cache of their own (stand-in assets stay out of the
other tests' cache), and the stand-in scorer (and starting build) patched into the
harness."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from integrity_support import SHARED_CACHE_VAR, stand_in_score, stand_in_starting_build


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
    """Scores from `# raw=` lines, and no starting build that trains (integrity_support)."""
    monkeypatch.setattr("rebench.harness.run.official_score", stand_in_score)
    monkeypatch.setattr("rebench.harness.run.apply_starting_recipe", stand_in_starting_build)
    yield
