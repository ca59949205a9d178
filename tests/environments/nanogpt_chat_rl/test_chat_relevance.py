"""A judge that rewards not answering (issue 26, class 1), at unit level and fast: every
response policy that does not depend on its prompt, over a held-out-like set of prompts,
against opponent-like responses (the careless question-answer text the opponents learnt
from: a right or plausibly wrong answer, sometimes a sentence after it).

Up to 1.0.1 the judge ranked a non-answer against an answer by fluency: a constant "and
the" won 97.7% of its comparisons against the cpu opponents. Now (judge.py, relevance.py)
an attempt at an answer beats a non-attempt, two non-attempts tie, and scoring makes a
policy that ignores its prompts lose every comparison.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from rebench.environments.nanogpt_chat_rl.judge import OfflineJudge
from rebench.environments.nanogpt_chat_rl.prepare import careless_response
from rebench.environments.nanogpt_chat_rl.relevance import is_attempt, prompt_dependence
from rebench.environments.nanogpt_chat_rl.scoring import forfeiting_win_rates, win_rates
from rebench.environments.nanogpt_chat_rl.tasks import KnowledgeBase, Task, draw_tasks

FILLERS = ["The river ran past the old mill.", "The king rode to the town with his men.",
           "A small bird sang in the tree by the gate."]
NUMERIC = {"add", "subtract", "larger", "length"}
Policy = Callable[[list[Task], np.random.Generator], list[str]]


def constant(text: str) -> Policy:
    return lambda tasks, rng: [text] * len(tasks)


# Every prompt-independent policy a lazy agent tries first, at the level of responses.
PROMPT_INDEPENDENT: dict[str, Policy] = {
    "function_words": constant("and the"),
    "one_word": constant("The"),
    "fluent_sentence": constant("The river ran past the old mill and the green field."),
    "answer_template": constant("The answer is 12."),
    "bare_number": constant("5."),
    "opponent_style": constant("42. The king rode to the town with his men."),
    "a_letter": constant("s"),
    "a_trade": constant("baker."),
    "empty": constant(""),
    "random_characters": lambda tasks, rng: [
        "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz .,"), size=int(rng.integers(3, 50))))
        for _ in tasks],
    "random_numbers": lambda tasks, rng: [f"{int(rng.integers(0, 100))}." for _ in tasks],
    "random_fluent_numbers": lambda tasks, rng: [
        f"{int(rng.integers(0, 100))}. {FILLERS[int(rng.integers(len(FILLERS)))]}"
        for _ in tasks],
}
# Not prompt-independent, but no answer either: the prompt echoed back.
ECHO: Policy = lambda tasks, rng: [t.prompt for t in tasks]  # noqa: E731


@pytest.fixture(scope="module")
def heldout(kb: KnowledgeBase) -> tuple[list[Task], dict[str, list[str]]]:
    """900 prompts drawn like the held-out set, and two opponents' careless responses."""
    tasks = draw_tasks(np.random.default_rng(11), kb, 900)
    rng = np.random.default_rng(12)
    opponents = {name: [careless_response(rng, t, kb, correct, FILLERS) for t in tasks]
                 for name, correct in (("base", 0.2), ("labelled", 0.45))}
    return tasks, opponents


@pytest.mark.parametrize("name", sorted(PROMPT_INDEPENDENT))
def test_a_prompt_independent_policy_loses_every_comparison(
        name: str, judge: OfflineJudge, kb: KnowledgeBase,
        heldout: tuple[list[Task], dict[str, list[str]]]) -> None:
    tasks, opponents = heldout
    responses = PROMPT_INDEPENDENT[name](tasks, np.random.default_rng(13))
    rates, dependence = forfeiting_win_rates(judge, kb, tasks, responses, opponents)
    assert dependence.ignores_prompts, dependence
    assert rates == {"base": 0.0, "labelled": 0.0}


def test_honest_answers_are_not_taken_for_degenerate(
        judge: OfflineJudge, kb: KnowledgeBase,
        heldout: tuple[list[Task], dict[str, list[str]]]) -> None:
    """Answers that attempt their prompts (right 60% of the time) keep every comparison
    and beat both opponents; the opponents' own responses keep theirs (a tie)."""
    tasks, opponents = heldout
    rng = np.random.default_rng(14)
    honest = [careless_response(rng, t, kb, 0.6, FILLERS) for t in tasks]
    for responses in (honest, opponents["base"], opponents["labelled"]):
        dependence = prompt_dependence(tasks, responses, kb)
        assert not dependence.ignores_prompts and not dependence.blind_families, dependence
        assert dependence.degenerate(tasks) == [False] * len(tasks)
    rates, _ = forfeiting_win_rates(judge, kb, tasks, honest, opponents)
    assert min(rates.values()) > 0.55, rates
    rates, _ = forfeiting_win_rates(judge, kb, tasks, opponents["base"], opponents)
    assert rates["base"] == 0.5


