"""`rebench batch`: the attempts of a batch file, here (a few at a time) or on a Ray cluster,
with a progress bar on a terminal and progress lines in a log."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from rebench.cli_common import fmt_number
from rebench.cli_runs import discard_unstarted_runs, require_solution
from rebench.cli_tables import print_outcomes

if TYPE_CHECKING:
    from rebench.harness.batch import BatchJob, BatchOutcome


@click.command()
@click.argument("spec_file", type=click.Path(path_type=Path), required=False)
@click.option("--isolation", type=click.Choice(["auto", "bwrap", "local"]), default="auto",
              show_default=True)
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
              help="run on a Ray cluster: auto, host:port, ray://host:port, or local "
                   "(docs/scale-out.md)")
@click.option("--resume", "resume_id", default=None, metavar="BATCH_ID",
              help="pick up a Ray batch after a driver restart (with --ray)")
def batch(spec_file: Path | None, isolation: str, ray_address: str | None,
          resume_id: str | None) -> None:
    """Run the attempts of a batch file (environments x agents x seeds x budgets), a few at
    a time, each GPU held by one attempt at a time; every run lands in the index. With
    --ray, every attempt is a task on a Ray cluster and its run folder comes back here."""
    from rebench.cli_common import console, out, resolve_isolation
    from rebench.core.errors import RebenchError

    if ray_address is not None:
        from rebench.scale.cli import ray_batch_cli

        if isolation == "local":
            resolve_isolation("local")  # the warning; each node resolves its own sandbox
        ray_batch_cli(spec_file, isolation, ray_address, resume_id, console, out)
        return
    if resume_id is not None or spec_file is None:
        raise RebenchError("give a batch file; --resume BATCH_ID needs --ray")
    _local_batch(spec_file, isolation)


def _local_batch(spec_file: Path, isolation: str) -> None:
    """The batch on this machine; Ctrl-C, SIGTERM or SIGHUP interrupt its running attempts
    and start no more (each resumes with `rebench resume`)."""
    import threading

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from rebench.agents.base import make_agent
    from rebench.cli_common import console, out, resolve_isolation
    from rebench.cli_progress import NotStarted, Ticker, batch_stop_signals, batch_summary
    from rebench.core.errors import RunError
    from rebench.core.paths import runs_root
    from rebench.harness.batch import load_batch_spec, run_batch
    from rebench.harness.index import ensure_runs_root

    spec = load_batch_spec(spec_file, make_agent=make_agent)
    _require_batch_prepared(spec.jobs)
    iso = resolve_isolation(isolation)
    root = ensure_runs_root(runs_root())
    console.print(f"{len(spec.jobs)} attempts, {spec.concurrency} at a time"
                  + (f", GPUs {list(spec.gpu_ids)}" if spec.gpu_ids else ""))
    # The bar on a terminal; the ticker's lines (every $REBENCH_PROGRESS_S) in a log too.
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as progress, \
            Ticker(console, "batch started", spinner=False) as ticker:
        task = progress.add_task("batch", total=len(spec.jobs))

        stopping = threading.Event()
        states: dict[str, str] = {}

        def update(outcome: BatchOutcome) -> None:
            if stopping.is_set() and outcome.state == "running":
                raise NotStarted(outcome.run_id)  # stopped: start no more attempts
            states[outcome.run_id] = outcome.state
            if outcome.state in ("finished", "failed"):
                progress.advance(task)
            # soft_wrap: the terminal wraps a long id, so a copy of it is still one id
            progress.console.print(f"{outcome.state:>8} {outcome.run_id} score "
                                   f"{fmt_number(outcome.final_normalized)}",
                                   soft_wrap=True, highlight=False)
            ticker.quiet_step(batch_summary(states, len(spec.jobs)))

        try:
            with discard_unstarted_runs(root), batch_stop_signals(stopping):
                outcomes = run_batch(spec, iso, root, update)
        except KeyboardInterrupt:
            left = [run_id for run_id, state in states.items() if state != "finished"]
            console.print(f"[yellow]batch stopped[/]: {len(left)} attempt(s) not finished; "
                          "each resumes with `rebench resume RUN`: " + " ".join(left),
                          highlight=False, soft_wrap=True)
            raise
    print_outcomes(out, outcomes)
    failed = [o for o in outcomes if o.state != "finished"]
    if failed:
        raise RunError(f"{len(failed)} of {len(outcomes)} attempts failed; see harness.log "
                       "in their run directories")


def _require_batch_prepared(jobs: tuple[BatchJob, ...]) -> None:
    """NotPreparedError before any attempt of the batch is created."""
    from rebench.core.discovery import load_spec
    from rebench.harness.workspace import require_prepared

    for env_id, profile in sorted({(j.env_id, j.profile) for j in jobs}):
        spec = load_spec(env_id)
        for agent in sorted({j.agent for j in jobs if j.env_id == env_id}):
            require_solution(spec, agent)
        require_prepared(spec, spec.profile(profile))
