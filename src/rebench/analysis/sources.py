"""Where runs come from: run directories, the SQLite run index, or a CSV of external runs.

CSV format (one row per score event; `rebench report --from-csv`):
    required: env, agent, run_id, time_limit_s, working_s, normalized
    optional: env_version, profile, wall_s, raw, valid, kind,
              scale (normalized, the default, or metr_capped; one per file),
              left_out (a reason: the run is listed as left out, not counted)
An empty or non-numeric `normalized` is an invalid score. Environments this installation does not
have are scored by the paper's rule (small_scaling_law: last valid score, hidden from the agent).
"""

from __future__ import annotations

import csv
import dataclasses
import enum
import math
from collections.abc import Callable, Iterable
from pathlib import Path

from rebench.analysis.table import (
    COLUMNS,
    EnvRule,
    Run,
    RunCost,
    RunTable,
    ScoreEvent,
    ScoreScale,
    make_run,
)
from rebench.analysis.table import installed_rule as default_rule
from rebench.analysis.units import format_duration
from rebench.core.errors import RebenchError
from rebench.harness.records import (
    Outcome,
    RunMark,
    RunRecord,
    RunStatus,
    ScoreEntry,
    load_mark,
)
from rebench.harness.run_values import RunCost as RecordCost
from rebench.harness.score_log import read_log

CSV_REQUIRED = ("env", "agent", "run_id", "time_limit_s", "working_s", "normalized")
RuleLookup = Callable[[str], EnvRule]


class CsvFormatError(RebenchError):
    """A --from-csv file that lacks a column or has a malformed row."""


class LeftOut(enum.Enum):
    """Kinds of runs the report leaves out by default (`rebench report --include KIND` counts
    them). Runs still going on (or that never started) are always left out."""

    INTERRUPTED = "interrupted"  # stopped by the operator; no final score
    CRASHED = "crashed"  # the agent's turn ended in an error
    EARLY = "early"  # a human run ended before EARLY_FRACTION of its budget
    PRACTICE = "practice"  # marked by the operator (`rebench mark RUN practice`)
    ABORTED = "aborted"  # marked by the operator (`rebench mark RUN aborted`)
    INFRASTRUCTURE = "infrastructure"  # the harness failed it (records.Outcome)


# A human participant who ends a run before this share of its working budget has withdrawn,
# not made a full-budget attempt (issue 19: an 8 h run left after 1.5 minutes). Agent runs are
# never "early": an agent that submits early made its attempt, and leaving its failures out
# would flatter it.
EARLY_FRACTION = 0.10
LOCAL_HUMAN = "human (local)"


def is_human(agent: str) -> bool:
    """The human agent of `rebench run --agent human` (and its variants `human:...`)."""
    return agent == "human" or agent.startswith("human:")


def agent_label(agent: str) -> str:
    """The report's name for a local run's agent: local human runs are labelled apart from
    the published human baselines (the paper's, METR's)."""
    return LOCAL_HUMAN if is_human(agent) else agent


def left_out_kind(record: RunRecord, run_dir: Path) -> tuple[LeftOut, str] | None:
    """Why the report leaves this finished or interrupted run out by default, if it does."""
    mark = load_mark(run_dir)
    # A hacked run is not left out here: the report's --hacks policy decides how it counts.
    if mark is not None and mark.mark in (RunMark.PRACTICE, RunMark.ABORTED):
        kind = LeftOut.PRACTICE if mark.mark is RunMark.PRACTICE else LeftOut.ABORTED
        return kind, f"marked {mark.mark.value}" + (f" ({mark.reason})" if mark.reason else "")
    if record.status is RunStatus.INTERRUPTED:
        return LeftOut.INTERRUPTED, "interrupted before its final score"
    if record.crashed:
        return LeftOut.CRASHED, f"crashed ({record.note or 'agent error'})"
    if record.outcome is Outcome.INFRASTRUCTURE:
        return LeftOut.INFRASTRUCTURE, ("an infrastructure failure (the harness could not "
                                        "score it), not the agent's")
    used = record.working_s_used
    if is_human(record.agent) and used < EARLY_FRACTION * record.budget_s:
        return LeftOut.EARLY, (f"ended after {format_duration(used)} of its "
                               f"{format_duration(record.budget_s)} budget (under "
                               f"{EARLY_FRACTION:.0%}): not a full-budget attempt")
    return None


