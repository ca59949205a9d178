"""Typed profile params: a typo or a wrong type fails when the spec is built."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rebench.core.errors import SpecError
from rebench.core.spec import Direction, EnvironmentSpec, Profile, SolutionRecipe


@dataclass(frozen=True)
class Params:
    steps: int
    lr: float
    name: str = "x"


def _spec(params: dict[str, object]) -> EnvironmentSpec:
    return EnvironmentSpec(
        id="toy", version="1", title="t", direction=Direction.LOWER, raw_score_meaning="x",
        profiles={"cpu": Profile("cpu", "t", 1.0, 0.0, "any", params=params)},  # type: ignore[arg-type]
        solutions={"starting": SolutionRecipe("s"), "reference": SolutionRecipe("r")},
        params_type=Params)


def test_params_as_builds_the_dataclass() -> None:
    params = _spec({"steps": 3, "lr": 1}).profile("cpu").params_as(Params)
    assert params == Params(steps=3, lr=1.0) and isinstance(params.lr, float)


@pytest.mark.parametrize("bad", [{"steps": 3, "lr": 1.0, "lr_typo": 2},
                                 {"steps": 3}, {"steps": "3", "lr": 1.0},
                                 {"steps": True, "lr": 1.0}])
def test_bad_params_fail_at_load(bad: dict[str, object]) -> None:
    with pytest.raises(SpecError):
        _spec(bad)


def test_every_environment_with_a_params_type_loads() -> None:
    from rebench.core.discovery import all_specs

    for spec in all_specs():
        if spec.params_type is not None:
            for profile in spec.profiles.values():
                profile.params_as(spec.params_type)
