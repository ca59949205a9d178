"""The SQLite run index: one row per run, for listing and analysis.

The run directory is the source of truth; the index is rebuilt from it on demand
(`reindex`), so a lost or stale index loses nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rebench.core.errors import RebenchError
from rebench.harness.records import RunRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    run_dir TEXT NOT NULL,
    env_id TEXT NOT NULL,
    env_version TEXT NOT NULL,
    profile TEXT NOT NULL,
    agent TEXT NOT NULL,
    seed INTEGER NOT NULL,
    budget_s REAL NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    finished_at TEXT,
    final_normalized REAL,
    record TEXT NOT NULL
);
"""


class RunsRootError(RebenchError):
    """The runs folder ($REBENCH_RUNS or ./runs) cannot be created or written."""


def index_path(runs_root: Path) -> Path:
    return runs_root / "index.sqlite"


def ensure_runs_root(runs_root: Path) -> Path:
    """Create the runs folder if needed and check it is a writable folder; RunsRootError
    (one line, naming $REBENCH_RUNS) otherwise."""
    hint = "set REBENCH_RUNS to a writable folder"
    for parent in (runs_root, *runs_root.parents):
        if parent.exists() and not parent.is_dir():
            raise RunsRootError(f"runs folder {runs_root}: {parent} is a file, not a folder; "
                                f"{hint}")
    try:
        runs_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunsRootError(f"cannot create the runs folder {runs_root}: "
                            f"{exc.strerror or exc}; {hint}") from None
    if not os.access(runs_root, os.W_OK | os.X_OK):
        raise RunsRootError(f"the runs folder {runs_root} is not writable; {hint}")
    return runs_root


@contextmanager
def connect(db: Path) -> Iterator[sqlite3.Connection]:
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db, timeout=30)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SCHEMA)
        yield conn
        conn.commit()
    finally:
        conn.close()


def upsert_run(db: Path, record: RunRecord, run_dir: Path) -> None:
    with connect(db) as conn:
        conn.execute(
            "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                record.run_id, str(run_dir), record.env_id, record.env_version, record.profile,
                record.agent, record.seed, record.budget_s, record.status.value,
                record.created_at, record.finished_at, record.final_normalized,
                json.dumps(record.to_json()),
            ),
        )


def list_runs(db: Path) -> list[tuple[RunRecord, Path]]:
    """Every indexed run, newest first, with its directory."""
    if not db.is_file():
        return []
    with connect(db) as conn:
        rows = conn.execute(
            "SELECT record, run_dir FROM runs ORDER BY created_at DESC, run_id DESC"
        ).fetchall()
    return [(RunRecord.from_json(json.loads(rec)), Path(run_dir)) for rec, run_dir in rows]


def reindex(runs_root: Path) -> int:
    """Rebuild the index from the run directories; returns how many runs it holds."""
    db = index_path(runs_root)
    count = 0
    for run_json in sorted(runs_root.glob("*/run.json")):
        upsert_run(db, RunRecord.load(run_json), run_json.parent)
        count += 1
    return count
