"""Inspect's entry point for rebench: one task per environment, `rebench/<env_id>`, and the
`rebench` sandbox provider.

    inspect eval rebench/triton_cumsum -T profile=cpu -T budget=30m --model <provider/model>

Inspect imports this module (entry point group `inspect_ai`, name `rebench`) when it looks
up a `rebench/...` name; importing it registers the tasks, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Task, task

from rebench.core.discovery import environment_ids
from rebench.inspect_ext.task import rebench_task  # also registers the `rebench` sandbox

TaskFactory = Callable[..., Task]


def _task_factory(env_id: str) -> TaskFactory:
    """A registered Inspect task function named `env_id` (Inspect adds the `rebench/`)."""

    def factory(
        profile: str = "cpu",
        budget: str | None = None,
        isolation: str = "auto",
        seed: int = 0,
        command_timeout_s: int | None = None,
    ) -> Task:
        return rebench_task(
            env_id, profile=profile, budget=budget, isolation=isolation, seed=seed,
            command_timeout_s=command_timeout_s,
        )

    factory.__name__ = factory.__qualname__ = env_id
    factory.__doc__ = f"rebench environment {env_id} (one sample = one rebench run)."
    registered: TaskFactory = task(name=env_id)(factory)
    return registered


TASKS: dict[str, TaskFactory] = {env_id: _task_factory(env_id) for env_id in environment_ids()}

__all__ = ["TASKS"]
