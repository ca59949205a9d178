"""Fixtures for the integrity tests: the stand-in scorer patched into the harness."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from integrity_support import stand_in_score


@pytest.fixture
def stand_in_scorer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr("rebench.harness.run.official_score", stand_in_score)
    yield
