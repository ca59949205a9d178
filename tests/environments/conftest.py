"""For the generic tests run per environment (their `env_id` parameter): a fixture
environment's case (tests/fixtures/environments) is made discoverable for the test and the
processes it starts, and its prepare (milliseconds) allowed in every tier."""

from __future__ import annotations

import pytest
from env_bench import is_fixture_environment, path_with_fixture_environments


@pytest.fixture(autouse=True)
def _fixture_environment_discoverable(request: pytest.FixtureRequest,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    callspec = getattr(request.node, "callspec", None)
    env_id = callspec.params.get("env_id") if callspec is not None else None
    if isinstance(env_id, str) and is_fixture_environment(env_id):
        monkeypatch.setenv("REBENCH_ENVIRONMENTS_PATH", path_with_fixture_environments())
        monkeypatch.delenv("REBENCH_PREPARE", raising=False)
