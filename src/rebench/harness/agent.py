"""The Agent protocol, below the harness code that drives agents (agents/ implements it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rebench.harness.session import Session


class Agent(Protocol):
    """An agent acts on a session until it is done or out of time."""

    name: str

    def act(self, session: Session) -> None: ...
