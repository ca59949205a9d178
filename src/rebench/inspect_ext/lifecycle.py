"""Starting and finishing the rebench run behind one Inspect sample.

The run's phases are harness.lifecycle.RunLifecycle's, as for `rebench run`; here they are
split so that Inspect's sandbox lifecycle can call them (sample_init begins, the scorer
finishes, a cancelled eval abandons).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rebench.core.errors import RebenchError
from rebench.harness.costs import record_cost
from rebench.harness.lifecycle import RunLifecycle, finish_run
from rebench.harness.records import RunStatus
from rebench.harness.run import Run, create_run
from rebench.harness.run_values import INSPECT_SAMPLE_FIELDS, InspectLink
from rebench.harness.session import Session
from rebench.sandbox import Isolation
from rebench.sandbox import resolve_isolation as resolve

logger = logging.getLogger(__name__)


class RunConfig(BaseModel, frozen=True):
    """The `rebench` sandbox's config: a new run (env_id, profile, ...) or an attached one.

    `budget_s` None means the profile's default budget; `attach` is the id of a run whose
    session a rebench driver registered with `sandbox.attach_session`.
    """

    env_id: str = ""
    profile: str = "cpu"
    budget_s: float | None = None
    isolation: str = "auto"
    seed: int = 0
    attach: str | None = None


@dataclass(frozen=True)
class RunSummary:
    """What the Inspect score reports of a finished run."""

    run_id: str
    run_dir: str
    normalized: float
    raw_scores: list[float | None]
    score_log: list[dict[str, Any]]
    anchors: dict[str, Any]

    def metadata(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_dir": self.run_dir,
            "raw_scores": self.raw_scores,
            "score_log": self.score_log,
            "anchors": self.anchors,
        }


def resolve_isolation(choice: str) -> Isolation:
    """`auto`/`bwrap`: bubblewrap, refusing to fall back silently; `local`: no sandbox
    (sandbox.resolve_isolation)."""
    try:
        isolation = resolve(choice)
    except ValueError as exc:
        raise RebenchError(str(exc)) from None
    if isolation is Isolation.LOCAL:
        logger.warning("isolation=local runs the model's commands without a sandbox")
    if isolation is None:
        raise RebenchError(
            "bubblewrap (bwrap) is not available, so the model's commands cannot be "
            "sandboxed: install it, or pass -T isolation=local to run without isolation"
        )
    return isolation


def inspect_context() -> InspectLink:
    """Where this sample lives in Inspect (eval id, log file, model), for the run record.

    Uses Inspect's active-sample record (not public API): best effort, empty when absent;
    a field Inspect does not have is None, one of another type its text.
    """
    try:
        from inspect_ai.log._samples import sample_active
    except ImportError:
        return InspectLink()
    active = sample_active()
    if active is None:
        return InspectLink()
    context: dict[str, Any] = {}
    for name in INSPECT_SAMPLE_FIELDS:
        value = getattr(active, name, None)
        if name == "epoch":
            context[name] = value if isinstance(value, int) else None
        else:
            context[name] = None if value is None else str(value)
    location = context["log_location"]
    if location is not None and "://" not in location:
        context["log_location"] = str(Path(location).resolve())
    return InspectLink(**context, written=INSPECT_SAMPLE_FIELDS)


def start_session(config: RunConfig) -> RunLifecycle:
    """Create the run for one sample and begin it as `rebench run` does (RunLifecycle: the
    harness lock, the start event, running status, the t=0 score in the background once
    its snapshot exists, the session, agent_start), with a clock heartbeat while the
    session is open. The lifecycle's `session` is the sample's sandbox."""
    context = inspect_context()
    model = context.model
    agent = f"inspect:{model}" if model else "inspect"
    run = create_run(
        config.env_id, config.profile, agent, config.budget_s,
        resolve_isolation(config.isolation), seed=config.seed,
    )
    run.record.extra.inspect = context
    life = RunLifecycle(run, agent, heartbeat=True)
    life.begin()
    return life


def summarize(run: Run) -> RunSummary:
    """The run's aggregated normalized score (its final one once finished) and score log."""
    entries = run.entries()
    normalized = run.record.final_normalized
    if normalized is None:
        normalized = run.aggregate_normalized()
    return RunSummary(
        run_id=run.record.run_id,
        run_dir=str(run.run_dir),
        normalized=normalized if math.isfinite(normalized) else 0.0,
        raw_scores=[e.raw if e.valid else None for e in entries],
        score_log=[e.to_json() for e in entries],
        anchors=run.record.anchors.to_json(),
    )


def finish_session(session: Session, life: RunLifecycle | None,
                   usage: Mapping[str, Any] | None = None) -> RunSummary:
    """The forced final score and the run's summary; `usage` (the sample's model usage,
    per model) is recorded as the run's cost first.

    An owned session (`life`, from `start_session`) ends its turn and is finished here. An
    attached one (None) belongs to a rebench driver: when the agent ends in time its turn
    is ended through the session (the driver's lifecycle: agent_end before the final
    score, as on every path) and the run finished here (the driver's own finish then
    finds it finished); not after the driver's hard stop, when the driver forces the
    final score itself.
    """
    run = session.run
    if usage:
        record_cost(run, session.events, usage)
    if life is not None:
        life.end_turn()
        life.finish()
    elif run.record.status is not RunStatus.FINISHED and not session.expired:
        session.end_turn()
        finish_run(run, session.events)
    return summarize(run)


def interrupt_session(life: RunLifecycle) -> None:
    """Record the run as interrupted (the eval was cancelled): no final score, so the
    report leaves it out instead of counting a cut-short attempt as a full one."""
    from rebench.harness.interrupt import mark_interrupted

    run = life.run
    try:
        with run.finish_lock:
            if mark_interrupted(run.record, run.working_s(),
                                "interrupted (Inspect eval cancelled)"):
                run.save()
                life.events.emit("note", text="run interrupted (Inspect eval cancelled)",
                                 fsync=True)
    finally:
        life.abandon()
