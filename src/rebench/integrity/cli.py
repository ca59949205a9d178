"""`rebench integrity RUN`, and the integrity section of `rebench show`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from rebench.core.errors import RunError
from rebench.integrity.engine import Monitor, check_run
from rebench.integrity.flags import IntegrityReport, Severity
from rebench.integrity.render import print_report

SEVERITIES = [s.value for s in Severity]


def resolve_run_dir(run_ref: str) -> Path:
    """A run directory from a run id (under the runs root) or a path."""
    from rebench.core.paths import runs_root

    run_dir = Path(run_ref) if Path(run_ref).is_dir() else runs_root() / run_ref
    if not (run_dir / "run.json").is_file():
        raise RunError(f"no run {run_ref!r} under {runs_root()}")
    return run_dir


def show_section(run_dir: Path, console: Console) -> None:
    """What `rebench show` prints under the score log."""
    print_report(check_run(run_dir), console)


def show_json(run_dir: Path) -> dict[str, object]:
    """What `rebench show --json` adds under "integrity"."""
    return check_run(run_dir).to_json()


@click.command("integrity")
@click.argument("run_ref")
@click.option("--json", "as_json", is_flag=True, help="print the report as one JSON object")
@click.option("--monitor", "monitor_model", default=None, metavar="MODEL",
              help="also let this Inspect model read the transcript and add its own flags "
              "(e.g. openai/gpt-4o; needs the network and the inspect extra)")
@click.option("--fail-on", type=click.Choice(SEVERITIES), default=None,
              help="exit with status 1 when a flag of this severity or worse is raised")
def integrity(run_ref: str, as_json: bool, monitor_model: str | None,
              fail_on: str | None) -> None:
    """Flags of hack attempts in one run's record (id or directory)."""
    monitor: Monitor | None = None
    if monitor_model:
        from rebench.integrity.monitor import ModelMonitor

        monitor = ModelMonitor(monitor_model)
    report: IntegrityReport = check_run(resolve_run_dir(run_ref), monitor)
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        print_report(report, Console())
    if fail_on and report.flagged(Severity(fail_on)):
        sys.exit(1)
