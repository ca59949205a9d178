"""A run on disk: its directory, its record (run.json), its working clock and its official
scorer (harness/official.py). The phases of its life are harness/lifecycle.py's.

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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rebench.core.calibration import resolve_anchors
from rebench.core.discovery import load_spec
from rebench.core.errors import RunError
from rebench.core.hardware import fingerprint
from rebench.core.normalize import Anchors, aggregate
from rebench.core.paths import runs_root
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness import index
from rebench.harness.clock import WorkingClock
from rebench.harness.official import OfficialScorer, ScoringTarget, now_iso
from rebench.harness.records import RunRecord, ScoreEntry
from rebench.harness.score_log import read_log
from rebench.harness.scoring import official_score
from rebench.harness.workspace import apply_starting_recipe, populate_workspace
from rebench.sandbox import Isolation
from rebench.scoring.contract import ScoreKind


def new_run_id(env_id: str, agent: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    safe_agent = "".join(c if c.isalnum() else "-" for c in agent)[:24]
    return f"{env_id}-{safe_agent}-{stamp}-{secrets.token_hex(3)}"


@dataclass
class Run:
    """A run directory and its record, with the run's working clock and official scorer.
    Create with `create_run`, reopen with `open_run`."""

    run_dir: Path
    record: RunRecord
    spec: EnvironmentSpec
    profile: Profile
    # Working seconds already used before this process took over (resume).
    working_offset_s: float = 0.0
    # The working clock (harness/clock.py): frozen until a Session opens, so setup and the
    # t=0 score are not the agent's time; resume continues it from disk (continue_from).
    clock: WorkingClock = field(init=False, repr=False)
    _scorer: OfficialScorer | None = field(default=None, init=False, repr=False)
    _scorer_lock: threading.Lock = field(default_factory=threading.Lock, init=False,
                                         repr=False)
    # Held while the run is being finished, so it is finished once (an Inspect agent's
    # scorer finishes its own run before the driver would).
    finish_lock: threading.Lock = field(default_factory=threading.Lock, init=False,
                                        repr=False)

    def __post_init__(self) -> None:
        self.clock = WorkingClock(self.record.budget_s, self.working_offset_s, started=False)

    @property
    def scorer(self) -> OfficialScorer:
        """The run's official scorer (harness/official.py), made on first use (a run opened
        to be read, verified or reported never parses its anchors); it hands each logged
        score's count and hash back to the record (_logged)."""
        with self._scorer_lock:
            if self._scorer is None:
                target = ScoringTarget(self.run_dir, self.spec, self.profile, self.isolation,
                                       self.anchors, self.record.direction)
                self._scorer = OfficialScorer(target, self.clock, score_fn=_official_score,
                                              on_logged=self._logged)
            return self._scorer

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
        return self.record.isolation

    @property
    def anchors(self) -> Anchors:
        return self.record.anchors

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

    def _logged(self, count: int, head: str) -> None:
        """A score is in the log: the record keeps the log's count and last hash (`verify`
        detects a truncated log by them)."""
        self.record.score_count, self.record.score_head = count, head
        self.save()

    def entries(self) -> list[ScoreEntry]:
        return read_log(self.score_log_path)

    def aggregate_normalized(self) -> float:
        return aggregate(
            [e.normalized for e in self.entries()], self.record.aggregation
        )


def _official_score(spec: EnvironmentSpec, profile: Profile, snapshot_dir: Path,
                    isolation: Isolation, /, *, kind: ScoreKind) -> ScoreResult:
    """harness/scoring.py official_score, looked up when called: tests and benchmarks
    stand in for the trusted scorer by patching `rebench.harness.run.official_score`."""
    return official_score(spec, profile, snapshot_dir, isolation, kind=kind)


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
        anchors=resolve_anchors(spec, profile),
        isolation=isolation,
        created_at=now_iso(),
        aggregation=spec.aggregation,
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