def _event(record: RunRecord, entry: ScoreEntry) -> ScoreEvent:
    return ScoreEvent(
        env_id=record.env_id, env_version=record.env_version, profile=record.profile,
        agent=agent_label(record.agent), run_id=record.run_id,
        time_limit_s=float(record.budget_s), wall_s=entry.wall_s, working_s=entry.working_s,
        raw=entry.raw, normalized=entry.normalized if entry.valid else math.nan,
        valid=entry.valid, kind=entry.kind.value,
    )


def _record_run(record: RunRecord, run_dir: Path, rule_for: RuleLookup,
                include: frozenset[LeftOut] = frozenset()) -> Run | str:
    """The run of one directory, or a problem message saying why it is left out."""
    if record.status not in (RunStatus.FINISHED, RunStatus.INTERRUPTED):
        # A run in progress (or one whose harness died, awaiting resume) has no final score
        # yet; counting it would read as a run that stopped early.
        return f"{record.run_id}: status {record.status.value}, not finished; run left out"
    why = left_out_kind(record, run_dir)
    if why is not None and why[0] not in include:
        return (f"{record.run_id}: {why[1]}; left out (--include {why[0].value} "
                "counts it)")
    try:
        entries = read_log(run_dir / "protected" / "score_log.jsonl")
    except (RebenchError, OSError, ValueError, TypeError) as exc:
        return f"{record.run_id}: score log unreadable ({exc}); run left out"
    if not entries:
        return f"{record.run_id}: no official score logged; run left out"
    base = rule_for(record.env_id)
    # The run record says which score counted when the run was made; it wins over today's spec.
    rule = EnvRule(record.aggregation, base.score_visible)
    return dataclasses.replace(make_run([_event(record, e) for e in entries], rule),
                               hardware=record.hardware, cost=run_cost(record, entries))


def run_cost(record: RunRecord, entries: list[ScoreEntry]) -> RunCost:
    """What the run used, from its record's `usage` and `cost` and its score log's wall
    clock; what the record does not have stays None (not recorded, never 0)."""
    usage = record.usage
    tokens = _token_sums(record.cost)
    return RunCost(
        wall_s=max((e.wall_s for e in entries), default=None),
        usage_recorded=usage is not None,
        agent_cpu_s=None if usage is None else usage.agent_cpu_s,
        scoring_cpu_s=None if usage is None else usage.scoring_cpu_s,
        scoring_wall_s=None if usage is None else usage.scoring_wall_s,
        scorings=None if usage is None else usage.scorings,
        input_tokens=tokens.get("input_tokens"), output_tokens=tokens.get("output_tokens"),
        cached_tokens=tokens.get("cached_tokens"), total_tokens=tokens.get("total_tokens"),
        dollars=None if record.cost is None else record.cost.dollars,
        models=() if record.cost is None else tuple(sorted(record.cost.tokens)),
    )


def _token_sums(cost: RecordCost | None) -> dict[str, int]:
    """The run's tokens summed over its models (harness/costs.py's fields); empty where
    no model usage was recorded."""
    if cost is None or not cost.tokens:
        return {}
    sums = {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "total_tokens": 0}
    for counts in cost.tokens.values():
        sums["input_tokens"] += counts.get("input_tokens", 0)
        sums["output_tokens"] += counts.get("output_tokens", 0)
        sums["cached_tokens"] += (counts.get("input_tokens_cache_read", 0)
                                  + counts.get("input_tokens_cache_write", 0))
        sums["total_tokens"] += counts.get("total_tokens", 0)
    return sums


def _collect(
    pairs: Iterable[tuple[RunRecord, Path]], rule_for: RuleLookup, source: str,
    include: frozenset[LeftOut] = frozenset(),
) -> RunTable:
    runs: list[Run] = []
    problems: list[str] = []
    seen: set[str] = set()
    for record, run_dir in pairs:
        if record.run_id in seen:
            continue
        seen.add(record.run_id)
        result = _record_run(record, run_dir, rule_for, include)
        if isinstance(result, Run):
            runs.append(result)
        else:
            problems.append(result)
    runs.sort(key=lambda r: (r.env_id, r.agent, r.time_limit_s, r.run_id))
    return RunTable(tuple(runs), tuple(problems), source)


def from_run_dirs(root: Path, rule_for: RuleLookup = default_rule,
                  include: frozenset[LeftOut] = frozenset()) -> RunTable:
    """Every runs/<run_id>/ under `root` that has a run.json; unreadable ones, and those left
    out by default (see LeftOut) unless `include` names their kind, become problems."""
    pairs: list[tuple[RunRecord, Path]] = []
    problems: list[str] = []
    for run_json in sorted(root.glob("*/run.json")):
        try:
            pairs.append((RunRecord.load(run_json), run_json.parent))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            problems.append(f"{run_json.parent.name}: run.json unreadable ({exc}); run left out")
    table = _collect(pairs, rule_for, f"run directories under {root}", include)
    return RunTable(table.runs, tuple(problems) + table.problems, table.source)


