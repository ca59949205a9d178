"""A run's official scorer: one official score at a time, of a snapshot taken with the
agent's processes frozen, scored in a fresh trusted process (harness/scoring.py),
normalized against the run's anchors and appended (fsynced, hash-chained) to the score log.

It knows the run only through what scoring needs: the run's folder, spec, profile,
isolation, anchors and direction, and the run's working clock (a wait behind another
score is the harness's time, so the clock is paused meanwhile). What a logged score
changes in the run's record (the log's count and last hash) it hands back through
`on_logged`; the run owns its record (harness/run.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from rebench.core.errors import ScoreLogError
from rebench.core.normalize import Anchors, normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import Direction, EnvironmentSpec, Profile
from rebench.harness.clock import WorkingClock
from rebench.harness.records import ScoreEntry
from rebench.harness.score_log import append_entry, last_hash, read_log
from rebench.harness.scoring import agent_visible, snapshot_digest, snapshot_solution
from rebench.sandbox import Isolation, Sandbox
from rebench.scoring.contract import ScoreKind


class ScoreFn(Protocol):
    """How a snapshot is scored: harness/scoring.py official_score (tests stand in)."""

    def __call__(self, spec: EnvironmentSpec, profile: Profile, snapshot_dir: Path,
                 isolation: Isolation, /, *, kind: ScoreKind) -> ScoreResult: ...


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class ScoringTarget:
    """What the official scorer scores and how it normalizes: the run's folder (its
    workspace, snapshots and score log), the environment and profile, the isolation of the
    scorer's untrusted children, the anchors and the direction."""

    run_dir: Path
    spec: EnvironmentSpec
    profile: Profile
    isolation: Isolation
    anchors: Anchors
    direction: Direction

    @property
    def workspace(self) -> Path:
        return self.run_dir / "workspace"

    @property
    def score_log_path(self) -> Path:
        return self.run_dir / "protected" / "score_log.jsonl"


class OfficialScorer:
    """The official scores of one run. `score_fn` scores a snapshot in the trusted process
    (harness/scoring.py official_score; tests stand in for it); `on_logged(count, head)` is
    called under the scorer's lock once an entry is in the log."""

    def __init__(self, target: ScoringTarget, clock: WorkingClock, *, score_fn: ScoreFn,
                 on_logged: Callable[[int, str], None]) -> None:
        self.target = target
        self.clock = clock
        self._score_fn = score_fn
        self._on_logged = on_logged
        # One official score at a time: indices and the hash chain stay consistent when the
        # background t=0 score, the agent's score and the final score overlap.
        self._lock = threading.Lock()
        # The agent's sandbox while a session is open: frozen during every official score
        # the agent asks for, so nothing of the agent runs (or holds a GPU) while scored.
        self.agent_sandbox: Sandbox | None = None

    def entries(self) -> list[ScoreEntry]:
        return read_log(self.target.score_log_path)

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

        requested = self.clock.working_s()
        waited = 0.0
        if not self._lock.acquire(blocking=False):
            began = time.monotonic()
            with self.clock.paused():  # the harness's wait, not the agent's
                self._lock.acquire()
            waited = time.monotonic() - began
        try:
            return self._score_locked(kind, notify, requested, waited)
        finally:
            self._lock.release()
            notify()  # also when snapshotting failed: nobody may wait forever

    def _score_locked(self, kind: ScoreKind, notify: Callable[[], None], requested: float,
                      waited: float) -> ScoreEntry:
        target = self.target
        entries = self.entries()
        n = len(entries)
        snapshot_rel = f"protected/snapshots/{n:04d}"
        # The time it was asked for; never before a score already logged (the log's
        # working times only go forward).
        working = max(requested, entries[-1].working_s if entries else 0.0)
        result, digest = self._snapshot_and_score(kind, target.run_dir / snapshot_rel, notify)
        norm = normalize(result.raw, target.anchors, target.direction)
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
            kind=kind,
            message=result.message,
            details=details,
            snapshot=snapshot_rel,
            prev_hash=last_hash(target.score_log_path),
        )
        try:
            head = append_entry(target.score_log_path, entry)
        except OSError as exc:  # disk full: a clear error; earlier lines are intact
            raise ScoreLogError(f"cannot write the score log {target.score_log_path}: {exc}; "
                                "the run can be resumed once there is space") from exc
        self._on_logged(n + 1, head)
        return entry

    def _snapshot_and_score(self, kind: ScoreKind, snapshot: Path,
                            notify: Callable[[], None]) -> tuple[ScoreResult, str | None]:
        """Snapshot the workspace with the agent's processes frozen, and score it (frozen
        still, so nothing of the agent competes with the scorer). The t=0 score freezes
        nothing: the agent starts once its snapshot exists. ScoringHarnessError passes up."""
        target = self.target
        sandbox = self.agent_sandbox if kind is not ScoreKind.INITIAL else None
        if sandbox is not None:
            sandbox.freeze()
        try:
            try:
                snapshot_solution(target.spec, target.workspace, snapshot)
            except (OSError, ValueError) as exc:  # vanished workspace, oversized snapshot
                notify()
                failed = ScoreResult.invalid("snapshot", error=f"could not snapshot: {exc}")
                return agent_visible(target.spec, failed), None
            notify()
            digest = snapshot_digest(snapshot)
            result = self._score_fn(target.spec, target.profile, snapshot, target.isolation,
                                    kind=kind)
            return result, digest
        finally:
            if sandbox is not None:
                sandbox.thaw()
