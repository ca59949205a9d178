"""Instructions render fully: every environment, every profile, no template text left."""

from __future__ import annotations

import pytest

from rebench.core.discovery import all_specs
from rebench.core.instructions import fill, leftovers, render_instructions

CASES = [(spec, name) for spec in all_specs() for name in spec.profiles]


def test_escaped_braces_and_format_specs() -> None:
    text = 'a {{"input": [...]}} b {t:.0f} s, {n} x {missing} {n:>4} {{n}}'
    out = fill(text, {"t": 12.7, "n": 3})
    assert out == 'a {"input": [...]} b 13 s, 3 x {missing}    3 {n}'


def test_code_braces_stay_and_bad_specs_stay_visible() -> None:
    assert fill("d = {'a': 1}; f'{x + 1}'", {"x": 1}) == "d = {'a': 1}; f'{x + 1}'"
    assert fill("{name:.0f}", {"name": "text"}) == "{name:.0f}"  # seen by the test below


def test_leftovers_finds_template_text() -> None:
    assert leftovers("ok {\"a\": 1} done") == []
    assert leftovers("{{x}} and {t:.0f} and {n}") == ["{{", "}}", "{t:.0f}", "{n}"]


@pytest.mark.parametrize(("spec", "profile"), CASES,
                         ids=[f"{s.id}-{p}" for s, p in CASES])
def test_rendered_instructions_have_no_template_text(spec: object, profile: str) -> None:
    from rebench.core.spec import EnvironmentSpec

    assert isinstance(spec, EnvironmentSpec)
    for extra in (None, {"budget_h": 8.0}):  # `rebench instructions` and a run's session
        text = render_instructions(spec, spec.profile(profile), extra)
        assert leftovers(text) == [], f"{spec.id}/{profile}: {leftovers(text)}"