def from_index(db: Path, rule_for: RuleLookup = default_rule,
               include: frozenset[LeftOut] = frozenset()) -> RunTable:
    """The runs listed in the SQLite run index, read from their run directories."""
    from rebench.harness.index import list_runs

    if not db.is_file():
        raise RebenchError(f"no run index at {db}")
    return _collect(list_runs(db), rule_for, f"run index {db}", include)


def _float(row: dict[str, str], key: str, lineno: int, default: float | None = None) -> float:
    text = (row.get(key) or "").strip()
    if not text and default is not None:
        return default
    try:
        return float(text)
    except ValueError:
        raise CsvFormatError(f"line {lineno}: column {key!r} is not a number: {text!r}") from None


def _csv_event(row: dict[str, str], lineno: int) -> ScoreEvent:
    norm_text = (row.get("normalized") or "").strip()
    try:
        normalized = float(norm_text) if norm_text else math.nan
    except ValueError:
        normalized = math.nan  # "invalid", "NaN", "error": an invalid score, not a bad file
    valid_text = (row.get("valid") or "").strip().lower()
    valid = math.isfinite(normalized) and valid_text not in ("false", "0", "no")
    time_limit = _float(row, "time_limit_s", lineno)
    if not math.isfinite(time_limit) or time_limit <= 0:
        raise CsvFormatError(f"line {lineno}: time_limit_s must be positive")
    working = _float(row, "working_s", lineno)
    for key in ("env", "agent", "run_id"):
        if not (row.get(key) or "").strip():
            raise CsvFormatError(f"line {lineno}: column {key!r} is empty")
    return ScoreEvent(
        env_id=row["env"].strip(), env_version=(row.get("env_version") or "").strip(),
        profile=(row.get("profile") or "").strip(), agent=row["agent"].strip(),
        run_id=row["run_id"].strip(), time_limit_s=time_limit,
        wall_s=_float(row, "wall_s", lineno, default=working), working_s=working,
        raw=_float(row, "raw", lineno, default=math.nan),
        normalized=max(0.0, normalized) if valid else math.nan, valid=valid,
        kind=(row.get("kind") or "external").strip(),
    )


def _csv_scale(values: set[str], path: Path) -> ScoreScale:
    values = {v for v in values if v} or {ScoreScale.NORMALIZED.value}
    if len(values) > 1:
        raise CsvFormatError(f"{path}: rows on different scales {sorted(values)}")
    try:
        return ScoreScale(values.pop())
    except ValueError:
        known = ", ".join(s.value for s in ScoreScale)
        raise CsvFormatError(f"{path}: unknown scale (known: {known})") from None


def from_csv(path: Path, rule_for: RuleLookup = default_rule) -> RunTable:
    """Runs from a CSV of score events (see the module docstring for the columns)."""
    scales: set[str] = set()
    left_out: dict[str, str] = {}
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise CsvFormatError(f"{path}: missing column(s) {', '.join(missing)}")
        by_run: dict[str, list[ScoreEvent]] = {}
        for lineno, row in enumerate(reader, start=2):
            event = _csv_event(row, lineno)
            scales.add((row.get("scale") or "").strip())
            reason = (row.get("left_out") or "").strip()
            if reason:
                left_out[event.run_id] = reason
            by_run.setdefault(event.run_id, []).append(event)
    runs = []
    for run_id, events in by_run.items():
        first = events[0]
        if any((e.env_id, e.agent, e.time_limit_s) != (first.env_id, first.agent,
                                                         first.time_limit_s) for e in events):
            raise CsvFormatError(f"{path}: run {run_id} mixes environments, agents or limits")
        if run_id not in left_out:
            runs.append(make_run(events, rule_for(first.env_id)))
    runs.sort(key=lambda r: (r.env_id, r.agent, r.time_limit_s, r.run_id))
    problems = tuple(f"{run_id}: {reason}; run left out"
                     for run_id, reason in sorted(left_out.items()))
    return RunTable(tuple(runs), problems, f"CSV {path}", _csv_scale(scales, path))


def write_csv(table: RunTable, path: Path) -> None:
    """The tidy table as CSV, readable again with `from_csv` (env_id is written as `env`)."""
    header = ["env" if c == "env_id" else c for c in COLUMNS] + ["scale"]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for event in table.events():
            row = event.to_json()
            writer.writerow(["" if row[c] is None else row[c] for c in COLUMNS]
                            + [table.scale.value])
