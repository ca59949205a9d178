"""The tables of `rebench runs`, `batch` and `show`: readable at 80 columns, every column
when the output is piped, run ids never cut (`show`, `resume` and `verify` take them); and
the notes under a run's score (its anchors in words, a busy machine)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from rebench.cli_common import fmt_number
from rebench.core.normalize import Anchors, AnchorSource

if TYPE_CHECKING:
    from rebench.harness.batch import BatchOutcome
    from rebench.harness.records import OperatorMark, RunRecord, ScoreEntry
    from rebench.harness.run import Run


@dataclass(frozen=True)
class RunRow:
    """One line of `rebench runs`."""

    run_id: str
    env_id: str
    profile: str
    agent: str
    budget: str
    status: str
    outcome: str
    score: str

    @classmethod
    def of(cls, record: RunRecord, mark: OperatorMark | None) -> RunRow:
        from rebench.analysis.units import format_duration
        from rebench.harness.records import RunMark

        status = record.status.value
        if mark is not None and mark.mark is not RunMark.OK:
            status += f" ({mark.mark.value})"
        return cls(record.run_id, record.env_id, record.profile, record.agent,
                   format_duration(record.budget_s), status,
                   record.outcome.value if record.outcome else "-",
                   fmt_number(record.final_normalized))


_RUN_COLUMNS = {"run id": "run_id", "env": "env_id", "profile": "profile", "agent": "agent",
                "budget": "budget", "status": "status", "outcome": "outcome",
                "score": "score"}


def print_runs(console: Console, rows: list[RunRow]) -> None:
    """Every column of every run: one table where it fits the console (always when the
    output is not a terminal: a script that greps it gets every column); else two lines per
    run, the run id whole on the first (`show`, `resume` and `verify` take it)."""
    from rich import box

    if not rows:
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for col in _RUN_COLUMNS:
        table.add_column(col, no_wrap=True, justify="right" if col == "score" else "left")
    for row in rows:
        table.add_row(*(getattr(row, attr) for attr in _RUN_COLUMNS.values()))
    if not console.is_terminal:  # a pipe or a file: no width to fit
        console.print(unbounded(table), soft_wrap=True, highlight=False, markup=False)
        return
    if Console(width=10_000).measure(table).maximum <= console.width:
        console.print(table)
        return
    for row in rows:
        console.print(row.run_id, style="bold", soft_wrap=True, highlight=False)
        console.print(f"  {row.env_id} {row.profile} {row.agent} {row.budget} {row.status} "
                      f"{row.outcome} score {row.score}", highlight=False)


def unbounded(renderable: Table) -> str:
    """`renderable` as plain text at its natural width (for a pipe, whatever its width)."""
    import io

    buffer = io.StringIO()
    Console(width=10_000, file=buffer, color_system=None).print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def print_outcomes(console: Console, outcomes: list[BatchOutcome]) -> None:
    """The batch's attempts: a table where it fits (or into a pipe), else two lines each;
    run ids never cut."""
    from rich import box

    table = Table(title="batch", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for col in ("run id", "attempt", "gpus", "state", "score"):
        table.add_column(col, no_wrap=True)
    cells = [(o.run_id, o.job.label(), ",".join(map(str, o.gpus)) or "-", o.state,
              fmt_number(o.final_normalized)) for o in outcomes]
    for row in cells:
        table.add_row(*row)
    if not console.is_terminal:
        console.print(unbounded(table), soft_wrap=True, highlight=False, markup=False)
    elif Console(width=10_000).measure(table).maximum <= console.width:
        console.print(table)
    else:
        for run_id, label, gpus, state, score in cells:
            console.print(run_id, style="bold", soft_wrap=True, highlight=False)
            console.print(f"  {label} gpus {gpus} {state} score {score}", highlight=False)


def print_log(run_dir: object) -> None:
    from rebench.cli_common import out
    from rebench.harness.score_log import read_log

    entries = read_log(Path(str(run_dir)) / "protected" / "score_log.jsonl")
    table = Table(title="score log")
    for col in ("#", "kind", "working s", "raw", "normalized", "valid"):
        table.add_column(col, no_wrap=True, justify="left" if col == "kind" else "right")
    # one line per score: the message is cut with an ellipsis, not wrapped over four lines
    table.add_column("message", no_wrap=True, overflow="ellipsis", ratio=1)
    for e in entries:
        table.add_row(str(e.index), e.kind.value, f"{e.working_s:.1f}", fmt_number(e.raw, 4),
                      fmt_number(e.normalized), validity_text(e), message_text(e.message))
    out.print(table)


def validity_text(entry: ScoreEntry) -> str:
    """yes / no, or for a check where the environment hides scores (no number by design)
    the check's verdict, marked as one: a plain "no" there read as an invalid submission."""
    from rebench.harness.records import submission_valid

    if entry.details.get("check_only"):
        return f"{'yes' if submission_valid(entry) else 'no'} (check)"
    return "yes" if entry.valid else "no"


