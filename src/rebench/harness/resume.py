"""Resume a run whose harness died, and verify a run directory.

A run's clock survives the harness in three places, all append-only or atomically replaced:
the score log (working seconds of every official score), events.jsonl (every action) and
clock.json (rewritten every few seconds by the running harness). A resumed run continues
from the latest of them, so the agent is charged for all but the last few seconds before the
crash, and nothing already logged is touched.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

from rebench.core.errors import RunError, ScoreLogError
from rebench.harness.clock import load_clock
from rebench.harness.events import last_clock, read_events
from rebench.harness.records import RunStatus, ScoreEntry
from rebench.harness.run import Run, open_run
from rebench.harness.score_log import read_hashes, read_log
from rebench.scoring.contract import ScoreKind

CLOCK_FILE = "clock.json"
EVENTS_FILE = "events.jsonl"
# Working seconds an official score may be logged after the budget (the final score runs
# once the budget is spent; its timestamp is taken when it starts).
_FINAL_SLACK_S = 5.0


def clock_offsets(run: Run) -> tuple[float, float]:
    """(wall_s, working_s) a resumed run continues from: the latest the old harness left."""
    walls, workings = [0.0], [float(run.record.working_s_used)]
    wall, working = load_clock(run.run_dir / CLOCK_FILE)
    walls.append(wall)
    workings.append(working)
    wall, working = last_clock(run.run_dir / EVENTS_FILE)
    walls.append(wall)
    workings.append(working)
    for entry in run.entries():
        walls.append(entry.wall_s)
        workings.append(entry.working_s)
    return max(walls), max(workings)


def reopen_for_resume(run_ref: str | Path) -> Run:
    """Open an unfinished run with its clock continued from where the harness died."""
    run = open_run(run_ref)
    if run.record.status is RunStatus.FINISHED:
        raise RunError(f"run {run.record.run_id} is already finished; nothing to resume")
    if not run.workspace.is_dir():
        raise RunError(f"run {run.record.run_id} has no workspace any more ({run.workspace})")
    wall, working = clock_offsets(run)
    run.clock.continue_from(wall_offset_s=wall, working_offset_s=working)
    return run


@dataclass
class VerifyReport:
    """What `verify_run` found: no problems means the run directory is consistent."""

    run_id: str
    entries: int = 0
    events: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_run(run_ref: str | Path) -> VerifyReport:
    """Check a run: the score log's hash chain, entry indices, snapshots, clocks, events
    and (for a finished run) the recorded final score."""
    run = open_run(run_ref)
    report = VerifyReport(run.record.run_id)
    try:
        entries = read_log(run.score_log_path, verify=True)
    except ScoreLogError as exc:
        report.problems.append(f"score log: {exc}")
        return report
    report.entries = len(entries)
    _verify_head(run, entries, report)
    last_working = -math.inf
    for i, entry in enumerate(entries):
        if entry.index != i:
            report.problems.append(f"score log line {i + 1} has index {entry.index}")
        if not (run.run_dir / entry.snapshot).is_dir():
            report.problems.append(f"score {i}: snapshot {entry.snapshot} is missing")
        if entry.working_s + 1e-6 < last_working:
            report.problems.append(f"score {i}: working time goes backwards")
        if entry.working_s > run.record.budget_s + _FINAL_SLACK_S:
            report.problems.append(f"score {i}: logged after the budget ({entry.working_s} s)")
        last_working = max(last_working, entry.working_s)
    if entries and entries[0].kind is not ScoreKind.INITIAL:
        report.problems.append("the first score is not the initial (t=0) score")
    _verify_events(run, report)
    if run.record.status is RunStatus.FINISHED:
        _verify_finished(run, entries, report)
    return report


def _verify_head(run: Run, entries: list[ScoreEntry], report: VerifyReport) -> None:
    """run.json's count and last hash against the log: a log cut short (or a record
    rolled forward) fails. A log one entry ahead is a harness that died between the
    fsync of the log and the save of run.json: not a problem."""
    count, head = run.record.score_count, run.record.score_head
    if len(entries) < count:
        report.problems.append(f"score log: {count} scores were logged, {len(entries)} are "
                               "left (the log was truncated)")
    elif count and read_hashes(run.score_log_path)[count - 1] != head:
        report.problems.append("score log: its hash at the recorded count differs from "
                               "run.json's (the log was rewritten)")


def _verify_events(run: Run, report: VerifyReport) -> None:
    try:
        events = read_events(run.run_dir / EVENTS_FILE)
    except ValueError as exc:
        report.problems.append(f"events: {exc}")
        return
    report.events = len(events)
    for before, after in itertools.pairwise(events):
        if after.seq != before.seq + 1:
            report.problems.append(f"events: seq {before.seq} is followed by {after.seq}")
            break
        if after.working_s + 1e-6 < before.working_s:
            report.problems.append(f"events: working time goes backwards at seq {after.seq}")
            break


def _verify_finished(run: Run, entries: list[ScoreEntry], report: VerifyReport) -> None:
    if not entries or entries[-1].kind is not ScoreKind.FINAL:
        report.problems.append("finished run without a final score")
    recorded, actual = run.record.final_normalized, run.aggregate_normalized()
    if recorded is None or not (
        (math.isnan(recorded) and math.isnan(actual)) or abs(recorded - actual) < 1e-9
    ):
        report.problems.append(
            f"run.json says final_normalized {recorded}, the score log gives {actual}"
        )
