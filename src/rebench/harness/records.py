"""Run records on disk: run.json and the lines of the score log."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rebench.core.normalize import Anchors
from rebench.core.spec import Aggregation, Direction
from rebench.harness.run_values import (
    RecordError,
    RunCost,
    RunExtra,
    anchors_from_json,
    json_member,
    json_object,
)
from rebench.sandbox import Isolation
from rebench.scoring.contract import ScoreKind


class RunStatus(enum.Enum):
    """Where a run is in its life. INTERRUPTED: its harness was stopped (Ctrl-C, or an
    Inspect eval cancelled) before the final score; `rebench resume RUN` continues it."""

    CREATED = "created"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class Outcome(enum.Enum):
    """Why a run ended as it did, the agent's doing or the harness's (set when the run
    stops: `classify`)."""

    OK = "ok"  # it has a valid score of the agent's own (agent or final)
    AGENT_INVALID = "agent-invalid"  # none of the agent's scored submissions was valid
    INFRASTRUCTURE = "infrastructure"  # the harness failed it: the final or t=0 score
    # could not be computed (a scorer crash, a trusted timeout), or an Inspect sample
    # errored before its scorer (a model endpoint failing, typically)
    ABORTED = "aborted"  # stopped by an operator (Ctrl-C, a cancelled eval)


class RunMark(enum.Enum):
    """An operator's verdict on a run (`rebench mark RUN ...`): practice and aborted runs are
    left out of the report by default; a hacked run stays on disk with its evidence and
    counts as the report's --hacks policy says (a failure by default); ok clears an earlier
    mark."""

    OK = "ok"
    PRACTICE = "practice"
    ABORTED = "aborted"
    HACKED = "hacked"


# The operator's mark lives beside run.json, not in it: the harness rewrites run.json from
# its own copy of the record, and would drop a mark set while the run is going on.
MARK_FILE = "mark.json"


@dataclass(frozen=True)
class OperatorMark:
    """The contents of runs/<run_id>/mark.json: the current mark, who set it, and the marks
    it replaced (oldest first), so a reversed verdict keeps its reasons."""

    mark: RunMark
    reason: str
    marked_at: str  # ISO 8601 UTC
    by: str = ""  # the operator's login name, where known
    history: tuple[OperatorMark, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"mark": self.mark.value, "reason": self.reason,
                                "marked_at": self.marked_at, "by": self.by}
        if self.history:
            data["history"] = [m.to_json() for m in self.history]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OperatorMark:
        history = tuple(cls.from_json(h) for h in data.get("history", []) or [])
        return cls(RunMark(data["mark"]), str(data.get("reason", "")),
                   str(data.get("marked_at", "")), str(data.get("by", "")), history)


def load_mark(run_dir: Path) -> OperatorMark | None:
    """The run's operator mark, or None when it has none (or the file is unreadable: an
    unreadable mark must not hide a run, so it counts as no mark)."""
    path = run_dir / MARK_FILE
    try:
        return OperatorMark.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_mark(run_dir: Path, mark: OperatorMark) -> None:
    """Write mark.json atomically; the mark it replaces (and its history) goes into the new
    one's history."""
    path = run_dir / MARK_FILE
    old = load_mark(run_dir)
    if old is not None:
        flat = replace(old, history=())
        mark = replace(mark, history=(*old.history, flat, *mark.history))
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(mark.to_json(), indent=2) + "\n")
    tmp.replace(path)


