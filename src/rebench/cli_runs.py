"""`rebench run`, `runs`, `show`: attempts of agents at environments."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click
from rich.table import Table

from rebench.cli_common import fmt_number
from rebench.cli_tables import (
    RunRow,
    anchors_text,
    print_log,
    print_run_notes,
    print_runs,
)

__all__ = ["RunRow", "discard_unstarted_runs", "print_runs", "register_run_commands"]
from rebench.harness.records import RunMark as RunMarkChoices

if TYPE_CHECKING:
    from rebench.agents.base import Agent
    from rebench.core.spec import EnvironmentSpec
    from rebench.harness.records import RunUsage
    from rebench.harness.run import Run
    from rebench.harness.run_values import RunCost


def register_run_commands(group: click.Group) -> None:
    """run, runs, show, mark, resume, verify (`batch` is cli_batch's, named lazily)."""
    for command in (run, runs, show, mark, resume, verify):
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
    """Run one attempt of AGENT at ENV_ID and print its normalized score. Ctrl-C stops the
    run as `interrupted` (not counted in reports); `rebench resume RUN` continues it."""
    from rebench.agents.base import make_agent
    from rebench.cli_common import console, resolve_isolation
    from rebench.core.discovery import load_spec
    from rebench.core.duration import parse_duration
    from rebench.core.errors import RebenchError
    from rebench.core.paths import runs_root
    from rebench.harness.index import ensure_runs_root
    from rebench.harness.run import create_run
    from rebench.harness.workspace import require_prepared

    try:
        budget_s = parse_duration(budget) if budget else None
    except ValueError as exc:
        raise RebenchError(str(exc)) from None
    the_agent = make_agent(agent)
    root = ensure_runs_root(runs_root())
    spec = load_spec(env_id)
    require_solution(spec, agent)  # before any run folder exists
    require_prepared(spec, spec.profile(profile))
    iso = resolve_isolation(isolation)
    with discard_unstarted_runs(root):
        the_run = create_run(env_id, profile, agent, budget_s, iso, seed=seed, root=root)
    console.print(f"run {the_run.record.run_id} in {the_run.run_dir}")
    _drive(the_run, the_agent)


def require_solution(spec: EnvironmentSpec, agent: str) -> None:
    """AgentError for `--agent reference|expert` at an environment without that solution
    (restricted_mlm has no expert), before a run is created rather than as a traceback
    inside it."""
    from rebench.agents.base import UnknownAgentError

    if agent in ("reference", "expert") and agent not in spec.solutions:
        named = sorted(n for n in spec.solutions if n != "starting")
        raise UnknownAgentError(
            f"{spec.id} has no {agent} solution (it has: {', '.join(named) or 'none'}); "
            f"agents: start, {', '.join([*named, 'replay:FILE', 'human', 'inspect:MODEL'])}")


@contextlib.contextmanager
def discard_unstarted_runs(root: Path) -> Iterator[None]:
    """If the body raises, remove the run folders it left without a run.json (a run whose
    creation failed half-way is no run: it must not linger as an empty folder)."""
    import shutil

    before = {p.name for p in root.iterdir()} if root.is_dir() else set()
    try:
        yield
    except BaseException:
        for path in root.iterdir() if root.is_dir() else ():
            if path.name not in before and path.is_dir() and not (path / "run.json").exists():
                shutil.rmtree(path, ignore_errors=True)
        raise


def _drive(the_run: Run, the_agent: Agent) -> None:
    """Execute the run and print its log and score; on Ctrl-C, SIGTERM or SIGHUP record it
    as interrupted, end the processes it started (the scorer among them) and say how to
    resume."""
    from rebench.cli_common import console, out
    from rebench.cli_progress import EventFollower, Ticker
    from rebench.harness.driver import execute_run

    record = the_run.record
    # The human agent owns the terminal: no spinner or progress lines over its shell.
    ticker = (contextlib.nullcontext() if the_agent.name == "human"
              else Ticker(console, f"{record.agent} working on {record.env_id} "
                          f"({record.profile}, budget {record.budget_s:.0f} s)",
                          watch=EventFollower(the_run.run_dir / "events.jsonl")))
    try:
        with ticker:
            score = execute_run(the_run, the_agent)
    except KeyboardInterrupt as exc:
        _interrupted(the_run, exc)
    print_log(the_run.run_dir)
    out.print(f"[bold]{record.env_id}[/] {record.agent}: normalized score {score:.3f} "
              f"(run {record.run_id})")
    print_run_notes(the_run)


def _interrupted(the_run: Run, exc: KeyboardInterrupt) -> NoReturn:
    """Record the run as interrupted, end its child processes, tell how to resume, exit
    130 (Ctrl-C) or 128 + the signal (SIGTERM: 143)."""
    import os
    import signal
    import sys

    from rebench.cli_common import console
    from rebench.cli_progress import exit_status, signal_name
    from rebench.harness.interrupt import end_child_processes, mark_interrupted
    from rebench.harness.lifecycle import events_for

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # a second signal must not cut this short
    run_id = the_run.record.run_id
    why = f"interrupted ({signal_name(exc)})"
    if mark_interrupted(the_run.record, the_run.working_s(), why):
        the_run.save()
        events_for(the_run).emit("note", text=f"run {why}", fsync=True)
        console.print(f"[yellow]interrupted[/] ({signal_name(exc)}): run {run_id} is not "
                      f"finished; resume with `rebench resume {run_id}`", highlight=False,
                      soft_wrap=True)
    else:
        console.print(f"[yellow]interrupted[/]: run {run_id} had already finished",
                      highlight=False, soft_wrap=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # Then end the scorer and leave at once: a scoring thread woken by its killed scorer
    # must not get to log a score.
    end_child_processes()
    os._exit(exit_status(exc))


@click.command()
@click.argument("run_ref")
def resume(run_ref: str) -> None:
    """Continue an unfinished run (interrupted, or its harness died) with its remaining
    budget; also starts a created run that never ran (what `batch` does for each attempt)."""
    from rebench.agents.base import make_agent
    from rebench.cli_common import console
    from rebench.harness.resume import reopen_for_resume

    the_run = reopen_for_resume(run_ref)
    record = the_run.record
    the_agent = make_agent(record.agent)
    console.print(f"resuming {record.run_id}: {the_run.time_left_s():.0f} s of "
                  f"{record.budget_s:.0f} s left, {len(the_run.entries())} score(s) logged")
    _drive(the_run, the_agent)


@click.command()
@click.argument("run_ref")
def verify(run_ref: str) -> None:
    """Check a run: the score log's hash chain, snapshots, clocks, events, final score."""
    from rebench.cli_common import out
    from rebench.core.errors import RunError
    from rebench.harness.resume import verify_run

    report = verify_run(run_ref)
    if not report.ok:
        raise RunError(f"run {report.run_id} does not verify:\n  " + "\n  ".join(report.problems))
    out.print(f"run {report.run_id}: OK ({report.entries} scores, {report.events} events, "
              "hash chain intact)")


@click.command()
@click.option("--env", "env_id", default=None, help="only this environment")
@click.option("--limit", default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per line, every field")
def runs(env_id: str | None, limit: int, as_json: bool) -> None:
    """List runs recorded in the run index (newest first). Every column is printed when the
    output is piped; a narrow terminal gets two lines per run instead of fewer columns."""
    from dataclasses import asdict

    from rebench.cli_common import out
    from rebench.core.errors import RunError
    from rebench.core.paths import runs_root
    from rebench.harness.index import index_path, list_runs
    from rebench.harness.records import load_mark

    root = runs_root()
    if not root.is_dir():
        raise RunError(f"no runs folder {root} (runs go where $REBENCH_RUNS says, default "
                       "./runs; `rebench run` makes the first)")
    rows = [RunRow.of(r, load_mark(d)) for r, d in list_runs(index_path(root))
            if env_id is None or r.env_id == env_id]
    if as_json:
        for row in rows[:limit]:
            click.echo(json.dumps(asdict(row)))
        return
    out.print(f"runs in {root}" + (f" ({len(rows) - limit} older not shown)"
                                   if len(rows) > limit else "")
              + ("" if rows else ": none yet"), highlight=False, soft_wrap=True)
    print_runs(out, rows[:limit])


@click.command()
@click.argument("run_ref")
@click.argument("mark", type=click.Choice([m.value for m in RunMarkChoices]))
@click.option("--reason", "--why", "reason", default="",
              help="why (kept in mark.json; shown in the report's notes)")
def mark(run_ref: str, mark: str, reason: str) -> None:
    """Mark run RUN_REF as practice or aborted (left out of reports by default), hacked (kept
    with its evidence; reports count it as `--hacks` says, a failure by default), or ok
    (counted again). The mark, who set it, when, and the marks it replaced are kept in the
    run's mark.json; the run itself is not changed."""
    from datetime import UTC, datetime

    from rebench.cli_common import out
    from rebench.core.errors import RunError
    from rebench.core.paths import runs_root
    from rebench.harness.records import OperatorMark, RunMark, save_mark

    run_dir = Path(run_ref) if Path(run_ref).is_dir() else runs_root() / run_ref
    if not (run_dir / "run.json").is_file():
        raise RunError(f"no run {run_ref!r} under {runs_root()}")
    if mark == RunMark.HACKED.value and not reason.strip():
        raise RunError("say why a run is marked hacked: --why TEXT (kept with the run)")
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        save_mark(run_dir, OperatorMark(RunMark(mark), reason, stamp, _operator()))
    except OSError as exc:
        raise RunError(f"cannot write the mark of {run_dir.name}: {exc}") from None
    verdict = {"ok": "counted in reports",
               "hacked": "kept with its evidence; reports count it as a failure by default "
                         "(rebench report --hacks count|exclude)"}.get(
        mark, "left out of reports by default")
    out.print(f"run {run_dir.name} marked {mark}: {verdict}", highlight=False)


def _operator() -> str:
    """The login name of whoever marks a run ("" where the system cannot say)."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""


def usage_lines(usage: RunUsage | None) -> list[tuple[str, str]]:
    """`rebench show`'s lines for what a run used of the machine (records.RunUsage)."""
    if usage is None:
        return []
    agent = ("not counted (no process group with CPU accounting: local isolation)"
             if usage.agent_cpu_s is None else f"{usage.agent_cpu_s:.1f} s")
    return [("agent cpu", agent),
            ("scoring", f"{usage.scoring_cpu_s:.1f} cpu s, {usage.scoring_wall_s:.1f} wall s "
                        f"over {usage.scorings} scores"),
            ("gpu", "not measured")]


def cost_lines(cost: RunCost | None) -> list[tuple[str, str]]:
    """`rebench show`'s lines for a run's cost (records.RunCost): tokens per model, then
    dollars or the models the price table lacks."""
    if cost is None:
        return []
    lines = []
    for model, counts in cost.tokens.items():
        cached = counts.get("input_tokens_cache_read", 0)
        lines.append((f"tokens {model}", f"input {counts.get('input_tokens', 0):,}, output "
                      f"{counts.get('output_tokens', 0):,}, cache read {cached:,}"))
    if cost.error:
        lines.append(("cost", f"unknown: {cost.error}"))
    elif cost.dollars is not None:
        lines.append(("cost", f"${cost.dollars:.4f} (prices: {cost.prices_from})"))
    else:
        lines.append(("cost", "unknown: no price for " + ", ".join(cost.unpriced)
                      + " (add it to the price table: docs/inspect.md)"))
    return lines


@click.command()
@click.argument("run_ref")
@click.option("--json", "as_json", is_flag=True, help="run record and score log as JSON")
def show(run_ref: str, as_json: bool) -> None:
    """Show one run (id or directory) with its score log."""
    from rebench.cli_common import out
    from rebench.harness.records import load_mark
    from rebench.harness.run import open_run
    from rebench.integrity.cli import show_json, show_section

    the_run = open_run(run_ref)
    operator_mark = load_mark(the_run.run_dir)
    if as_json:
        click.echo(json.dumps({
            "run": the_run.record.to_json(),
            "mark": operator_mark.to_json() if operator_mark else None,
            "score_log": [e.to_json() for e in the_run.entries()],
            "integrity": show_json(the_run.run_dir),
        }, default=str))
        return
    record = the_run.record
    table = Table(title=f"run {record.run_id}", show_header=False)
    for key in ("env_id", "env_version", "profile", "agent", "seed", "budget_s", "hardware",
                "isolation", "created_at", "finished_at", "working_s_used", "note"):
        table.add_row(key, str(getattr(record, key)))
    table.add_row("status", record.status.value)
    table.add_row("outcome", record.outcome.value if record.outcome else "-")
    table.add_row("valid submissions",
                  "-" if record.valid_rate is None else f"{record.valid_rate:.0%}")
    if operator_mark is not None:
        table.add_row("mark", f"{operator_mark.mark.value} {operator_mark.reason}".strip())
    table.add_row("anchors", anchors_text(record.anchors))
    table.add_row("score", fmt_number(record.final_normalized))
    for key, value in cost_lines(record.cost) + usage_lines(record.usage):
        table.add_row(key, value)
    out.print(table)
    print_log(the_run.run_dir)
    print_run_notes(the_run, out, with_anchors=False)  # the table has the anchors
    show_section(the_run.run_dir, out)
