"""Typed profile params: a typo or a wrong type fails when the spec is built."""

from __future__ import annotations

import dataclasses
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


def test_typed_is_the_dataclass_built_at_load() -> None:
    params = _spec({"steps": 3, "lr": 1}).profile("cpu").typed
    assert params == Params(steps=3, lr=1.0) and isinstance(params.lr, float)


@pytest.mark.parametrize(("bad", "message"), [
    ({"steps": 3, "lr": 1.0, "lr_typo": 2}, r"unknown \['lr_typo'\]"),
    ({"steps": 3}, r"missing \['lr'\]"),
    ({"steps": "3", "lr": 1.0}, "param steps = '3' is not a int"),
    ({"steps": True, "lr": 1.0}, "param steps = True is not a int"),
    ({"steps": 3, "lr": "fast"}, "param lr = 'fast' is not a float"),
])
def test_bad_params_fail_at_load(bad: dict[str, object], message: str) -> None:
    """Through the spec: the profile is given the spec's params_type and converted then."""
    with pytest.raises(SpecError, match=f"profile cpu: .*{message}"):
        _spec(bad)


def test_the_spec_gives_its_profiles_the_params_type() -> None:
    """The spec's profiles carry its params_type; the mapping `params`, equality and repr
    (what records, fingerprints and the CLI read) are those of the profile as written."""
    written = Profile("cpu", "t", 1.0, 0.0, "any", params={"steps": 3, "lr": 1})
    spec = EnvironmentSpec(
        id="toy", version="1", title="t", direction=Direction.LOWER, raw_score_meaning="x",
        profiles={"cpu": written}, params_type=Params,
        solutions={"starting": SolutionRecipe("s"), "reference": SolutionRecipe("r")})
    loaded = spec.profile("cpu")
    assert loaded.params_type is Params and written.params_type is None
    assert loaded.params == {"steps": 3, "lr": 1} and loaded == written
    assert repr(loaded) == repr(written)
    with pytest.raises(SpecError, match="no params_type"):
        _ = written.typed


def test_a_profile_with_another_params_type_is_refused() -> None:
    other = Profile("cpu", "t", 1.0, 0.0, "any", params={"mode": "a"}, params_type=Choice)
    with pytest.raises(SpecError, match="params_type Choice, the spec Params"):
        EnvironmentSpec(
            id="toy", version="1", title="t", direction=Direction.LOWER, raw_score_meaning="x",
            profiles={"cpu": other}, params_type=Params,
            solutions={"starting": SolutionRecipe("s"), "reference": SolutionRecipe("r")})


def test_replaced_params_are_checked_and_typed_again() -> None:
    """A profile copied with other params (as tests and tools do) is converted again: its
    typed value follows its params, and a bad value fails at the copy."""
    loaded = _spec({"steps": 3, "lr": 1}).profile("cpu")
    copied = dataclasses.replace(loaded, params={"steps": 5, "lr": 0.5})
    assert copied.typed == Params(steps=5, lr=0.5)
    with pytest.raises(SpecError, match="lr_typo"):
        dataclasses.replace(loaded, params={"steps": 5, "lr": 0.5, "lr_typo": 1})


def test_a_params_type_must_be_a_dataclass() -> None:
    with pytest.raises(SpecError, match="not a dataclass"):
        Profile("cpu", "t", 1.0, 0.0, "any", params={"n": 1}, params_type=dict)


def test_every_environment_has_typed_params() -> None:
    """No environment reads an untyped bag: each declares its params dataclass, and every
    profile of its spec holds its params as that dataclass."""
    from rebench.core.discovery import all_specs

    for spec in all_specs():
        assert spec.params_type is not None, f"{spec.id} declares no params_type"
        for profile in spec.profiles.values():
            assert isinstance(profile.typed, spec.params_type), (spec.id, profile.name)


@dataclass(frozen=True)
class Choice:
    mode: Literal["a", "b"]


def test_literal_params_accept_only_their_values() -> None:
    good = Profile("cpu", "t", 1.0, 0.0, "any", params={"mode": "a"}, params_type=Choice)
    assert good.typed == Choice(mode="a")
    with pytest.raises(SpecError, match="mode"):
        Profile("cpu", "t", 1.0, 0.0, "any", params={"mode": "c"}, params_type=Choice)


def test_prose_is_instruction_text_not_params() -> None:
    with pytest.raises(SpecError, match="both params and instruction text"):
        Profile("cpu", "t", 1.0, 0.0, "any", params={"n": 1}, instruction_text={"n": "one"})
