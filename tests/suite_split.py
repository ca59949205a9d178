"""How `make test` splits the suite (used by tests/conftest.py): which tests are
`timing` (they compare wall-clock times: run after the others, alone on the cores), and
which environment a test belongs to (its tests are one unit of work for pytest-xdist)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest

ENVIRONMENT_TESTS = Path(__file__).resolve().parent / "environments"
# Tests outside an environment's folder that compare wall-clock times of a timing
# environment (besides the generic tests' items of one, found by their env_id parameter).
TIMING_FILES = (Path(__file__).resolve().parent / "inspect" / "test_inspect_attempt.py",)


def timing_environments() -> set[str]:
    """Environments whose score is a time (a profile has calibration_sd_limit): their
    tests compare wall-clock times and fail when another test shares the cores."""
    from rebench.core.discovery import environment_ids, load_spec

    return {env_id for env_id in environment_ids()
            if any(p.calibration_sd_limit is not None
                   for p in load_spec(env_id).profiles.values())}


def is_timing(item: pytest.Item, timing_envs: set[str]) -> bool:
    """A test of a timing environment (in its folder under tests/environments, or a
    generic test there run with it as env_id), or one of TIMING_FILES; not one marked
    `untimed` (it compares no time: a leak scan, a cheat that must come out invalid)."""
    if item.get_closest_marker("untimed") is not None:
        return False
    path = Path(str(item.path)).resolve()
    if path in TIMING_FILES:
        return True
    if not path.is_relative_to(ENVIRONMENT_TESTS):
        return False
    parts = path.relative_to(ENVIRONMENT_TESTS).parts
    if len(parts) > 1:
        return parts[0] in timing_envs
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("env_id") in timing_envs


def environment_of_nodeid(nodeid: str, env_ids: Collection[str]) -> str | None:
    """The environment a test belongs to, from its node id alone (what the xdist
    scheduler sees): its folder tests/environments/<env>/..., else a parameter id that
    names an environment ([env], [env-...], [env/...]: the generic tests run per
    environment, the integrity tests' real prepares)."""
    head, _, param = nodeid.partition("[")
    parts = head.split("::")[0].split("/")
    if parts[:2] == ["tests", "environments"] and len(parts) > 3:
        return parts[2]
    param = param[:-1] if param.endswith("]") else param
    for env_id in sorted(env_ids, key=len, reverse=True):
        if param == env_id or param.startswith((f"{env_id}-", f"{env_id}/")):
            return env_id
    return None
