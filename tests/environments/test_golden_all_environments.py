"""The generic golden test, run for every discovered environment and the fixture ones from
the declaration in its folder (`rebench/environments/<id>/degenerate.py`, GOLDEN): each
banded solution (the starting one, the reference, any other it names) is built as a run's
workspace is, scored officially (the harness's scorer process, default isolation),
normalized, and must land in its band; the environment's own `check` then looks at the
result. An environment added later is tested by being added.

A timing environment is normalized with anchors measured here (tests/env_bench.py: the best
of GOLDEN.anchor_repeats scorings of its start and reference, shared with its cheat tests),
and the banded scoring is a fresh one."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from env_bench import EnvBench, fixture_environments, golden_of, tested_environment_ids

from rebench.core.discovery import load_spec
from rebench.core.normalize import normalize
from rebench.sandbox.bwrap import bwrap_available

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")


def _cases() -> Iterator[object]:
    with fixture_environments():
        for env_id in tested_environment_ids():
            golden = golden_of(env_id)
            for solution, low, high in golden.bands if golden is not None else ():
                marks = [pytest.mark.slow] if solution in golden.slow else []
                yield pytest.param(env_id, solution, low, high, marks=marks,
                                   id=f"{env_id}-{solution}")


def test_every_environment_declares_its_golden_bands() -> None:
    with fixture_environments():
        missing = [env_id for env_id in tested_environment_ids()
                   if golden_of(env_id) is None]
    assert not missing, f"no GOLDEN = Golden(...) in degenerate.py: {missing}"


@pytest.mark.parametrize(("env_id", "solution", "low", "high"), list(_cases()))
def test_golden_solution_lands_in_its_band(env_id: str, solution: str, low: float,
                                           high: float, env_bench: EnvBench) -> None:
    spec = load_spec(env_id)
    golden = golden_of(env_id)
    assert golden is not None
    anchors = env_bench.anchors(env_id)
    result, snapshot = env_bench.score(env_id, solution)
    assert result.valid, (result.message, result.details)
    value = normalize(result.raw, anchors, spec.direction)
    assert math.isfinite(value) and low <= value <= high, (
        f"{env_id} {solution} normalized {value:.3f}, outside [{low}, {high}] "
        f"(raw {result.raw}, anchors {anchors.starting_raw} / {anchors.reference_raw} "
        f"from {anchors.source.value}): {result.details}")
    if golden.check is not None:
        golden.check(solution, result, snapshot)
