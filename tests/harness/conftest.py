"""Fixtures for harness tests: a prepared environment, a fast fake scorer, the isolation."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from rebench.core.discovery import environment_ids, load_spec
from rebench.core.score import ScoreResult
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available

ENV_ID = "triton_cumsum"  # its cpu profile prepares instantly and scores in seconds


def fake_official_score(spec: object, profile: object, snapshot_dir: Path,
                        isolation: object, timeout_s: float | None = None,
                        kind: object = None) -> ScoreResult:
    """A scorer that takes no time: raw = lines of solution.py / 100 (NaN if missing)."""
    del spec, profile, isolation, timeout_s, kind
    solution = snapshot_dir / "solution.py"
    if not solution.is_file():
        return ScoreResult.invalid("no solution.py")
    lines = len(solution.read_text().splitlines())
    return ScoreResult(raw=lines / 100, message={"lines": lines})


@pytest.fixture(scope="session")
def prepared_env() -> str:
    if ENV_ID not in environment_ids():
        pytest.skip(f"{ENV_ID} is not installed")
    from rebench.harness.prepare import prepare_environment

    spec = load_spec(ENV_ID)
    prepare_environment(spec, spec.profile("cpu"))
    return ENV_ID


@pytest.fixture
def fake_scorer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr("rebench.harness.run.official_score", fake_official_score)
    yield


@pytest.fixture
def isolation() -> Isolation:
    return Isolation.BWRAP if bwrap_available() else Isolation.LOCAL


def is_nan(x: float | None) -> bool:
    return x is None or math.isnan(x)
