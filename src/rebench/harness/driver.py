"""Drive one attempt: initial score, the agent's turn, final score, record."""

from __future__ import annotations

import traceback

from rebench.agents.base import Agent
from rebench.harness.records import RunStatus
from rebench.harness.run import Run, now_iso
from rebench.harness.session import Session


def execute_run(run: Run, agent: Agent) -> float:
    """Run `agent` on `run` and return the run's aggregated normalized score.

    The starting solution is scored at t=0 (unless the log already has entries, e.g. on
    resume); an agent that raises loses nothing: the error is noted and the final score
    runs as usual.
    """
    run.record.status = RunStatus.RUNNING
    run.save()
    if not run.entries():
        run.score("initial")
    session = Session(run)
    try:
        agent.act(session)
    except Exception as exc:  # the agent's failure is part of the run, not a harness crash
        run.record.note = f"agent raised {type(exc).__name__}: {exc}"
        run.record.extra["agent_traceback"] = traceback.format_exc()[-4000:]
    finally:
        session.close()
    return finish_run(run)


def finish_run(run: Run) -> float:
    """Force the final official score and close the record."""
    run.record.working_s_used = round(run.working_s(), 3)
    run.score("final")
    run.record.status = RunStatus.FINISHED
    run.record.finished_at = now_iso()
    run.record.final_normalized = run.aggregate_normalized()
    run.save()
    return run.record.final_normalized
