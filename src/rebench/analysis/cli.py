"""`rebench report`: the analysis as an HTML page, a terminal table, or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from rebench.analysis.report import Report, ReportSettings, build_report, report_json
from rebench.analysis.sources import from_csv, from_index, from_run_dirs, write_csv
from rebench.analysis.table import RunTable
from rebench.analysis.units import parse_duration
from rebench.core.errors import RebenchError
from rebench.core.paths import runs_root


def _load(runs_root_opt: Path | None, runs_db: Path | None, csv_file: Path | None) -> RunTable:
    chosen = [x for x in (runs_db, csv_file) if x is not None]
    if len(chosen) > 1:
        raise click.UsageError("use at most one of --runs-db and --from-csv")
    if csv_file is not None:
        return from_csv(csv_file)
    if runs_db is not None:
        return from_index(runs_db)
    return from_run_dirs(runs_root_opt or runs_root())


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
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("report"),
              show_default=True, help="Folder for report.html, report.json and events.csv.")
@click.option("--budget", "focus", help="Total budget of the per-environment view, e.g. 8h "
              "(default: the longest time limit in the data).")
@click.option("--budgets", help="Comma-separated total budgets of the curve, e.g. 30m,2h,8h,32h "
              "(default: each time limit x 1, 2, 4, ... up to 4x the longest).")
@click.option("--bootstrap", "n_boot", type=click.IntRange(100, 100_000), default=1000,
              show_default=True, help="Bootstrap resamples for the 95% intervals.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--title", default="", help="A line under the page title, e.g. what the data is.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the computed tables as one JSON object (no HTML, no table).")
@click.option("--exclude-flagged", "exclude_flagged", is_flag=False, flag_value="high",
              default=None, type=click.Choice(["low", "medium", "high"]),
              help="Leave out runs with integrity flags of this severity or worse "
              "(alone: high); see `rebench integrity`.")
def report(runs_root: Path | None, runs_db: Path | None, csv_file: Path | None, out: Path,
           focus: str | None, budgets: str | None, n_boot: int, seed: int, title: str,
           as_json: bool, exclude_flagged: str | None) -> None:
    """Score@k over time budgets, per-environment scores, trajectories and human baselines."""
    from rebench.integrity.runs import report_integrity

    try:
        table = _load(runs_root, runs_db, csv_file)
        table, integrity = report_integrity(table, runs_root, runs_db, csv_file is not None,
                                            exclude_flagged)
        settings = ReportSettings(_budgets(budgets), parse_duration(focus) if focus else None,
                                  n_boot, seed, title)
        result = build_report(table, settings)
    except RebenchError as exc:
        raise click.ClickException(str(exc)) from None
    data = {**report_json(result), "integrity": integrity.to_json()}
    if as_json:
        click.echo(json.dumps(data, indent=1, allow_nan=False))
        return
    from rebench.analysis.terminal import print_report

    print_report(result)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    write_csv(table, out / "events.csv")
    _write_html(result, out / "report.html", integrity.html())


def _write_html(result: Report, path: Path, integrity: str = "") -> None:
    from rebench.analysis.html import render_html
    from rebench.analysis.plots import PlottingUnavailable, all_figures

    try:
        figures = all_figures(result)
    except PlottingUnavailable as exc:
        click.echo(f"warning: {exc}; the page has no figures", err=True)
        figures = {}
    path.write_text(render_html(result, figures, integrity))
    click.echo(f"wrote {path}")
