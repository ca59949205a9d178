"""Factories for small synthetic run directories and CSVs (written with the real record types)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from rebench.core.normalize import Anchors, AnchorSource
from rebench.core.spec import Aggregation
from rebench.harness.records import RunCost, RunExtra, RunRecord, RunStatus, RunUsage, ScoreEntry
from rebench.harness.score_log import append_entry, last_hash
from rebench.sandbox import Isolation

# (working_s, normalized or NaN for an invalid score)
Events = Sequence[tuple[float, float]]
WriteRun = Callable[..., Path]


def write_run(
    root: Path, run_id: str, env_id: str, agent: str, budget_s: float, events: Events,
    aggregation: str = "best", status: RunStatus = RunStatus.FINISHED,
    working_s_used: float | None = None, extra: dict[str, Any] | None = None,
    env_version: str = "1", profile: str = "cpu", hardware: str = "test",
    usage: RunUsage | None = None, cost: dict[str, Any] | None = None,
) -> Path:
    """One runs/<run_id>/ with run.json and a hash-chained score log. The working time used
    defaults to the last event's (the final score is logged at the end of the run)."""
    run_dir = root / run_id
    (run_dir / "protected").mkdir(parents=True)
    record = RunRecord(
        run_id=run_id, env_id=env_id, env_version=env_version, profile=profile, agent=agent,
        seed=0, budget_s=budget_s, hardware=hardware,
        anchors=Anchors(0.0, 1.0, AnchorSource.PROFILE_DEFAULT, hardware),
        isolation=Isolation.LOCAL, created_at="2026-11-29T00:00:00+00:00", status=status,
        aggregation=Aggregation(aggregation),
        working_s_used=(max((w for w, _ in events), default=0.0) if working_s_used is None
                        else working_s_used),
        extra=RunExtra.from_json(extra or {}), usage=usage,
        cost=None if cost is None else RunCost.from_json(cost),
    )
    (run_dir / "run.json").write_text(json.dumps(record.to_json()))
    log = run_dir / "protected" / "score_log.jsonl"
    for i, (working_s, norm) in enumerate(events):
        kind = "initial" if i == 0 else ("final" if i == len(events) - 1 else "agent")
        valid = math.isfinite(norm)
        append_entry(log, ScoreEntry(
            index=i, wall_time="2026-11-29T00:00:00+00:00", wall_s=working_s,
            working_s=working_s, raw=norm if valid else math.nan, normalized=norm, valid=valid,
            kind=kind, message={}, details={}, snapshot=f"protected/snapshots/{i:04d}",
            prev_hash=last_hash(log),
        ))
    return run_dir


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    return root


@pytest.fixture
def make_run(runs_dir: Path) -> WriteRun:
    def factory(run_id: str, env_id: str, agent: str, budget_s: float, events: Events,
                aggregation: str = "best", status: RunStatus = RunStatus.FINISHED,
                **kwargs: Any) -> Path:
        return write_run(runs_dir, run_id, env_id, agent, budget_s, events, aggregation, status,
                         **kwargs)

    return factory


def write_csv_rows(path: Path, rows: Sequence[dict[str, object]]) -> Path:
    header = ["env", "agent", "run_id", "time_limit_s", "working_s", "normalized"]
    extra = sorted({k for r in rows for k in r} - set(header))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header + extra)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def make_csv(tmp_path: Path) -> Callable[[Sequence[dict[str, object]]], Path]:
    def factory(rows: Sequence[dict[str, object]]) -> Path:
        return write_csv_rows(tmp_path / "events.csv", rows)

    return factory
