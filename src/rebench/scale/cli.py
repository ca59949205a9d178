"""`rebench batch --ray ADDRESS` and `rebench batch --resume BATCH_ID --ray ADDRESS`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.live import Live

from rebench.core.errors import RebenchError, RunError
from rebench.core.paths import runs_root
from rebench.scale.attempt import ScaleError
from rebench.scale.store import AttemptRow, AttemptState
from rebench.scale.view import render, summary


def _require_ray() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ScaleError("--ray needs Ray: pip install 'rebench[ray]'") from None


def ray_batch_cli(spec_file: Path | None, isolation: str, address: str, resume: str | None,
                  console: Console, out: Console) -> None:
    """Start (or pick up) a batch on a Ray cluster with a live view; RunError if any
    attempt failed."""
    from rebench.agents.base import make_agent
    from rebench.harness.batch import load_batch_spec
    from rebench.scale.driver import RayOptions, make_plan, resume_ray_batch, run_ray_batch

    _require_ray()
    root = runs_root()
    options = RayOptions(address=address)
    if resume is not None:
        batch_id = resume
        start = None
    else:
        if spec_file is None:
            raise RebenchError("give a batch file, or --resume BATCH_ID")
        spec = load_batch_spec(spec_file, make_agent=make_agent, cluster=True)
        plan = make_plan(spec, isolation, source=str(spec_file))
        batch_id = plan.batch_id
        start = plan
    console.print(f"batch {batch_id} on Ray at {address}; runs land in {root} "
                  f"(pick up after a driver restart: rebench batch --resume {batch_id} "
                  f"--ray {address})")
    with Live(render(batch_id, []), console=console, refresh_per_second=2) as live:

        def update(rows: Sequence[AttemptRow]) -> None:
            live.update(render(batch_id, rows))

        if start is not None:
            rows = run_ray_batch(start, root, options, update)
        else:
            rows = resume_ray_batch(batch_id, root, options, update)
    out.print(summary(rows))
    failed = [r for r in rows if r.state is not AttemptState.FINISHED]
    if failed:
        raise RunError(f"{len(failed)} of {len(rows)} attempts did not finish; see the "
                       "table above and harness.log in their run directories")
