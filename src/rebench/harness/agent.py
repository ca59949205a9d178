"""The Agent protocol, below the harness code that drives agents (agents/ implements it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rebench.harness.session import Session


class Agent(Protocol):
    """An agent acts on a session until it is done or out of time."""

    name: str

    def act(self, session: Session) -> None: ...


# Makes an agent from how the command line names it (`start`, `replay:FILE`, ...); raises a
# RebenchError for an unknown or malformed name. The CLI passes agents.base.make_agent, so
# the harness needs no import of agents/.
AgentFactory = Callable[[str], Agent]
