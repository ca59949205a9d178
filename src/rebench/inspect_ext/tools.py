"""The tools an Inspect agent gets on a rebench task: bash, python, score, score_log.

bash and python are Inspect's own tools, executed by the `rebench` sandbox; score and
score_log talk to the run's session. What they show is what any rebench agent is shown:
the scorer's message, and the score only where the environment lets the agent see it.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from inspect_ai.tool import Tool, bash, python, tool
from inspect_ai.util import sandbox

from rebench.harness.records import ScoreEntry
from rebench.harness.session import OutOfTimeError, agent_view
from rebench.inspect_ext.sample_end import end_sample_at_deadline
from rebench.inspect_ext.sandbox import RebenchSandboxEnvironment


def agent_score_log(entries: list[ScoreEntry], visible: bool) -> list[dict[str, Any]]:
    """The score log as the agent may see it: no private details, no scores if hidden."""
    rows = []
    for entry in entries:
        row = agent_view(entry, visible)
        row["kind"] = entry.kind.value
        row["working_s"] = entry.working_s
        rows.append(row)
    return rows


def _environment() -> RebenchSandboxEnvironment:
    return sandbox().as_type(RebenchSandboxEnvironment)


def _dump(data: Any) -> str:
    return json.dumps(data, indent=1, default=str, allow_nan=False)


@tool(parallel=False)
def score() -> Tool:
    """Official scoring of the current solution (logged in the run's score log)."""

    async def execute() -> str:
        """Officially score the solution as it is now in the working directory.

        Every call is logged and counts: the run's result is the best (or, for some
        tasks, the last) valid score. Scoring takes a while; use it when a solution is
        ready, not to test ideas.

        Returns:
          The scorer's message (and the score where this task shows it), as JSON.
        """
        session = _environment().session
        try:
            view = await anyio.to_thread.run_sync(session.score)
        except OutOfTimeError:
            end_sample_at_deadline(session)
            return "No time left: the attempt is over."
        view["time_left_s"] = round(session.time_left())
        return _dump(view)

    return execute


@tool
def score_log() -> Tool:
    """The official scores of this attempt so far, as the agent may see them."""

    async def execute() -> str:
        """List the official scores of this attempt so far, oldest first.

        Returns:
          One JSON object per official score (index, kind, working seconds, valid,
          message, and the score where this task shows it).
        """
        session = _environment().session
        entries = await anyio.to_thread.run_sync(session.run.entries)
        return _dump(agent_score_log(entries, session.run.spec.score_visible_to_agent))

    return execute


def rebench_tools(timeout_s: int | None = None) -> list[Tool]:
    """bash and python in the run's sandbox (each call at most `timeout_s`, and never past
    the budget), score and score_log."""
    return [bash(timeout=timeout_s), python(timeout=timeout_s), score(), score_log()]