def message_text(message: object) -> str:
    """A score message as `key=value` pairs on one line (`rebench show --json` has it all)."""
    if not isinstance(message, dict):
        return json.dumps(message)
    parts = []
    for key, value in message.items():
        shown = f"{value:.6g}" if isinstance(value, float) else (
            value if isinstance(value, str) else json.dumps(value))
        parts.append(f"{key}={shown}")
    return " ".join(parts)


def anchors_text(anchors: Anchors) -> str:
    """The anchors a score was normalized with, and where they were measured, in words: a
    profile's defaults name the machine they were measured on, which is not the user's
    ("defaults measured on cpu:AMD EPYC x2", not "(profile-default, cpu:AMD EPYC x2)")."""
    span = f"{fmt_number(anchors.starting_raw, 4)} -> {fmt_number(anchors.reference_raw, 4)}"
    hardware = anchors.hardware or "unrecorded hardware"
    where = {
        AnchorSource.PROFILE_DEFAULT: f"the profile's defaults, measured on {hardware} "
                                      "(`rebench calibrate` measures this machine)",
        AnchorSource.CALIBRATION: f"calibrated on {hardware}",
        AnchorSource.PREPARE: f"measured by prepare on the setting it drew, on {hardware}",
    }[anchors.source]
    return f"{span}: {where}"


def run_notes(record: RunRecord, entries: Sequence[ScoreEntry], timing: bool) -> list[str]:
    """What a user needs to read a run's score, printed under it: the anchors, and why a
    score can be off where the machine was busy or the anchors are another machine's (the
    demo's reference scoring 0.93 right after calibration, with no word why)."""
    notes = [f"normalized with anchors {anchors_text(record.anchors)}"]
    loads = [float(v) for e in entries for k, v in e.details.items()
             if k in ("load_before", "load_after") and isinstance(v, (int, float))]
    cores = next((e.details["cores"] for e in entries if "cores" in e.details), None)
    busy = [e for e in entries if e.details.get("contended") is True]
    if busy:
        peak = max(loads, default=math.nan)
        others = max((float(v) for e in busy
                      if isinstance(v := e.details.get("runnable_others"), (int, float))),
                     default=0.0)
        crowd = (f", {others:.1f} threads of other work ready to run" if others >= 0.5
                 else "")
        notes.append(f"{len(busy)} of {len(entries)} scores were taken on a busy machine "
                     f"(load up to {peak:.1f} on {cores} cores{crowd}): a score that is a "
                     f"time moves with the load; `rebench integrity {record.run_id}` lists "
                     "them")
    elif timing and loads:
        notes.append(f"{record.env_id} scores a time: its scores move with the machine's "
                     f"load ({min(loads):.1f}-{max(loads):.1f} on {cores} cores in this run), "
                     "so a reference can land a few hundredths from 1")
    if (timing and record.anchors.source is AnchorSource.PROFILE_DEFAULT
            and record.anchors.hardware != record.hardware):
        notes.append(f"{record.env_id} scores a time, and its anchors are another machine's: "
                     f"`rebench calibrate {record.env_id} -p {record.profile}` measures "
                     "this one")
    return notes


def print_run_notes(the_run: Run, console: Console | None = None,
                    with_anchors: bool = True) -> None:
    """`run_notes` under a run's score (by default on stderr: stdout stays the result)."""
    from rich.markup import escape

    from rebench.cli_common import console as stderr_console
    from rebench.core.discovery import load_spec
    from rebench.core.errors import RebenchError

    record = the_run.record
    try:  # calibration_sd_limit marks a timing environment (core/spec.py)
        timing = load_spec(record.env_id).profile(record.profile).calibration_sd_limit is not None
    except RebenchError:  # a recorded run of an environment no longer found here
        timing = False
    notes = run_notes(record, the_run.entries(), timing)
    for note in notes if with_anchors else notes[1:]:
        (console or stderr_console).print(f"[dim]note:[/] {escape(note)}", highlight=False,
                                          soft_wrap=True)
