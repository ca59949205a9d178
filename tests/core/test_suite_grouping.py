"""How tests/conftest.py splits `make test`: each environment's tests are one unit of work
for pytest-xdist (found from node ids alone), and a timing environment's tests are marked
`timing` (run after the others, alone) unless marked `untimed`."""

from __future__ import annotations

import pytest
from suite_split import ENVIRONMENT_TESTS, environment_of_nodeid, is_timing, timing_environments

ENVS = ("triton_cumsum", "small_scaling_law", "fix_embedding")


@pytest.mark.parametrize(("nodeid", "env_id"), [
    ("tests/environments/small_scaling_law/cheats/test_cheat_x.py::test_y", "small_scaling_law"),
    ("tests/environments/fix_embedding/test_golden.py::test_z[a-b]", "fix_embedding"),
    ("tests/environments/test_degenerate_policies.py::test_gains_nothing[triton_cumsum-start]",
     "triton_cumsum"),
    ("tests/integrity/test_suites.py::test_runs[small_scaling_law/reference]",
     "small_scaling_law"),
    ("tests/sandbox/test_sitepackages.py::test_imports[fix_embedding]", "fix_embedding"),
    ("tests/environments/test_degenerate_policies.py::test_every_environment_declares", None),
    ("tests/harness/test_run.py::test_x[triton]", None),  # a prefix of an id is not one
    ("tests/harness/test_run.py::test_x[triton_cumsum_v2]", None),
    ("tests/harness/test_run.py::test_x", None),
])
def test_environment_of_nodeid(nodeid: str, env_id: str | None) -> None:
    assert environment_of_nodeid(nodeid, ENVS) == env_id


def test_the_timing_environments_are_the_calibrated_ones() -> None:
    assert timing_environments() == {"triton_cumsum", "optimize_llm_foundry"}


class _Item:
    """What is_timing reads of a pytest item: its path, markers and parameters."""

    def __init__(self, path: str, markers: tuple[str, ...] = (),
                 params: dict[str, str] | None = None) -> None:
        self.path = ENVIRONMENT_TESTS / path
        self.markers = markers
        if params is not None:
            self.callspec = type("CallSpec", (), {"params": params})()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


@pytest.mark.parametrize(("item", "timed"), [
    (_Item("triton_cumsum/test_triton_cumsum_timing.py"), True),
    (_Item("optimize_llm_foundry/test_foundry_cheats.py", ("untimed",)), False),
    (_Item("fix_embedding/test_fix_embedding_golden.py"), False),
    (_Item("test_golden_all_environments.py", params={"env_id": "triton_cumsum"}), True),
    (_Item("test_degenerate_policies.py", ("untimed",), {"env_id": "triton_cumsum"}), False),
    (_Item("test_golden_all_environments.py", params={"env_id": "fix_embedding"}), False),
])
def test_a_timing_environments_test_is_timing_unless_marked_untimed(
        item: _Item, timed: bool) -> None:
    assert is_timing(item, {"triton_cumsum", "optimize_llm_foundry"}) is timed  # type: ignore[arg-type]
