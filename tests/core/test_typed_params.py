"""Typed profile params: a typo or a wrong type fails when the spec is built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


def test_every_environment_has_typed_params() -> None:
    """No environment reads an untyped bag: each declares its params dataclass, and every
    profile's params fit it (checked again here, beside the check at load)."""
    from rebench.core.discovery import all_specs

    for spec in all_specs():
        assert spec.params_type is not None, f"{spec.id} declares no params_type"
        for profile in spec.profiles.values():
            profile.params_as(spec.params_type)


@dataclass(frozen=True)
class Choice:
    mode: Literal["a", "b"]


def test_literal_params_accept_only_their_values() -> None:
    good = Profile("cpu", "t", 1.0, 0.0, "any", params={"mode": "a"})
    assert good.params_as(Choice) == Choice(mode="a")
    with pytest.raises(SpecError, match="mode"):
        Profile("cpu", "t", 1.0, 0.0, "any", params={"mode": "c"}).params_as(Choice)


def test_prose_is_instruction_text_not_params() -> None:
    with pytest.raises(SpecError, match="both params and instruction text"):
        Profile("cpu", "t", 1.0, 0.0, "any", params={"n": 1}, instruction_text={"n": "one"})
