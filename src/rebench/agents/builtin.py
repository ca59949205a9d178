"""Built-in scripted agents: the starting and the reference (or expert) solution."""

from __future__ import annotations

from rebench.core.errors import RunError
from rebench.harness.session import Session
from rebench.harness.workspace import copy_solution_files


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
        recipe = spec.solutions.get(self.name)
        if recipe is None:
            raise RunError(f"{spec.id} has no {self.name} solution")
        copy_solution_files(spec, self.name, session.run.workspace)
        if recipe.run:
            result = session.exec(" ".join(recipe.run), timeout=recipe.run_timeout_s)
            if result.returncode != 0:
                raise RunError(
                    f"{self.name} solution failed (exit {result.returncode}, timed out "
                    f"{result.timed_out}):\n{result.stderr[-2000:]}"
                )
        session.score()
