"""Integrity over many runs: the report's per-run flags and `--exclude-flagged`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rebench.analysis.table import RunTable
from rebench.core.errors import RebenchError
from rebench.integrity.engine import check_run
from rebench.integrity.flags import Evidence, Flag, IntegrityReport, Severity


def run_dirs(runs_root: Path | None, runs_db: Path | None) -> dict[str, Path]:
    """run_id -> run directory, for the runs a report reads (none for a CSV)."""
    if runs_db is not None:
        from rebench.harness.index import list_runs

        return {record.run_id: run_dir for record, run_dir in list_runs(runs_db)}
    from rebench.core.paths import runs_root as default_root

    root = runs_root or default_root()
    return {path.parent.name: path.parent for path in sorted(root.glob("*/run.json"))}


def check_runs(run_ids: Iterable[str], dirs: Mapping[str, Path]) -> dict[str, IntegrityReport]:
    """The rule-based report of every run that has a directory; a run whose record cannot
    be read gets a report with that note (never an exception: one bad run must not stop a
    report over hundreds)."""
    reports: dict[str, IntegrityReport] = {}
    for run_id in run_ids:
        run_dir = dirs.get(run_id)
        if run_dir is None:
            continue
        try:
            reports[run_id] = check_run(run_dir)
        except (RebenchError, OSError, ValueError, KeyError, TypeError) as exc:
            reports[run_id] = IntegrityReport(run_id, (Flag(
                "unreadable-record", Severity.MEDIUM, "the run's record could not be read",
                Evidence(excerpt=str(exc)[:200]), "tampering with the run record"),))
    return reports


def exclude_flagged(table: RunTable, reports: Mapping[str, IntegrityReport],
                    at_least: Severity) -> tuple[RunTable, list[str]]:
    """The table without runs flagged `at_least` this severe, and their ids; each left-out
    run is named in the table's problems (the report shows them)."""
    excluded = [run.run_id for run in table.runs
                if run.run_id in reports and reports[run.run_id].flagged(at_least)]
    kept = tuple(run for run in table.runs if run.run_id not in excluded)
    problems = tuple(f"{run_id}: integrity flags of severity {at_least.value} or higher "
                     f"({reports[run_id].summary()}); run left out" for run_id in excluded)
    return replace(table, runs=kept, problems=table.problems + problems), excluded


@dataclass(frozen=True)
class ReportIntegrity:
    """The integrity part of `rebench report`: every run's flags and the runs left out."""

    reports: dict[str, IntegrityReport]
    excluded: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"excluded": list(self.excluded),
                "runs": {run_id: r.to_json() for run_id, r in self.reports.items()}}

    def html(self) -> str:
        from rebench.integrity.render import section_html

        return section_html(self.reports, self.labels, self.excluded)


def report_integrity(table: RunTable, runs_root: Path | None, runs_db: Path | None,
                     from_csv: bool, exclude: str | None) -> tuple[RunTable, ReportIntegrity]:
    """Check every run of a report (none for CSV data, which has no run records) and, with
    `exclude` (a severity), leave out the runs flagged at least that severe."""
    if from_csv:
        if exclude:  # say so: silently keeping every run would read as "none flagged"
            note = "CSV data has no run records: --exclude-flagged left out nothing"
            table = replace(table, problems=(*table.problems, note))
        return table, ReportIntegrity({})
    reports = check_runs([run.run_id for run in table.runs], run_dirs(runs_root, runs_db))
    labels = {run.run_id: f"{run.env_id} · {run.agent}" for run in table.runs}
    excluded: list[str] = []
    if exclude:
        table, excluded = exclude_flagged(table, reports, Severity(exclude))
    return table, ReportIntegrity(reports, tuple(excluded), labels)
