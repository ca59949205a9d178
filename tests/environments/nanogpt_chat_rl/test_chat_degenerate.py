"""nanogpt_chat_rl's declared degenerate policies (degenerate.py) on the prepared cpu
assets, scored by the environment's scorer in this process (the generic test,
tests/environments/test_degenerate_policies.py, scores them through official scoring):
each model really does what its declaration says, and scores at most the start, or is
invalid with a reason from the schema that carries nothing the probe chose.

And every prompt-independent response policy over the real held-out prompts against the
real opponents' responses, at the level of responses (no model): at most the start.
Before 1.1.0 "and the" won 0.976 of its comparisons here (normalized about 1.7)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from rebench.core.calibration import resolve_anchors
from rebench.core.normalize import normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.environments.nanogpt_chat_rl import chat, degenerate
from rebench.environments.nanogpt_chat_rl.scoring import heldout_tasks, judge_responses
from rebench.environments.nanogpt_chat_rl.tasks import Task
from rebench.scoring.declarations import Degenerate, Expect, PolicyContext

ScoreFn = Callable[[Path], ScoreResult]

pytestmark = pytest.mark.slow

POLICIES = {p.name: p for p in degenerate.POLICIES}


def make(policy: Degenerate, spec: EnvironmentSpec, profile: Profile, assets: Path,
         tmp: Path) -> Path:
    workspace, scratch = tmp / "workspace", tmp / "scratch"
    scratch.mkdir()
    shutil.copytree(Path(degenerate.__file__).parent / "starting", workspace)
    policy.make(PolicyContext(spec, profile, assets / "public", workspace, scratch))
    return workspace


def normalized(spec: EnvironmentSpec, profile: Profile, raw: float) -> float:
    return float(normalize(raw, resolve_anchors(spec, profile), spec.direction))


def test_the_declarations_cover_every_kind() -> None:
    kinds = {p.expect for p in degenerate.POLICIES}
    assert kinds == {Expect.AT_MOST_START, Expect.INVALID, Expect.NO_CHANNEL}
    assert {f"constant_{k}" for k in degenerate.PHRASES} <= set(POLICIES)


@pytest.mark.parametrize("name", sorted(n for n, p in POLICIES.items()
                                        if p.expect is Expect.AT_MOST_START))
def test_a_degenerate_model_scores_at_most_the_start(
        name: str, chat_spec: EnvironmentSpec, chat_cpu: Profile, chat_assets: Path,
        chat_score: ScoreFn, tmp_path: Path) -> None:
    workspace = make(POLICIES[name], chat_spec, chat_cpu, chat_assets, tmp_path)
    if name.startswith("constant_") or name == "empty":
        # the model really answers every prompt alike (not a vacuous pass)
        phrase = degenerate.PHRASES.get(name.removeprefix("constant_"), "")
        model = _load(workspace / "model.pth", chat_assets)
        prompts = [t.prompt for t in heldout_tasks(chat_assets)[:200]]
        out = chat.sample(model, prompts, generator=torch.Generator().manual_seed(0))
        # (the fluent sentence's model said it 173 times in 200 on one prepare, 2026-12-02)
        assert sum(r == phrase for r in out) >= 0.8 * len(out), out[:5]
    result = chat_score(workspace)
    assert result.valid, result.message
    score = normalized(chat_spec, chat_cpu, result.raw)
    assert score <= degenerate.START_TOLERANCE, (name, score, result.details)
    # normalized scores are floored at 0: say it in raw too (against the anchor's start;
    # this prepare's own start is not built here)
    assert result.raw < resolve_anchors(chat_spec, chat_cpu).starting_raw, (name, result.raw)


def _load(path: Path, assets: Path) -> torch.nn.Module:
    from rebench.assets.gpt import GPTConfig
    from rebench.assets.submitted import load_submitted_gpt

    record = json.loads((assets / "protected" / "eval.json").read_text())
    model = load_submitted_gpt(path, GPTConfig.from_json(record["config"]))
    assert not isinstance(model, str), model
    module: torch.nn.Module = model
    return module


@pytest.mark.parametrize(("name", "reason"), [
    ("do_nothing", "no_model"), ("probe_key_names", "bad_weights"),
    ("probe_exception_text", "bad_weights")])
def test_invalid_submissions_say_only_a_declared_reason(
        name: str, reason: str, chat_spec: EnvironmentSpec, chat_cpu: Profile,
        chat_assets: Path, chat_score: ScoreFn, tmp_path: Path) -> None:
    workspace = make(POLICIES[name], chat_spec, chat_cpu, chat_assets, tmp_path)
    result = chat_score(workspace)
    assert not result.valid
    shown = chat_spec.feedback.render(result.message, valid=False)
    assert shown == {"valid": False, "reason": reason,
                     "text": chat_spec.feedback.reasons[reason]}
    assert result.message == {"error": reason}  # the scorer's own message: the code only
    assert "why" in result.details  # the text for the operator


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
