"""What the score_log tool shows: the agent's view of each official score, nothing private."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("inspect_ai")

from rebench.harness.records import ScoreEntry
from rebench.inspect_ext.tools import agent_score_log


def _entry(index: int, raw: float, kind: str) -> ScoreEntry:
    return ScoreEntry(
        index=index, wall_time="2026-11-29T00:00:00+00:00", wall_s=1.0, working_s=2.5 * index,
        raw=raw, normalized=raw / 10, valid=math.isfinite(raw), kind=kind,
        message={"note": f"m{index}"}, details={"secret": "held-out loss 1.234"},
        snapshot=f"protected/snapshots/{index:04d}", prev_hash="0" * 64,
    )


ENTRIES = [_entry(0, 5.0, "initial"), _entry(1, math.nan, "agent"), _entry(2, 3.0, "agent")]


def test_visible_scores_are_shown_without_details() -> None:
    rows = agent_score_log(ENTRIES, visible=True)
    assert [r["kind"] for r in rows] == ["initial", "agent", "agent"]
    assert [r["raw"] for r in rows] == [5.0, None, 3.0]
    assert rows[2]["normalized"] == pytest.approx(0.3)
    assert rows[1]["valid"] is False and rows[2]["working_s"] == 5.0
    assert all("details" not in r and "snapshot" not in r for r in rows)


def test_hidden_scores_show_only_messages() -> None:
    rows = agent_score_log(ENTRIES, visible=False)
    assert all("raw" not in r and "normalized" not in r for r in rows)
    assert [r["message"] for r in rows] == [{"note": "m0"}, {"note": "m1"}, {"note": "m2"}]
