"""A Ray batch's durable state, so a restarted driver picks up where the last one stopped.

    runs/batches/<batch_id>/batch.json   what the batch is: attempts, isolation, retries
    runs/index.sqlite, table attempts    one row per attempt: state, tries, node, run id

Only the driver writes either. An attempt is `finished` or `failed` once its result has
landed in the runs root; every other state is resubmitted by `--resume`.
"""

from __future__ import annotations

import enum
import json
import secrets
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebench.harness.index import connect, index_path
from rebench.scale.attempt import DEFAULT_WORKSPACE_CAP_BYTES, ScaleError

SCHEMA = """
CREATE TABLE IF NOT EXISTS attempts (
    batch_id TEXT NOT NULL,
    key INTEGER NOT NULL,
    label TEXT NOT NULL,
    state TEXT NOT NULL,
    tries INTEGER NOT NULL,
    node TEXT NOT NULL,
    run_id TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    row TEXT NOT NULL,
    PRIMARY KEY (batch_id, key)
);
"""


class AttemptState(enum.Enum):
    QUEUED = "queued"  # submitted, waiting for resources
    RUNNING = "running"  # a node took it
    LOST = "lost"  # its node or worker died; it will be retried
    FINISHED = "finished"  # its run folder landed and the run finished
    FAILED = "failed"  # landed unfinished, refused, or out of retries

    @property
    def done(self) -> bool:
        return self in (AttemptState.FINISHED, AttemptState.FAILED)


@dataclass(frozen=True)
class AttemptJob:
    """What one attempt is: the fields of a batch job, as stored in batch.json."""

    env_id: str
    env_version: str
    profile: str
    agent: str
    seed: int
    budget_s: float | None
    gpus: int
    memory_gb: float

    def label(self) -> str:
        return f"{self.env_id}/{self.profile} {self.agent} seed={self.seed}"


@dataclass(frozen=True)
class AttemptRow:
    """Where an attempt stands. `history` has one line per try that did not land."""

    key: int
    label: str
    state: AttemptState = AttemptState.QUEUED
    tries: int = 0
    node: str = ""
    node_id: str = ""
    run_id: str = ""
    final_normalized: float | None = None
    resumed: bool = False
    submitted_at: float | None = None
    task_started_at: float | None = None
    first_event_at: float | None = None
    error: str = ""
    history: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["state"] = self.state.value
        data["history"] = list(self.history)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttemptRow:
        data = dict(data)
        data["state"] = AttemptState(data["state"])
        data["history"] = tuple(data.get("history", ()))
        return cls(**data)


@dataclass(frozen=True)
class BatchPlan:
    """batch.json: everything needed to run, or pick up, a batch."""

    batch_id: str
    created_at: str
    isolation: str
    retries: int
    cpus: float
    gpu_type: str | None
    jobs: tuple[AttemptJob, ...]
    workspace_cap_bytes: int = DEFAULT_WORKSPACE_CAP_BYTES
    source: str = ""
    in_flight: int | None = None  # attempts on the cluster at once (None: no cap)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["jobs"] = [asdict(j) for j in self.jobs]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchPlan:
        data = dict(data)
        data["jobs"] = tuple(AttemptJob(**j) for j in data["jobs"])
        return cls(**data)


def new_batch_id() -> str:
    return f"batch-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


class BatchStore:
    """batch.json and the attempts table of one batch under a runs root."""

    def __init__(self, root: Path, batch_id: str) -> None:
        if not batch_id or "/" in batch_id or batch_id.startswith("."):
            raise ScaleError(f"bad batch id {batch_id!r}")
        self.root = root
        self.batch_id = batch_id
        self.folder = root / "batches" / batch_id
        self.db = index_path(root)

    @classmethod
    def create(cls, root: Path, plan: BatchPlan) -> BatchStore:
        store = cls(root, plan.batch_id)
        store.folder.mkdir(parents=True, exist_ok=False)
        (store.folder / "batch.json").write_text(json.dumps(plan.to_json(), indent=2))
        for key, job in enumerate(plan.jobs):
            store.save(AttemptRow(key, job.label()))
        return store

    def plan(self) -> BatchPlan:
        path = self.folder / "batch.json"
        if not path.is_file():
            raise ScaleError(f"no batch {self.batch_id!r} under {self.root}")
        return BatchPlan.from_json(json.loads(path.read_text()))

    def save(self, row: AttemptRow) -> None:
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        with connect(self.db) as conn:
            conn.executescript(SCHEMA)
            conn.execute("INSERT OR REPLACE INTO attempts VALUES (?,?,?,?,?,?,?,?,?)",
                         (self.batch_id, row.key, row.label, row.state.value, row.tries,
                          row.node, row.run_id, now, json.dumps(row.to_json())))

    def rows(self) -> list[AttemptRow]:
        with connect(self.db) as conn:
            conn.executescript(SCHEMA)
            found = conn.execute("SELECT row FROM attempts WHERE batch_id = ? ORDER BY key",
                                 (self.batch_id,)).fetchall()
        return [AttemptRow.from_json(json.loads(r)) for (r,) in found]


def with_state(row: AttemptRow, state: AttemptState, **changes: Any) -> AttemptRow:
    return replace(row, state=state, **changes)