@dataclass(frozen=True)
class RunUsage:
    """What a run used of the machine (issue 32). `agent_cpu_s`: CPU-seconds of the agent's
    sandbox (its process group: every process the agent started, services run in it
    included), summed over the run's sessions; None where the sandbox keeps no group with
    CPU accounting (local isolation). `scoring_cpu_s` and `scoring_wall_s`: the official
    scorer processes' CPU-seconds (children included) and wall seconds, summed over the
    run's scores (the t=0 one too: it is the harness's). GPU-seconds are not measured."""

    agent_cpu_s: float | None = None
    scoring_cpu_s: float = 0.0
    scoring_wall_s: float = 0.0
    scorings: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"agent_cpu_s": None if self.agent_cpu_s is None else round(self.agent_cpu_s, 3),
                "scoring_cpu_s": round(self.scoring_cpu_s, 3),
                "scoring_wall_s": round(self.scoring_wall_s, 3), "scorings": self.scorings}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunUsage:
        agent = data.get("agent_cpu_s")
        return cls(None if agent is None else float(agent), float(data.get("scoring_cpu_s", 0)),
                   float(data.get("scoring_wall_s", 0)), int(data.get("scorings", 0)))

    def with_agent_cpu(self, seconds: float | None) -> RunUsage:
        """This usage with one more session's sandbox CPU-seconds added (None adds
        nothing: a session without accounting leaves what earlier ones counted)."""
        if seconds is None:
            return self
        return replace(self, agent_cpu_s=(self.agent_cpu_s or 0.0) + seconds)

    def with_scores(self, entries: list[ScoreEntry]) -> RunUsage:
        """This usage with the scoring totals of `entries` (the whole score log)."""
        cpu = sum(_number(e.details.get("scorer_cpu_s")) for e in entries)
        wall = sum(_number(e.details.get("scoring_wall_s")) for e in entries)
        return replace(self, scoring_cpu_s=cpu, scoring_wall_s=wall, scorings=len(entries))


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else 0.0


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
    anchors: Anchors
    isolation: Isolation
    created_at: str
    status: RunStatus = RunStatus.CREATED
    aggregation: Aggregation = Aggregation.BEST
    direction: Direction = Direction.LOWER
    finished_at: str | None = None
    working_s_used: float = 0.0
    final_normalized: float | None = None
    note: str = ""
    # Count and last keyed hash of the score log: `verify` detects a truncated log.
    score_count: int = 0
    score_head: str = ""
    # Set when the run stops (issue 32): its outcome, and the share of the agent's scored
    # submissions (its requested scores and the final one) that were valid.
    outcome: Outcome | None = None
    valid_rate: float | None = None
    # What its model calls cost (RunCost), where known.
    cost: RunCost | None = None
    # What it used of the machine (RunUsage); absent from run.json until measured (runs
    # written before it was recorded read back unchanged).
    usage: RunUsage | None = None
    extra: RunExtra = field(default_factory=RunExtra)

    def to_json(self) -> dict[str, Any]:
        """The JSON form: each typed field as its value, in the order and shape run.json
        has always had (tests/harness/test_old_run_records.py holds records to prove it)."""
        data: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, Anchors | RunCost | RunUsage | RunExtra):
                value = value.to_json()
            if name == "usage" and value is None:
                continue  # absent until measured
            data[name] = value
        return data

    @property
    def crashed(self) -> bool:
        """The agent's turn ended in an error (its traceback is kept in `extra`), or an
        Inspect sample ended without reaching its scorer."""
        return bool(self.extra.agent_traceback or self.extra.crashed)

    @classmethod
    def from_json(cls, value: object) -> RunRecord:
        """The record in `value` (run.json); RecordError, naming the field, when a field is
        missing, of the wrong type or of a value this version does not know. Fields this
        version does not know are left out, as they always were."""
        data = dict(json_object("run.json", value))
        try:
            data["anchors"] = anchors_from_json("anchors", data["anchors"])
            data["isolation"] = json_member("isolation", Isolation, data["isolation"])
        except KeyError as exc:
            raise RecordError(f"run.json: missing field {exc}") from None
        data["status"] = json_member("status", RunStatus, data.get("status", "created"))
        data["aggregation"] = json_member("aggregation", Aggregation,
                                          data.get("aggregation", "best"))
        data["direction"] = json_member("direction", Direction,
                                        data.get("direction", Direction.LOWER.value))
        data["outcome"] = json_member("outcome", Outcome, data["outcome"]) if data.get(
            "outcome") else None
        usage = data.get("usage")
        data["usage"] = RunUsage.from_json(usage) if isinstance(usage, dict) else None
        cost = data.get("cost")
        data["cost"] = None if cost is None else RunCost.from_json(cost)
        data["extra"] = RunExtra.from_json(data.get("extra", {}))
        known = set(cls.__dataclass_fields__)
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as exc:  # a required field missing
            raise RecordError(f"run.json: {exc}") from None

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
    kind: ScoreKind  # recorded as its value: "initial", "agent", "final"
    message: dict[str, Any]
    details: dict[str, Any]
    snapshot: str  # path relative to the run directory
    prev_hash: str

    def __post_init__(self) -> None:
        # `kind` as read from JSON is its value: made the member here, so the field is a
        # ScoreKind however the entry was built, and an unknown kind is refused by name.
        if not isinstance(self.kind, ScoreKind):
            try:
                object.__setattr__(self, "kind", ScoreKind(str(self.kind)))
            except ValueError:
                raise ValueError(f"score entry {self.index}: kind {self.kind!r} is not one of "
                                 f"{', '.join(k.value for k in ScoreKind)}") from None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        # JSON has no NaN: invalid scores are null.
        data["raw"] = self.raw if math.isfinite(self.raw) else None
        data["normalized"] = self.normalized if math.isfinite(self.normalized) else None
        data["kind"] = self.kind.value
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


def submission_valid(entry: ScoreEntry) -> bool:
    """Whether one of the agent's scored submissions was valid: its score, or, where the
    environment hides scores from the agent (a requested score only checks validity), the
    check's verdict."""
    if entry.details.get("check_only"):
        return bool(entry.message.get("valid", entry.message.get("is_valid", False)))
    return entry.valid


def valid_rate(entries: list[ScoreEntry]) -> float | None:
    """Valid / all of the agent's scored submissions (its requested scores and the final
    one; not the harness's t=0 score of the start); None when it has none."""
    own = [e for e in entries if e.kind is not ScoreKind.INITIAL]
    return sum(submission_valid(e) for e in own) / len(own) if own else None


def classify(record: RunRecord, entries: list[ScoreEntry]) -> Outcome:
    """The run's outcome from its status and score log (see Outcome)."""
    if record.status is RunStatus.INTERRUPTED:
        return Outcome.ABORTED
    if (record.status is RunStatus.FAILED or record.extra.crashed
            or not any(e.kind is ScoreKind.INITIAL for e in entries)):
        return Outcome.INFRASTRUCTURE
    if any(e.valid for e in entries if e.kind is not ScoreKind.INITIAL):
        return Outcome.OK
    return Outcome.AGENT_INVALID
