"""nanogpt_chat_rl's declared degenerate policies (degenerate.py) are scored through
official scoring by the generic test (tests/environments/test_degenerate_policies.py),
which also runs each one's `verify` (the constant models really give their phrase) and
checks the declared reason codes. Here: the declarations cover every kind, and every
prompt-independent response policy over the real held-out prompts against the real
opponents' responses, at the level of responses (no model): at most the start.
Before 1.1.0 "and the" won 0.976 of its comparisons here (normalized about 1.7)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import normalize
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.environments.nanogpt_chat_rl import degenerate
from rebench.environments.nanogpt_chat_rl.scoring import heldout_tasks, judge_responses
from rebench.environments.nanogpt_chat_rl.tasks import Task
from rebench.scoring.declarations import Expect

pytestmark = pytest.mark.slow

POLICIES = {p.name: p for p in degenerate.POLICIES}


def normalized(spec: EnvironmentSpec, profile: Profile, raw: float) -> float:
    return float(normalize(raw, resolve_anchors(spec, profile), spec.direction))


def test_the_declarations_cover_every_kind() -> None:
    kinds = {p.expect for p in degenerate.POLICIES}
    assert kinds == {Expect.AT_MOST_START, Expect.INVALID, Expect.NO_CHANNEL}
    assert {f"constant_{k}" for k in degenerate.PHRASES} <= set(POLICIES)


def _constant(text: str) -> Callable[[list[Task]], list[str]]:
    return lambda tasks: [text] * len(tasks)


RESPONSE_POLICIES: dict[str, Callable[[list[Task]], list[str]]] = {
    "function_words": _constant("and the"),
    "fluent_sentence": _constant("The river ran past the old mill and the green field."),
    "answer_template": _constant("The answer is 12."),
    "opponent_style": _constant("42. The king rode to the town with his men."),
    "bare_number": _constant("5."),
    "empty": _constant(""),
    "echo": lambda tasks: [t.prompt for t in tasks],
    "random_characters": lambda tasks: [
        "".join(np.random.default_rng(i).choice(list("abcdefghij klmnop.,"), size=20))
        for i in range(len(tasks))],
    "random_fluent_numbers": lambda tasks: [
        f"{(7 * i) % 97}. The king rode to the town." for i in range(len(tasks))],
}


@pytest.mark.parametrize("name", sorted(RESPONSE_POLICIES))
def test_prompt_independent_responses_on_the_heldout_set(
        name: str, chat_spec: EnvironmentSpec, chat_cpu: Profile, chat_assets: Path) -> None:
    tasks = heldout_tasks(chat_assets)
    opponents = json.loads((chat_assets / "protected" / "opponents.json").read_text())
    rates, dependence = judge_responses(chat_assets, tasks, RESPONSE_POLICIES[name](tasks),
                                        opponents)
    raw = float(np.mean(list(rates.values())))
    assert normalized(chat_spec, chat_cpu, raw) <= 0.0, (name, raw, dependence)
    assert raw == 0.0 and dependence.ignores_prompts, (name, raw, dependence)
