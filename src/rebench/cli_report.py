"""`rebench report`: the analysis as an HTML page, a terminal table, or JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

import click

from rebench.analysis.report import Report, ReportSettings, build_reports, reports_json
from rebench.analysis.sources import LeftOut, from_csv, from_index, from_run_dirs, write_csv
from rebench.analysis.table import RunTable
from rebench.analysis.units import parse_duration
from rebench.core.errors import RebenchError
from rebench.core.paths import runs_root
from rebench.core.paths import runs_root as runs_root_default


def _load(runs_root_opt: Path | None, runs_db: Path | None, csv_file: Path | None,
          include: frozenset[LeftOut] = frozenset()) -> RunTable:
    chosen = [x for x in (runs_db, csv_file) if x is not None]
    if len(chosen) > 1:
        raise click.UsageError("use at most one of --runs-db and --from-csv")
    if csv_file is not None:
        return from_csv(csv_file)
    if runs_db is not None:
        return from_index(runs_db, include=include)
    return from_run_dirs(runs_root_opt or runs_root(), include=include)


def _budgets(text: str | None) -> tuple[float, ...]:
    if not text:
        return ()
    return tuple(parse_duration(part) for part in text.split(",") if part.strip())


@click.command("report")
@click.option("--runs-root", type=click.Path(path_type=Path, file_okay=False),
              help="Folder of run directories (default: $REBENCH_RUNS or ./runs).")
@click.option("--runs-db", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="SQLite run index to read runs from instead of scanning run directories.")
@click.option("--from-csv", "csv_file", type=click.Path(path_type=Path, dir_okay=False,
              exists=True), help="CSV of external score events (env, agent, run_id, "
              "time_limit_s, working_s, normalized; one row per score event).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Folder for report.html, report.json and events.csv [default: report/ in "
              "the runs folder ($REBENCH_RUNS or ./runs); with --json: none, unless given].")
@click.option("--budget", "focus", help="Total budget of the per-environment view, e.g. 8h "
              "(default: the longest time limit in the data).")
@click.option("--budgets", help="Comma-separated total budgets of the curve, e.g. 30m,2h,8h,32h "
              "(default: each time limit x 1, 2, 4, ... up to 4x the longest).")
@click.option("--bootstrap", "n_boot", type=click.IntRange(100, 100_000), default=1000,
              show_default=True, help="Bootstrap resamples for the 95% intervals.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--title", default="", help="A line under the page title, e.g. what the data is.")
@click.option("--include", "include", multiple=True,
              type=click.Choice([c.value for c in LeftOut]),
              help="Count runs of this kind, left out by default (repeatable): interrupted, "
              "crashed, early (human runs ended before 10% of their budget), practice, aborted.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the computed tables as one JSON object (no table; files only if "
              "--out is given too).")
@click.option("--exclude-flagged", "exclude_flagged", is_flag=False, flag_value="high",
              default=None, type=click.Choice(["low", "medium", "high"]),
              help="Leave out runs with integrity flags of this severity or worse "
              "(alone: high); see `rebench integrity`.")
@click.option("--hacks", "hacks", type=click.Choice(["fail", "count", "exclude"]),
              default="fail", show_default=True,
              help="How hacked runs count (marked `rebench mark RUN hacked`, or flagged high "
              "by the integrity rules): as failures (score 0), with their scores, or not at "
              "all. With fail, the report shows the count number beside it where they differ.")
def report(runs_root: Path | None, runs_db: Path | None, csv_file: Path | None,
           out: Path | None, focus: str | None, budgets: str | None, n_boot: int, seed: int,
           title: str, include: tuple[str, ...], as_json: bool,
           exclude_flagged: str | None, hacks: str) -> None:
    """Score@k over time budgets, per-environment scores, trajectories and human baselines;
    runs of each profile apart, the paper's human experts only beside gpu-profile runs.

    Runs that were interrupted, crashed, ended early (human) or marked practice or aborted
    (`rebench mark`) are left out and listed; --include counts them. Exit status 2 on an
    error (no runs to report, unreadable input, an --out folder that cannot be written)."""
    from rebench.integrity.hacks import (
        HackPolicy,
        apply_policy,
        differing,
        hacked_runs,
        hacks_html,
        hacks_json,
    )
    from rebench.integrity.runs import report_integrity, run_dirs

    policy = HackPolicy(hacks)
    try:
        table = _load(runs_root, runs_db, csv_file,
                      frozenset(LeftOut(c) for c in include))
        table, integrity = report_integrity(table, runs_root, runs_db, csv_file is not None,
                                            exclude_flagged)
        hacked = {} if csv_file is not None else hacked_runs(
            table, run_dirs(runs_root, runs_db), integrity.reports)
        settings = ReportSettings(_budgets(budgets), parse_duration(focus) if focus else None,
                                  n_boot, seed, title)
        _require_runs(table)
        result = build_reports(apply_policy(table, hacked, policy), settings)
        both_ways = differing(result, build_reports(
            apply_policy(table, hacked, HackPolicy.COUNT), settings)) if (
            hacked and policy is HackPolicy.FAIL) else []
        folder = None if as_json and out is None else _writable(
            out or (runs_root or runs_root_default()) / "report")
    except RebenchError as exc:
        raise ReportError(str(exc)) from None
    data = {**reports_json(result), "integrity": integrity.to_json(),
            "hacks": hacks_json(policy, hacked, both_ways)}
    if as_json:
        click.echo(json.dumps(data, indent=1, allow_nan=False))
    else:
        from rebench.analysis.terminal import print_report

        print_report(result)
    if folder is not None:
        try:
            (folder / "report.json").write_text(json.dumps(data, indent=1, allow_nan=False)
                                                + "\n")
            write_csv(table, folder / "events.csv")
            _write_html(result, folder / "report.html",
                        hacks_html(policy, hacked, both_ways) + integrity.html(), quiet=as_json)
        except OSError as exc:
            raise ReportError(f"cannot write the report into {folder}: "
                              f"{exc.strerror or exc}") from None


def _require_runs(table: RunTable) -> None:
    """ReportError when there is nothing at all (an empty report reads as a result); runs
    that were all left out still make a report: it lists them and why."""
    if table.runs or table.problems:
        return
    where = table.source or "the input"
    raise ReportError(f"no runs to report in {where} (make some with `rebench run`, or "
                      "point --runs-root, --runs-db or --from-csv at them)")


class ReportError(click.ClickException):
    """A one-line error with exit status 2 (as every `rebench` error), also when the
    command runs on its own (the example scripts call it outside the `rebench` group)."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)


def _writable(folder: Path) -> Path:
    """`folder`, created if needed; ReportError if it cannot be written."""
    for parent in (folder, *folder.parents):
        if parent.exists() and not parent.is_dir():
            raise ReportError(f"--out {folder}: {parent} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"--out {folder}: cannot create it ({exc.strerror or exc})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ReportError(f"--out {folder}: not writable")
    return folder


def _write_html(result: list[Report], path: Path, integrity: str = "", quiet: bool = False
                ) -> None:
    from rebench.analysis.html import render_html
    from rebench.analysis.plots import PlottingUnavailable, all_figures

    try:
        figures = [all_figures(part) for part in result]
    except PlottingUnavailable as exc:
        click.echo(f"warning: {exc}; the page has no figures", err=True)
        figures = [{} for _ in result]
    path.write_text(render_html(result, figures, integrity))
    if not quiet:  # with --json, stdout is the JSON object alone
        click.echo(f"wrote {path}")
    else:
        click.echo(f"wrote {path}", err=True)
