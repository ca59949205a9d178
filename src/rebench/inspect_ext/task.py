"""rebench environments as Inspect tasks: one sample, one rebench run.

The sample's input is the environment's instructions; the tools are bash, python, score
and score_log in the run's sandbox; the default agent is Inspect's ReAct agent (any Inspect
solver or agent can replace it: `solver=` here, or `--solver` on `inspect eval`); the
working limit is the run's budget; the score is the run's aggregated normalized score, with
the raw scores and the score log in its metadata.
"""

from __future__ import annotations

from typing import Any

import anyio
from inspect_ai import Task
from inspect_ai.agent import Agent, AgentSubmit, react
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Solver, TaskState, use_tools
from inspect_ai.util import SandboxEnvironmentSpec, sandbox

from rebench.core.discovery import load_spec
from rebench.core.duration import parse_duration
from rebench.core.instructions import render_instructions
from rebench.harness.session import Session
from rebench.harness.workspace import require_prepared
from rebench.inspect_ext.deadline import deadline_watch
from rebench.inspect_ext.lifecycle import RunConfig
from rebench.inspect_ext.offline import seed_tiktoken_cache
from rebench.inspect_ext.sandbox import SANDBOX_NAME, RebenchSandboxEnvironment
from rebench.inspect_ext.tools import rebench_tools
from rebench.sandbox import ISOLATION_CHOICES

TOOLS_NOTE = """

## Tools

You work through tools: `bash` and `python` run in your working directory (each call is a
fresh process); `score` officially scores your solution as it is now and logs the result;
`score_log` lists the official scores so far; `submit` ends the attempt, after which the
solution is scored one last time. Your time budget is working time: when it runs out the
attempt ends and the solution is scored as it stands."""

SUBMIT = AgentSubmit(
    name="submit",
    description="End the attempt. Your solution is then scored one last time, as it stands; "
    "pass a short summary of what you did.",
)


@scorer(metrics=[mean(), stderr()])
def normalized_score() -> Scorer:
    """The run's aggregated normalized score (0 = starting solution, 1 = reference), after
    the forced final score; raw scores and the score log are in the metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        env = sandbox().as_type(RebenchSandboxEnvironment)
        summary = await anyio.to_thread.run_sync(env.finish, sample_usage())
        best = summary.normalized
        return Score(
            value=best,
            answer=state.output.completion[:2000] if state.output else None,
            explanation=f"run {summary.run_id}: normalized score {best:.3f} "
            f"({sum(r is not None for r in summary.raw_scores)} valid of "
            f"{len(summary.raw_scores)} official scores)",
            metadata=summary.metadata(),
        )

    return score


def sample_usage() -> dict[str, Any]:
    """This sample's model usage per model (Inspect's record, not public API: empty where
    it is absent)."""
    try:
        from inspect_ai.model._model import sample_model_usage

        return dict(sample_model_usage())
    except (ImportError, LookupError):
        return {}


def default_agent(command_timeout_s: int | None) -> Agent:
    """Inspect's ReAct agent with the rebench tools."""
    return react(tools=rebench_tools(command_timeout_s), submit=SUBMIT)


def _budget_seconds(budget: float | str | None, default_s: float) -> float:
    # `-T budget=600` arrives as an int, `-T budget=30m` as a str.
    return default_s if budget is None or budget == "" else parse_duration(str(budget))


def _build_task(
    name: str,
    instructions: str,
    config: RunConfig,
    budget_s: float,
    solver: Solver | Agent | None,
    command_timeout_s: int | None,
) -> Task:
    seed_tiktoken_cache()  # Inspect counts tokens with tiktoken before any model call
    return Task(
        name=name,
        dataset=[
            Sample(
                id=f"{config.env_id}-{config.profile}",
                input=instructions + TOOLS_NOTE,
                metadata={"env_id": config.env_id, "profile": config.profile},
            )
        ],
        setup=[use_tools(rebench_tools(command_timeout_s)), deadline_watch()],
        solver=solver if solver is not None else default_agent(command_timeout_s),
        scorer=normalized_score(),
        sandbox=SandboxEnvironmentSpec(SANDBOX_NAME, config),
        working_limit=max(1, round(budget_s)),
        metadata={"env_id": config.env_id, "profile": config.profile, "budget_s": budget_s},
    )


def rebench_task(
    env_id: str,
    profile: str = "cpu",
    budget: float | str | None = None,
    solver: Solver | Agent | None = None,
    isolation: str = "auto",
    seed: int = 0,
    command_timeout_s: int | None = None,
) -> Task:
    """The Inspect task of one environment and profile; each sample starts a new run.

    `budget` is seconds or a duration such as `30m` (default: the profile's budget);
    `isolation` is auto, bwrap or local; `command_timeout_s` caps each bash/python call
    (the budget caps them anyway).
    """
    spec = load_spec(env_id)
    prof = spec.profile(profile)
    require_prepared(spec, prof)  # fail before Inspect starts, with the command to run
    budget_s = _budget_seconds(budget, prof.default_budget_s)
    if isolation not in ISOLATION_CHOICES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_CHOICES)}")
    config = RunConfig(
        env_id=env_id, profile=profile, budget_s=budget_s, isolation=isolation, seed=seed
    )
    instructions = render_instructions(spec, prof, {"budget_h": round(budget_s / 3600, 2)})
    return _build_task(f"rebench/{env_id}", instructions, config, budget_s, solver,
                       command_timeout_s)


def attached_task(
    session: Session, solver: Solver | Agent | None = None, command_timeout_s: int | None = None
) -> Task:
    """The Inspect task for a run a rebench driver already started (its session attached
    with `sandbox.attach_session`): the remaining budget is the working limit."""
    run = session.run
    config = RunConfig(
        env_id=run.spec.id, profile=run.profile.name, budget_s=run.record.budget_s,
        isolation=run.record.isolation.value, seed=run.record.seed, attach=run.record.run_id,
    )
    return _build_task(f"rebench/{run.spec.id}", session.instructions, config,
                       session.time_left(), solver, command_timeout_s)
