"""The agent protocol and the registry of agents."""

from __future__ import annotations

import importlib

from rebench.core.errors import RebenchError
from rebench.harness.agent import Agent

__all__ = ["AGENT_KINDS", "Agent", "UnknownAgentError", "make_agent"]


class UnknownAgentError(RebenchError):
    """No agent by that name, or a malformed agent argument."""


# Agents that take an argument (`kind:ARG`), imported only when asked for.
# Each class is constructed with the argument string.
AGENT_KINDS: dict[str, str] = {
    "replay": "rebench.agents.replay:ReplayAgent",
    "human": "rebench.agents.human:HumanAgent",
    "inspect": "rebench.agents.inspect_agent:InspectAgent",
}


def make_agent(spec: str) -> Agent:
    """`start`, `reference`, `expert`, or `KIND[:ARG]` for the kinds in AGENT_KINDS."""
    from rebench.agents.builtin import SolutionAgent, StartAgent

    kind, _, arg = spec.partition(":")
    if spec == "start":
        return StartAgent()
    if spec in ("reference", "expert"):
        return SolutionAgent(spec)
    target = AGENT_KINDS.get(kind)
    if target is None:
        known = ", ".join(["start", "reference", "expert", *sorted(AGENT_KINDS)])
        raise UnknownAgentError(f"unknown agent {spec!r} (known: {known})")
    module_name, _, cls_name = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except ImportError as exc:
        raise UnknownAgentError(f"agent kind {kind!r} is not available: {exc}") from None
    agent: Agent = cls(arg)
    return agent
