"""Run records on disk: run.json and the lines of the score log."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


class RunStatus(enum.Enum):
    CREATED = "created"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"


@dataclass
class RunRecord:
    """The contents of runs/<run_id>/run.json."""

    run_id: str
    env_id: str
    env_version: str
    profile: str
    agent: str
    seed: int
    budget_s: float
    hardware: str
    anchors: dict[str, Any]
    isolation: str
    created_at: str
    status: RunStatus = RunStatus.CREATED
    aggregation: str = "best"
    direction: str = "lower"
    finished_at: str | None = None
    working_s_used: float = 0.0
    final_normalized: float | None = None
    note: str = ""
    # Count and last keyed hash of the score log: `verify` detects a truncated log.
    score_count: int = 0
    score_head: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        data = dict(data)
        data["status"] = RunStatus(data.get("status", "created"))
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def load(cls, path: Path) -> RunRecord:
        return cls.from_json(json.loads(path.read_text()))


@dataclass(frozen=True)
class ScoreEntry:
    """One line of protected/score_log.jsonl: one official score."""

    index: int
    wall_time: str  # ISO 8601 UTC
    wall_s: float  # seconds since the run started, wall clock
    working_s: float  # working seconds elapsed when the score was requested
    raw: float  # NaN when invalid
    normalized: float  # NaN when invalid
    valid: bool
    kind: str  # "initial", "agent", "final"
    message: dict[str, Any]
    details: dict[str, Any]
    snapshot: str  # path relative to the run directory
    prev_hash: str

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        # JSON has no NaN: invalid scores are null.
        data["raw"] = self.raw if math.isfinite(self.raw) else None
        data["normalized"] = self.normalized if math.isfinite(self.normalized) else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScoreEntry:
        data = dict(data)
        data.pop("hash", None)
        data["raw"] = math.nan if data.get("raw") is None else float(data["raw"])
        data["normalized"] = (
            math.nan if data.get("normalized") is None else float(data["normalized"])
        )
        return cls(**data)
