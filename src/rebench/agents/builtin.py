"""Built-in scripted agents: the starting and the reference (or expert) solution."""

from __future__ import annotations

from rebench.harness.session import Session
from rebench.harness.workspace import (
    check_recipe_result,
    copy_solution_files,
    recipe_command,
)


class StartAgent:
    """Submits the starting solution unchanged: its normalized score should be ~0."""

    name = "start"

    def act(self, session: Session) -> None:
        session.score()


class SolutionAgent:
    """Applies a named solution of the environment (reference: ~1) and submits it."""

    def __init__(self, solution: str) -> None:
        self.name = solution

    def act(self, session: Session) -> None:
        spec = session.run.spec
        recipe = copy_solution_files(spec, self.name, session.run.workspace)
        if recipe.run:
            result = session.exec(recipe_command(recipe), timeout=recipe.run_timeout_s)
            check_recipe_result(spec, self.name, result)
        session.score()