@pytest.mark.parametrize("name", ["function_words", "fluent_sentence", "empty",
                                  "random_characters", "one_word"])
def test_the_judge_alone_never_ranks_a_non_answer_above_an_attempt(
        name: str, judge: OfflineJudge, kb: KnowledgeBase,
        heldout: tuple[list[Task], dict[str, list[str]]]) -> None:
    """Without the set-level look: comparison by comparison, a non-answer loses to every
    attempt and ties with every non-answer, however fluent (the 1.0 judge let "and the"
    win on fluency)."""
    tasks, opponents = heldout
    responses = PROMPT_INDEPENDENT[name](tasks, np.random.default_rng(15))
    for task, mine, theirs in zip(tasks, responses, opponents["labelled"], strict=True):
        if is_attempt(task.prompt, mine, kb):
            continue  # a random string may spell a letter or a trade by chance
        verdict = judge.compare(task.prompt, mine, theirs)
        # (an empty response ranks below a non-answer too: the screen, step 1)
        assert verdict <= (0.0 if is_attempt(task.prompt, theirs, kb) else 0.5), (
            task, mine, theirs)
    rate = win_rates(judge, [t.prompt for t in tasks], responses, opponents)
    assert max(rate.values()) < 0.1, rate


def test_the_echoed_prompt_is_no_attempt(judge: OfflineJudge, kb: KnowledgeBase,
                                         heldout: tuple[list[Task], dict[str, list[str]]]
                                         ) -> None:
    tasks, opponents = heldout
    responses = ECHO(tasks, np.random.default_rng(0))
    # ("Spell 'sleep' backwards." echoed starts with an anagram of sleep, by chance)
    attempts = [is_attempt(t.prompt, r, kb) for t, r in zip(tasks, responses, strict=True)]
    assert sum(map(bool, attempts)) <= 0.01 * len(tasks)
    rates, dependence = forfeiting_win_rates(judge, kb, tasks, responses, opponents)
    assert dependence.ignores_prompts and rates == {"base": 0.0, "labelled": 0.0}


def test_a_family_answered_blind_loses_its_comparisons(
        judge: OfflineJudge, kb: KnowledgeBase,
        heldout: tuple[list[Task], dict[str, list[str]]]) -> None:
    """Honest answers everywhere but one fluent number to every sum: the sums lose."""
    tasks, opponents = heldout
    rng = np.random.default_rng(16)
    responses = ["42. The king rode to the town with his men." if t.family == "add"
                 else careless_response(rng, t, kb, 0.35, FILLERS) for t in tasks]
    rates, dependence = forfeiting_win_rates(judge, kb, tasks, responses, opponents)
    assert dependence.blind_families == ("add",) and not dependence.ignores_prompts
    adds = [i for i, t in enumerate(tasks) if t.family == "add"]
    kept = [i for i in range(len(tasks)) if i not in set(adds)]
    alone = win_rates(judge, [tasks[i].prompt for i in kept], [responses[i] for i in kept],
                      {k: [v[i] for i in kept] for k, v in opponents.items()})
    for name in opponents:  # the sums count as lost, the rest as judged
        assert rates[name] == pytest.approx(alone[name] * len(kept) / len(tasks))


@pytest.mark.parametrize(("prompt", "response", "attempt"), [
    ("What is 12 plus 30?", "41.", True), ("What is 12 plus 30?", "and the", False),
    ("Which is larger, 7 or 19?", "The answer is 3.", True),
    ("Reverse the word 'stone'.", "enots", True), ("Reverse the word 'stone'.", "enost", True),
    ("Reverse the word 'stone'.", "and", False), ("Reverse the word 'stone'.", "stone", True),
    ("Write 'apple' in capital letters.", "APPLE", True),
    ("Write 'apple' in capital letters.", "apple", False),
    ("What is the first letter of 'river'?", "q.", True),
    ("What is the first letter of 'river'?", "The river.", False),
    ("How many letters are in 'bread'?", "five", False),
    ("Tell me a story.", "and the", None),
])
def test_what_counts_as_an_attempt(prompt: str, response: str, attempt: bool | None,
                                   kb: KnowledgeBase) -> None:
    assert is_attempt(prompt, response, kb) is attempt


def test_world_answers_are_attempts_only_from_the_world(kb: KnowledgeBase) -> None:
    country, capital = next(iter(kb.capitals.items()))
    other = next(c for c in kb.capitals.values() if c != capital)
    person = next(iter(kb.trades))
    prompt = f"What is the capital of {country}?"
    assert is_attempt(prompt, f"{other}.", kb) and is_attempt(prompt, capital, kb)
    assert not is_attempt(prompt, "And the", kb) and not is_attempt(prompt, "Paris", kb)
    assert is_attempt(prompt, "Paris", None)  # no world at hand: any proper name
    assert is_attempt(f"What is the trade of {person}?", "sailor", kb)
    assert not is_attempt(f"What is the trade of {person}?", "and the", kb)
