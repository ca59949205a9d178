"""`rebench run`, `runs`, `show`: attempts of agents at environments."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import click
from rich.table import Table


def fmt_number(x: float | None, digits: int = 3) -> str:
    """A number for a table cell; "-" for missing or non-finite values."""
    return "-" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def register_run_commands(group: click.Group) -> None:
    for command in (run, runs, show, resume, verify, batch, setup_sandbox):
        group.add_command(command)


@click.command()
@click.argument("env_id")
@click.option("--agent", "-a", required=True,
              help="start, reference, expert, replay:FILE, human, inspect:MODEL")
@click.option("--profile", "-p", default="cpu", show_default=True)
@click.option("--budget", "-b", default=None,
              help="time budget (90s, 30m, 8h, ...); default: the profile's")
@click.option("--seed", default=0, show_default=True)
@click.option("--isolation", type=click.Choice(["auto", "bwrap", "local"]), default="auto",
              show_default=True)
def run(env_id: str, agent: str, profile: str, budget: str | None, seed: int,
        isolation: str) -> None:
    """Run one attempt of AGENT at ENV_ID and print its normalized score."""
    from rebench.agents.base import make_agent
    from rebench.cli import console, out, resolve_isolation
    from rebench.core.duration import parse_duration
    from rebench.core.errors import RebenchError
    from rebench.harness.driver import execute_run
    from rebench.harness.run import create_run

    try:
        budget_s = parse_duration(budget) if budget else None
    except ValueError as exc:
        raise RebenchError(str(exc)) from None
    the_agent = make_agent(agent)
    iso = resolve_isolation(isolation)
    the_run = create_run(env_id, profile, agent, budget_s, iso, seed=seed)
    console.print(f"run {the_run.record.run_id} in {the_run.run_dir}")
    # The human agent owns the terminal: no spinner over its shell.
    status = (contextlib.nullcontext() if the_agent.name == "human"
              else console.status(f"{agent} working on {env_id} ({profile})"))
    with status:
        score = execute_run(the_run, the_agent)
    _print_log(the_run.run_dir)
    out.print(f"[bold]{env_id}[/] {agent}: normalized score {score:.3f} "
              f"(run {the_run.record.run_id})")


@click.command()
@click.argument("run_ref")
def resume(run_ref: str) -> None:
    """Continue an unfinished run (its harness died) with its remaining budget; also starts
    a created run that never ran (what `batch` does for each attempt)."""
    from rebench.agents.base import make_agent
    from rebench.cli import console, out
    from rebench.harness.driver import execute_run
    from rebench.harness.resume import reopen_for_resume

    the_run = reopen_for_resume(run_ref)
    record = the_run.record
    the_agent = make_agent(record.agent)
    console.print(f"resuming {record.run_id}: {the_run.time_left_s():.0f} s of "
                  f"{record.budget_s:.0f} s left, {len(the_run.entries())} score(s) logged")
    status = (contextlib.nullcontext() if the_agent.name == "human"
              else console.status(f"{record.agent} working on {record.env_id} "
                                  f"({record.profile})"))
    with status:
        score = execute_run(the_run, the_agent)
    _print_log(the_run.run_dir)
    out.print(f"[bold]{record.env_id}[/] {record.agent}: normalized score {score:.3f} "
              f"(run {record.run_id})")


@click.command()
@click.argument("run_ref")
def verify(run_ref: str) -> None:
    """Check a run: the score log's hash chain, snapshots, clocks, events, final score."""
    from rebench.cli import out
    from rebench.core.errors import RunError
    from rebench.harness.resume import verify_run

    report = verify_run(run_ref)
    if not report.ok:
        raise RunError(f"run {report.run_id} does not verify:\n  " + "\n  ".join(report.problems))
    out.print(f"run {report.run_id}: OK ({report.entries} scores, {report.events} events, "
              "hash chain intact)")


@click.command()
@click.argument("spec_file", type=click.Path(path_type=Path))
@click.option("--isolation", type=click.Choice(["auto", "bwrap", "local"]), default="auto",
              show_default=True)
