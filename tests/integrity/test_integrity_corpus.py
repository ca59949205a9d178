"""The integrity corpus's own machinery (benchmarks/integrity_measure.py): the honest
sessions it runs on every environment, and the half a hack in a session falls in. The
measurement itself is a benchmark (docs/benchmarks/integrity.md), not a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from honest_replays import SESSIONS
from integrity_support import MEASURED_ENVIRONMENTS, SCORE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def measure() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "integrity_measure", ROOT / "benchmarks" / "integrity_measure.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("integrity_measure", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("env_id", MEASURED_ENVIRONMENTS)
def test_every_session_hands_in_a_new_solution_and_scores(env_id: str) -> None:
    """Each honest session writes files, scores at least once and ends on a score; where
    the snapshot takes notes.py, its scores are scripted (a `# raw=` line)."""
    for name, session in SESSIONS.items():
        actions = session(env_id)
        assert actions[-1] == SCORE, name
        writes = [a for a in actions if a["action"] == "write_file"]
        assert writes, name
        notes = {a["path"] for a in writes if a["path"].startswith("notes.")}
        assert len(notes) == 1, (name, notes)


def test_a_hack_in_a_session_falls_in_its_bare_hacks_half(measure: ModuleType) -> None:
    cases = [f"{env}/{kind}/{name}" for env in MEASURED_ENVIRONMENTS
             for kind in ("cheat", "degenerate") for name in ("a", "b.py", "c d", "e/f")]
    for case in cases:
        env_id, rest = case.split("/", 1)
        assert measure.half_of(f"{env_id}/session/{rest}") == measure.half_of(case)
    assert {measure.half_of(c) for c in cases} == set(measure.HALVES)
