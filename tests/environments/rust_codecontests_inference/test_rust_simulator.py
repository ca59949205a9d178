"""The simulated weak model: deterministic, weak, sensitive to prompt, temperature and n."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from rebench.environments.rust_codecontests_inference.problems import split_problems
from rebench.environments.rust_codecontests_inference.simulator import (
    BASE_SUCCESS,
    BUG_WEIGHTS,
    MUTATIONS,
    KnownProblem,
    PromptFeatures,
    Simulator,
    bug_weights,
    count_tokens,
    features,
    mutate,
    success_probability,
)

VALIDATION, _ = split_problems(b"tests: validation key")
KNOWN = [KnownProblem(p.id, p.difficulty, p.description, p.solution) for p in VALIDATION]
RUST_PROMPT = "Solve this problem in Rust:\n{}"


def _body(text: str, n: int = 1, temperature: float | None = 1.0, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], "n": n, "temperature": temperature,
            **extra}


def _contents(result: dict[str, Any]) -> list[str]:
    return [c["message"]["content"] for c in result["choices"]]


def test_same_seed_same_answers_and_resampling_gives_new_ones() -> None:
    prompt = _body(RUST_PROMPT.format(KNOWN[0].description), n=4)
    a, b = Simulator(KNOWN, 1), Simulator(KNOWN, 1)
    first = _contents(a.complete(prompt))
    assert first == _contents(b.complete(prompt))
    assert _contents(a.complete(prompt)) != first  # asking again samples afresh
    assert _contents(Simulator(KNOWN, 2).complete(prompt)) != first


def test_temperature_zero_is_greedy() -> None:
    sim = Simulator(KNOWN, 1)
    prompt = _body(RUST_PROMPT.format(KNOWN[3].description), n=3, temperature=0)
    answers = _contents(sim.complete(prompt))
    assert len(set(answers)) == 1
    assert _contents(sim.complete(prompt)) == answers


def test_answers_are_markdown_with_prose_and_a_fence() -> None:
    sim = Simulator(KNOWN, 1)
    result = sim.complete(_body(RUST_PROMPT.format(KNOWN[0].description), n=8))
    assert result["object"] == "chat.completion" and len(result["choices"]) == 8
    for text in _contents(result):
        assert "```" in text
        assert not text.startswith("```")  # prose first
    usage = result["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_other_language_unless_rust_is_asked() -> None:
    sim = Simulator(KNOWN, 1)
    plain = _contents(sim.complete(_body(f"Solve:\n{KNOWN[1].description}", n=8)))
    rust = _contents(sim.complete(_body(RUST_PROMPT.format(KNOWN[1].description), n=8)))
    assert sum("fn main" in t for t in plain) <= 4
    assert sum("fn main" in t for t in rust) >= 7


def test_unknown_problem_gets_a_generic_answer() -> None:
    sim = Simulator(KNOWN, 1)
    text = _contents(sim.complete(_body("Write a Rust program that prints the sum of a and b.")))
    assert "not sure" in text[0]
    assert sim.identify("nothing to see here") is None
    assert sim.identify("In Rust please: " + KNOWN[5].description) == KNOWN[5]


def test_max_tokens_truncates() -> None:
    sim = Simulator(KNOWN, 1)
    result = sim.complete(_body(RUST_PROMPT.format(KNOWN[0].description), max_tokens=20))
    assert result["choices"][0]["finish_reason"] == "length"
    assert result["usage"]["completion_tokens"] == 20


def test_high_temperature_degrades_answers() -> None:
    sim = Simulator(KNOWN, 1)
    hot = _contents(sim.complete(_body(RUST_PROMPT.format(KNOWN[0].description), n=8,
                                       temperature=2.0)))
    assert sum("```" not in t for t in hot) >= 4
    feats = PromptFeatures(True, False, False, ())
    assert success_probability(1, feats, 1.6) < success_probability(1, feats, 1.0)


def test_prompt_features_shape_success_and_bugs() -> None:
    plain, cot = features("Solve in Rust"), features("Solve in Rust. Think step by step.")
    assert cot.chain_of_thought and not plain.chain_of_thought
    for d in (1, 2, 3):
        assert success_probability(d, cot, 0.7) > success_probability(d, plain, 0.7)
        assert success_probability(d, plain, 0.7) == pytest.approx(BASE_SUCCESS[d])
    assert BASE_SUCCESS[1] > BASE_SUCCESS[2] > BASE_SUCCESS[3]
    repair = features("Your code:\n```rust\nfn main(){}\n```\nfails with a compile error. Fix it.")
    assert repair.repair
    assert success_probability(2, repair, 0.7) > success_probability(2, plain, 0.7)
    hinted = bug_weights(features("Use i64 to avoid overflow, and read the whole input."))
    assert hinted["overflow"] < BUG_WEIGHTS["overflow"] and hinted["buffer"] < BUG_WEIGHTS["buffer"]


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_every_mutation_changes_some_reference_program(kind: str) -> None:
    changed = [MUTATIONS[kind](random.Random(0), p.solution) != p.solution for p in VALIDATION]
    assert any(changed)


def test_mutate_always_changes_the_program() -> None:
    rng = random.Random(3)
    for p in VALIDATION:
        assert mutate(rng, p.solution, dict(BUG_WEIGHTS)) != p.solution


def test_token_count_is_about_four_characters() -> None:
    assert count_tokens("x" * 400) == 100
    assert count_tokens("") == 1


def test_sampling_more_finds_more_correct_programs() -> None:
    """With n = 8 a problem sees a verbatim correct program more often than with n = 1."""
    sim = Simulator(KNOWN, 5)
    fence = re.compile(r"```\w*\n(.*?)```", re.S)
    hits_1 = hits_8 = 0
    for p in KNOWN:
        prompt = RUST_PROMPT.format(p.description) + "\nThink step by step."
        one = _contents(sim.complete(_body(prompt, n=1, temperature=0.8)))
        eight = _contents(sim.complete(_body(prompt + " ", n=8, temperature=0.8)))
        ok = [any(m.strip() == p.solution.strip() for m in fence.findall(t)) for t in eight]
        hits_1 += any(m.strip() == p.solution.strip() for m in fence.findall(one[0]))
        hits_8 += any(ok)
    assert hits_8 > hits_1
    assert hits_8 < len(KNOWN)  # still a weak model


def _medoid(programs: list[str]) -> str:
    """The sample closest, by lines, to all the others (a scaffold that votes by text)."""
    import difflib

    lines = [p.splitlines() for p in programs]
    cost = [sum(1 - difflib.SequenceMatcher(None, a, b).ratio() for b in lines) for a in lines]
    return programs[cost.index(min(cost))]


def test_the_textual_medoid_of_samples_is_not_the_correct_program() -> None:
    """Wrong answers repeat a problem's habitual mistake (1.3.2), so voting by text picks the
    mistake: the medoid of 16 samples is right less often than the first sample, though a
    correct program is among them on most problems. Before 1.3.2, when each wrong answer
    was its own mutation of the reference, the medoid was right on 27 of these 35 problems
    (the first sample on 12): 23 of 32 held-out problems, normalized 1.7, no compiler."""
    sim = Simulator(KNOWN, 20241122)
    fence = re.compile(r"```\w*\n(.*?)```", re.S)
    medoid = first = present = 0
    for p in KNOWN:
        prompt = ("Solve this problem in Rust. Think step by step, then give the program in "
                  "a ```rust block.\n" + p.description)
        programs = [m for k in range(2)
                    for t in _contents(sim.complete(_body(prompt + " " * k, n=8,
                                                          temperature=0.7)))
                    for m in fence.findall(t) if "fn main" in m]
        right = [m.strip() == p.solution.strip() for m in programs]
        medoid += _medoid(programs).strip() == p.solution.strip()
        first += right[0]
        present += any(right)
    assert present > 0.8 * len(KNOWN), present
    assert medoid <= first, (medoid, first)