def batch(spec_file: Path, isolation: str) -> None:
    """Run the attempts of a batch file (environments x agents x seeds x budgets), a few at
    a time, each GPU held by one attempt at a time; every run lands in the index."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from rebench.cli import console, out, resolve_isolation
    from rebench.core.errors import RunError
    from rebench.core.paths import runs_root
    from rebench.harness.batch import BatchOutcome, load_batch_spec, run_batch

    spec = load_batch_spec(spec_file)
    iso = resolve_isolation(isolation)
    console.print(f"{len(spec.jobs)} attempts, {spec.concurrency} at a time"
                  + (f", GPUs {list(spec.gpu_ids)}" if spec.gpu_ids else ""))
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console) as progress:
        task = progress.add_task("batch", total=len(spec.jobs))

        def update(outcome: BatchOutcome) -> None:
            if outcome.state in ("finished", "failed"):
                progress.advance(task)
            progress.console.print(f"{outcome.state:>8} {outcome.job.label()} "
                                   f"{outcome.run_id} {fmt_number(outcome.final_normalized)}")

        outcomes = run_batch(spec, iso, runs_root(), update)
    table = Table(title="batch")
    for col in ("run id", "attempt", "gpus", "state", "score"):
        table.add_column(col)
    for o in outcomes:
        table.add_row(o.run_id, o.job.label(), ",".join(map(str, o.gpus)) or "-", o.state,
                      fmt_number(o.final_normalized))
    out.print(table)
    failed = [o for o in outcomes if o.state != "finished"]
    if failed:
        raise RunError(f"{len(failed)} of {len(outcomes)} attempts failed; see harness.log "
                       "in their run directories")


@click.command("setup-sandbox")
@click.option("--no-install", is_flag=True, help="only check; never run apt-get")
def setup_sandbox(no_install: bool) -> None:
    """Make sure bubblewrap works here: install it (Debian/Ubuntu, as root) when missing, or
    say exactly what to do."""
    from rebench.cli import out
    from rebench.core.errors import RebenchError
    from rebench.sandbox.setup import ensure_bwrap

    result = ensure_bwrap(install=not no_install)
    if not result.ok:
        raise RebenchError(result.message + "; until then only --isolation local (no "
                           "sandbox) can run agents")
    out.print(result.message)


@click.command()
@click.option("--env", "env_id", default=None, help="only this environment")
@click.option("--limit", default=50, show_default=True)
def runs(env_id: str | None, limit: int) -> None:
    """List runs recorded in the run index."""
    from rebench.cli import out
    from rebench.core.paths import runs_root
    from rebench.harness.index import index_path, list_runs

    table = Table(title=f"runs in {runs_root()}")
    for col in ("run id", "env", "profile", "agent", "budget s", "status", "score"):
        # Run ids are what `show`, `resume` and `verify` take: never cut them.
        table.add_column(col, no_wrap=col == "run id", overflow="fold")
    rows = [r for r, _ in list_runs(index_path(runs_root()))
            if env_id is None or r.env_id == env_id]
    for record in rows[:limit]:
        table.add_row(record.run_id, record.env_id, record.profile, record.agent,
                      f"{record.budget_s:.0f}", record.status.value,
                      fmt_number(record.final_normalized))
    out.print(table)


@click.command()
@click.argument("run_ref")
@click.option("--json", "as_json", is_flag=True, help="run record and score log as JSON")
def show(run_ref: str, as_json: bool) -> None:
    """Show one run (id or directory) with its score log."""
    from rebench.cli import out
    from rebench.harness.run import open_run
    from rebench.integrity.cli import show_json, show_section

    the_run = open_run(run_ref)
    if as_json:
        click.echo(json.dumps({
            "run": the_run.record.to_json(),
            "score_log": [e.to_json() for e in the_run.entries()],
            "integrity": show_json(the_run.run_dir),
        }, default=str))
        return
    record = the_run.record
    table = Table(title=f"run {record.run_id}", show_header=False)
    for key in ("env_id", "env_version", "profile", "agent", "seed", "budget_s", "hardware",
                "isolation", "status", "created_at", "finished_at", "working_s_used", "note"):
        table.add_row(key, str(getattr(record, key)))
    table.add_row("anchors", json.dumps(record.anchors))
    table.add_row("score", fmt_number(record.final_normalized))
    out.print(table)
    _print_log(the_run.run_dir)
    show_section(the_run.run_dir, out)


def _print_log(run_dir: object) -> None:
    from pathlib import Path

    from rebench.cli import out
    from rebench.harness.score_log import read_log

    entries = read_log(Path(str(run_dir)) / "protected" / "score_log.jsonl")
    table = Table(title="score log")
    for col in ("#", "kind", "working s", "raw", "normalized", "valid", "message"):
        table.add_column(col)
    for e in entries:
        table.add_row(str(e.index), e.kind, f"{e.working_s:.1f}", fmt_number(e.raw, 4),
                      fmt_number(e.normalized), str(e.valid), json.dumps(e.message)[:80])
    out.print(table)
