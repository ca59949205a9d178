"""The run lifecycle: create a run directory, score at t=0, let the agent act, score at the end.

    runs/<run_id>/
      run.json          RunRecord
      workspace/        the agent's files
      protected/        snapshots/<n>/ and score_log.jsonl (never visible to the agent)
"""

from __future__ import annotations

import json
import math
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rebench.core.calibration import resolve_anchors
from rebench.core.discovery import load_spec
from rebench.core.errors import RunError, ScoreLogError
from rebench.core.hardware import fingerprint
from rebench.core.normalize import Anchors, aggregate, normalize
from rebench.core.paths import runs_root
from rebench.core.score import ScoreResult
from rebench.core.spec import Aggregation, EnvironmentSpec, Profile
from rebench.harness import index
from rebench.harness.clock import WorkingClock
from rebench.harness.records import RunRecord, ScoreEntry
from rebench.harness.score_log import append_entry, last_hash, read_log
from rebench.harness.scoring import (
    agent_visible,
    official_score,
    snapshot_digest,
    snapshot_solution,
)
from rebench.harness.workspace import apply_starting_recipe, populate_workspace
from rebench.sandbox import Isolation, Sandbox
from rebench.scoring.contract import ScoreKind


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_run_id(env_id: str, agent: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    safe_agent = "".join(c if c.isalnum() else "-" for c in agent)[:24]
    return f"{env_id}-{safe_agent}-{stamp}-{secrets.token_hex(3)}"


@dataclass
class Run:
    """A run directory and its record. Create with `create_run`, reopen with `open_run`."""

    run_dir: Path
    record: RunRecord
    spec: EnvironmentSpec
    profile: Profile
    # Working seconds already used before this process took over (resume).
    working_offset_s: float = 0.0
    # The working clock (harness/clock.py): frozen until a Session opens, so setup and the
    # t=0 score are not the agent's time; resume replaces it with one continued from disk.
    clock: WorkingClock = field(init=False, repr=False)
    # One official score at a time: indices and the hash chain stay consistent when the
    # background t=0 score, the agent's score and the final score overlap.
    _score_lock: threading.Lock = field(default_factory=threading.Lock, init=False,
                                        repr=False)
    # Held while the run is being finished, so it is finished once (an Inspect agent's
    # scorer finishes its own run before the driver would).
    finish_lock: threading.Lock = field(default_factory=threading.Lock, init=False,
                                        repr=False)
    # The agent's sandbox while a session is open: frozen during every official score the
    # agent asks for, so nothing of the agent runs (or holds a GPU) while it is scored.
    agent_sandbox: Sandbox | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.clock = WorkingClock(self.record.budget_s, self.working_offset_s, started=False)

    @property
    def workspace(self) -> Path:
        return self.run_dir / "workspace"

    @property
    def protected(self) -> Path:
        return self.run_dir / "protected"

    @property
    def score_log_path(self) -> Path:
        return self.protected / "score_log.jsonl"

    @property
    def isolation(self) -> Isolation:
        return Isolation(self.record.isolation)

    @property
    def anchors(self) -> Anchors:
        return Anchors.from_json(self.record.anchors)

    def working_s(self) -> float:
        return self.clock.working_s()

    def time_left_s(self) -> float:
        return self.clock.time_left_s()

    def save(self) -> None:
        """Write run.json atomically and update the index."""
        path = self.run_dir / "run.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.record.to_json(), indent=2))
        tmp.replace(path)
        index.upsert_run(index.index_path(self.run_dir.parent), self.record, self.run_dir)

    def entries(self) -> list[ScoreEntry]:
        return read_log(self.score_log_path)

    def score(self, kind: ScoreKind,
              on_snapshot: Callable[[], None] | None = None) -> ScoreEntry:
        """One official score of the workspace, logged (fsynced) before it is returned.

        `on_snapshot` is called once, as soon as the solution is copied (the driver starts
        the agent then, while the t=0 score runs). The score is logged at the working time
        it was asked for: a wait behind another score (the t=0 score, which the harness
        runs) pauses the working clock, so the harness's own slowness is never the
        agent's time, and a score asked for before the deadline is logged before it."""
        called = False

        def notify() -> None:
            nonlocal called
            if on_snapshot is not None and not called:
                called = True
                on_snapshot()

        requested = self.working_s()
        waited = 0.0
        if not self._score_lock.acquire(blocking=False):
            began = time.monotonic()
            with self.clock.paused():  # the harness's wait, not the agent's
                self._score_lock.acquire()
            waited = time.monotonic() - began
        try:
            return self._score_locked(kind, notify, requested, waited)
        finally:
            self._score_lock.release()
            notify()  # also when snapshotting failed: nobody may wait forever

    def _score_locked(self, kind: ScoreKind, notify: Callable[[], None], requested: float,
                      waited: float) -> ScoreEntry:
        entries = self.entries()
        n = len(entries)
        snapshot_rel = f"protected/snapshots/{n:04d}"
        # The time it was asked for; never before a score already logged (the log's
        # working times only go forward).
        working = max(requested, entries[-1].working_s if entries else 0.0)
        result, digest = self._snapshot_and_score(kind, self.run_dir / snapshot_rel, notify)
        norm = normalize(result.raw, self.anchors, self.record.direction)
        details = {**result.details, "snapshot_sha256": digest}
        if waited > 0.0:
            details["harness_wait_s"] = round(waited, 3)
        start_digest = entries[0].details.get("snapshot_sha256") if entries else digest
        if result.valid and digest is not None and digest == start_digest:
            # The starting solution itself (or a workspace the agent left as it was):
            # normalized 0 by definition, so timing noise cannot lift a do-nothing agent.
            norm = 0.0
            details["unchanged_from_start"] = True
        entry = ScoreEntry(
            index=n,
            wall_time=now_iso(),
            wall_s=round(self.clock.wall_s(), 3),
            working_s=round(working, 3),
            raw=result.raw,
            normalized=norm,
            valid=result.valid,
            kind=kind.value,
            message=result.message,
            details=details,
            snapshot=snapshot_rel,
            prev_hash=last_hash(self.score_log_path),
        )
        try:
            head = append_entry(self.score_log_path, entry)
        except OSError as exc:  # disk full: a clear error; earlier lines are intact
            raise ScoreLogError(f"cannot write the score log {self.score_log_path}: {exc}; "
                                "the run can be resumed once there is space") from exc
        self.record.score_count, self.record.score_head = n + 1, head
        self.save()
        return entry

    def _snapshot_and_score(self, kind: ScoreKind, snapshot: Path,
                            notify: Callable[[], None]) -> tuple[ScoreResult, str | None]:
        """Snapshot the workspace with the agent's processes frozen, and score it (frozen
        still, so nothing of the agent competes with the scorer). The t=0 score freezes
        nothing: the agent starts once its snapshot exists. ScoringHarnessError passes up."""
        sandbox = self.agent_sandbox if kind is not ScoreKind.INITIAL else None
        if sandbox is not None:
            sandbox.freeze()
        try:
            try:
                snapshot_solution(self.spec, self.workspace, snapshot)
            except (OSError, ValueError) as exc:  # vanished workspace, oversized snapshot
                notify()
                failed = ScoreResult.invalid("snapshot", error=f"could not snapshot: {exc}")
                return agent_visible(self.spec, failed), None
            notify()
            digest = snapshot_digest(snapshot)
            result = official_score(self.spec, self.profile, snapshot, self.isolation,
                                    kind=kind)
            return result, digest
        finally:
            if sandbox is not None:
                sandbox.thaw()

    def aggregate_normalized(self) -> float:
        return aggregate(
            [e.normalized for e in self.entries()], Aggregation(self.record.aggregation)
        )


def create_run(
    env_id: str,
    profile_name: str,
    agent: str,
    budget_s: float | None,
    isolation: Isolation,
    seed: int = 0,
    root: Path | None = None,
) -> Run:
    """Make the run directory, copy in the starting files and assets, record anchors."""
    spec = load_spec(env_id)
    profile = spec.profile(profile_name)
    budget = profile.default_budget_s if budget_s is None else budget_s
    if not math.isfinite(budget) or budget <= 0:
        raise RunError(f"budget must be a positive number of seconds, got {budget}")
    root = root or runs_root()
    run_id = new_run_id(env_id, agent)
    run_dir = root / run_id
    (run_dir / "protected" / "snapshots").mkdir(parents=True)
    record = RunRecord(
        run_id=run_id,
        env_id=spec.id,
        env_version=spec.version,
        profile=profile.name,
        agent=agent,
        seed=seed,
        budget_s=budget,
        hardware=fingerprint(profile.gpus),
        anchors=resolve_anchors(spec, profile).to_json(),
        isolation=isolation.value,
        created_at=now_iso(),
        aggregation=spec.aggregation.value,
        direction=spec.direction,
    )
    run = Run(run_dir, record, spec, profile)
    try:
        populate_workspace(spec, profile, run.workspace)
        apply_starting_recipe(spec, profile, run.workspace, isolation)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)  # a failed start leaves no run behind
        raise
    run.save()
    return run


def open_run(run_ref: str | Path, root: Path | None = None) -> Run:
    """Reopen an existing run by id or directory."""
    root = root or runs_root()
    run_dir = Path(run_ref) if Path(run_ref).is_dir() else root / str(run_ref)
    if not (run_dir / "run.json").is_file():
        raise RunError(f"no run {run_ref!r} under {root}")
    record = RunRecord.load(run_dir / "run.json")
    spec = load_spec(record.env_id)
    if spec.version != record.env_version:
        raise RunError(
            f"run {record.run_id} used {spec.id} version {record.env_version}, "
            f"installed is {spec.version}"
        )
    return Run(run_dir, record, spec, spec.profile(record.profile),
               working_offset_s=record.working_s_used)
