"""One Inspect task per environment, found by name through rebench's entry point."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, entry_points, metadata

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai._util.registry import registry_info, registry_lookup

from rebench.agents.base import UnknownAgentError, make_agent
from rebench.agents.inspect_agent import InspectAgent
from rebench.core.discovery import environment_ids


def test_one_registered_task_per_environment() -> None:
    from rebench.inspect_ext import _registry

    assert sorted(_registry.TASKS) == environment_ids()
    for env_id, factory in _registry.TASKS.items():
        assert registry_info(factory).name == f"rebench/{env_id}"
        assert registry_lookup("task", f"rebench/{env_id}") is factory
        params = registry_info(factory).metadata["params"]
        assert {"profile", "budget", "isolation", "seed"} <= set(params)


def test_entry_point_declared_when_extra_is() -> None:
    try:
        extras = metadata("rebench").get_all("Provides-Extra") or []
    except PackageNotFoundError:
        pytest.skip("rebench is not installed")
    if "inspect" not in extras:
        pytest.skip("installed rebench predates the inspect extra (reinstall: pip install -e .)")
    names = {ep.name: ep.value for ep in entry_points(group="inspect_ai")}
    assert names.get("rebench") == "rebench.inspect_ext._registry"


def test_inspect_agent_kind() -> None:
    agent = make_agent("inspect:mockllm/model")
    assert isinstance(agent, InspectAgent)
    assert agent.name == "inspect:mockllm/model"
    with pytest.raises(UnknownAgentError):
        make_agent("inspect:")
