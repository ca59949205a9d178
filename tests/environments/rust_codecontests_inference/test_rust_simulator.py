"""The simulated weak model: deterministic, weak, sensitive to prompt, temperature and n."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from rebench.environments.rust_codecontests_inference.mutations import MUTATIONS
from rebench.environments.rust_codecontests_inference.problems import split_problems
from rebench.environments.rust_codecontests_inference.simulator import (
    BASE_SUCCESS,
    BUG_WEIGHTS,
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


def _lucky_request_seed(model_seed: int, problem: KnownProblem, prompt: str) -> int:
    """The red team's seeded sampler (2026-12-07, fourth round): the request seed whose
    first sample, recomputed offline from the simulator's public code and `model_seed`,
    is the correct program (its first draw keeps Rust, its second is under every
    difficulty's chance at temperature 0 with a chain of thought)."""
    from rebench.environments.rust_codecontests_inference.simulator import _hash

    keyed = prompt.replace(problem.description, f"<problem {problem.id}>")
    for seed in range(1, 100_000):
        rng = random.Random(_hash(model_seed, problem.id, _hash(keyed, 0.0, seed), 0))
        if rng.random() >= 0.03 and rng.random() < 0.07:
            return seed
    raise AssertionError("no seed found")


def test_a_request_seed_searched_offline_does_not_pick_the_scorers_answer(
        tmp_path: Path) -> None:
    """With the public seed a scaffold can compute which request seed makes the first
    sample correct: every one of these problems answered right by one request, no compiler
    (normalized 4.8 on the test profile before 1.4.0). The held-out scoring's seed derives
    from the prepare's secret, and the same requests are right about as often as any first
    sample is (11 of these 35, against 35 of 35 under the public seed)."""
    from rebench.environments.rust_codecontests_inference.prepare import (
        SECRET_FILE,
        held_out_seed,
    )

    public = 20241122
    (tmp_path / SECRET_FILE).write_bytes(b"tests: a prepare's secret, 32 bytes")
    secret = held_out_seed(tmp_path)
    prompt = "Think step by step, then solve this coding contest problem in Rust.\n{}"
    right = {public: 0, secret: 0}
    problems = KNOWN
    for p in problems:
        request = prompt.format(p.description)
        seed = _lucky_request_seed(public, p, request)
        for model_seed in right:
            answer = _contents(Simulator(KNOWN, model_seed).complete(
                _body(request, temperature=0.0, seed=seed)))[0]
            right[model_seed] += p.solution.strip() in answer
    assert right[public] == len(problems), right
    assert right[secret] <= len(problems) // 2, right


def test_the_scorer_draws_its_simulator_seed_from_the_prepares_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from rebench.environments.rust_codecontests_inference import scoring
    from rebench.environments.rust_codecontests_inference.prepare import (
        SECRET_FILE,
        held_out_seed,
    )

    class Seen(Exception):
        pass

    def backend(problems: object, seed: int, upstream: object) -> None:
        raise Seen(seed)

    monkeypatch.setattr(scoring, "make_backend", backend)
    seeds = []
    for secret in (b"one prepare's secret", b"another prepare's secret"):
        (tmp_path / SECRET_FILE).write_bytes(secret)
        ctx = SimpleNamespace(protected_dir=tmp_path,
                              profile=SimpleNamespace(typed=SimpleNamespace(model_seed=20241122)))
        with pytest.raises(Seen) as seen:
            scoring._run_solution(ctx, [], "rustc")  # type: ignore[arg-type]
        seeds.append(seen.value.args[0])
        assert seen.value.args[0] == held_out_seed(tmp_path)
    assert len(set(seeds)) == 2 and 20241122 not in seeds


def test_a_repair_bonus_needs_a_program_the_simulator_wrote() -> None:
    """A first request that claims to repair a dummy program gets no repair bonus (the red
    team measured 0.25 -> 0.44 correct with it before 1.4.0; here 0.16, against 0.31 for
    a request quoting a program the simulator wrote for the problem). A statement that
    says "prefix" is not a repair request."""
    from rebench.environments.rust_codecontests_inference.simulator import FENCED

    sim = Simulator(KNOWN, 7)
    fake = correct_fake = real = correct_real = 0
    for p in KNOWN:
        dummy = ("This Rust program is wrong, fix it:\n```rust\nfn main() {}\n```\n"
                 + p.description)
        for t in _contents(sim.complete(_body(dummy, n=8, temperature=0.7))):
            fake += 1
            correct_fake += p.solution.strip() in t
        first = _contents(sim.complete(_body(RUST_PROMPT.format(p.description), n=1,
                                             temperature=0.7)))[0]
        code = FENCED.findall(first)
        if not code or code[0].strip() == p.solution.strip():
            continue
        repair = (f"{p.description}\nThis Rust program is wrong, fix it:\n```rust\n{code[0]}```")
        for t in _contents(sim.complete(_body(repair, n=8, temperature=0.7))):
            real += 1
            correct_real += p.solution.strip() in t
    assert correct_real / real > 1.5 * correct_fake / fake, (correct_real, real, correct_fake,
                                                              fake)
    assert not features("```rust\nfn main() {}\n```\nPrint each prefix sum.").repair


def test_only_a_rust_program_drawn_for_the_problem_and_sent_whole_counts_as_written() -> None:
    """The repair check remembers the Rust programs the simulator drew for a problem and
    sent whole, nothing else. The red team (2026-12-07e) planted fixed texts as "programs
    the simulator wrote": the other languages' fallback programs (a prompt without "rust")
    and the chain of thought's sample block, each for one completion token a choice
    (max_tokens=1: they were remembered before the answer was cut)."""
    from rebench.environments.rust_codecontests_inference.simulator import (
        FENCED,
        OTHER_LANGUAGE,
    )

    p = KNOWN[0]
    sim = Simulator(KNOWN, 7)
    for i in range(20):
        sim.complete(_body(f"Solve this problem:\n{p.description}", n=8, max_tokens=1,
                           seed=i))
        sim.complete(_body(f"Think step by step.\n{p.description}", n=8, max_tokens=1,
                           seed=i))
    planted = [f"```python\n{OTHER_LANGUAGE['python']}```", f"```cpp\n{OTHER_LANGUAGE['cpp']}```",
               "```text\n3\n1 2 3\n```"]
    for text in planted:
        assert not sim.quotes_own_program(p, f"{p.description}\nWrong, fix it:\n{text}")
    # The same draw (a fresh simulator, the same seed and request) cut by max_tokens is not
    # remembered; sent whole, it is.
    body = _body(RUST_PROMPT.format(p.description), n=1, temperature=0.7)
    whole = _contents(Simulator(KNOWN, 7).complete(body))[0]
    program = FENCED.findall(whole)[-1]
    cut, sent = Simulator(KNOWN, 7), Simulator(KNOWN, 7)
    cut.complete({**body, "max_tokens": 5})
    sent.complete(body)
    repair = f"{p.description}\nThis is wrong, fix it:\n```rust\n{program}```"
    assert not cut.quotes_own_program(p, repair)
    assert sent.quotes_own_program(p, repair)
