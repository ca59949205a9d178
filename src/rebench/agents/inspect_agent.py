"""`inspect:<provider/model>`: an LLM agent driven by Inspect AI on a rebench run.

The rebench driver owns the run (initial score, clock, final score); this agent hands its
session to Inspect's `rebench` sandbox and runs the environment's Inspect task with Inspect's
ReAct agent (or another Inspect solver). The Inspect log lands in the run directory, beside
`protected/`, out of the agent's sight: `inspect view --log-dir runs/<run_id>/inspect`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebench.agents.base import UnknownAgentError
from rebench.core.errors import RunError
from rebench.harness.run_values import InspectLink
from rebench.harness.session import Session

if TYPE_CHECKING:
    from inspect_ai.agent import Agent as InspectAgentType
    from inspect_ai.model import Model
    from inspect_ai.solver import Solver

INSPECT_LOG_DIR = "inspect"


class InspectAgent:
    """Runs an Inspect model (and by default Inspect's ReAct agent) on the session's run.

    `arg` is an Inspect model name (`openai/gpt-4o`, `anthropic/...`, `vllm/...`,
    `mockllm/model`). `model` overrides it with a ready Inspect Model (tests script
    `mockllm` this way); `solver` replaces the ReAct agent; `eval_args` go to
    `inspect_ai.eval` (e.g. message_limit, token_limit, model_args).
    """

    def __init__(
        self,
        arg: str,
        *,
        model: Model | None = None,
        solver: Solver | InspectAgentType | None = None,
        eval_args: Mapping[str, Any] | None = None,
        command_timeout_s: int | None = None,
    ) -> None:
        if not arg and model is None:
            raise UnknownAgentError("inspect agent needs a model: inspect:<provider/model>")
        self.model_name = arg or str(model)
        self.name = f"inspect:{self.model_name}"
        self.model = model
        self.solver = solver
        self.eval_args = dict(eval_args or {})
        self.command_timeout_s = command_timeout_s

    def act(self, session: Session) -> None:
        try:
            from inspect_ai import eval as inspect_eval

            from rebench.inspect_ext import attach_session, attached_task, detach_session
            from rebench.inspect_ext.offline import seed_tiktoken_cache
        except ImportError as exc:
            raise UnknownAgentError(
                f"the inspect agent needs the inspect extra (pip install 'rebench[inspect]'): "
                f"{exc}"
            ) from None
        seed_tiktoken_cache()
        run = session.run
        log_dir = run.run_dir / INSPECT_LOG_DIR
        run_id = attach_session(session)
        try:
            task = attached_task(session, self.solver, self.command_timeout_s)
            options: dict[str, Any] = {"display": "none", **self.eval_args}
            logs = inspect_eval(
                task, model=self.model or self.model_name, log_dir=str(log_dir), **options
            )
        finally:
            detach_session(run_id)
        log = logs[0]
        run.record.extra.inspect = InspectLink(
            model=self.model_name, status=log.status, log_location=log.location,
            eval_id=log.eval.eval_id, written=("model", "status", "log_location", "eval_id"),
        )
        run.save()
        if log.status != "success":
            message = log.error.message if log.error else log.status
            raise RunError(f"Inspect eval ended with status {log.status}: {message}")


def inspect_log_dir(run_dir: Path) -> Path:
    """Where the Inspect log of an `inspect:` run is written."""
    return run_dir / INSPECT_LOG_DIR
