"""Whether a response attempts to answer its prompt, and whether a policy's responses depend
on their prompts at all. Trusted side only (the judge and the scorer).

An *attempt* is a response whose answer (its first word, tasks.extract_answer) is an answer
of the kind the prompt asks for and, where the prompt gives material, is made of it: a
number for the arithmetic, comparison and counting families; a single letter for a first
letter; the word's letters (all but two at most, in any order) for reversing, the same in
capitals for upper-casing; one of the world's capitals for a capital; one of the trades
for a trade. A wrong answer of the right kind is an attempt; "and the", an echo of the
prompt, an empty or a random response is not. The judge ranks an attempt above a
non-attempt before it looks at correctness or fluency, and never ranks two non-attempts
by fluency (judge.py), so a fluent non-answer cannot win.

A *prompt-independent* policy (`prompt_dependence`) is one whose responses fit their own
prompts no better than they fit other prompts of the same set (a constant phrase, a fixed
template, random text), or that gives one response to most prompts. Scoring makes such a
policy lose every comparison, and the responses of a family answered without reading its
arguments (one answer to most of its prompts, far more often than its right answers
repeat) lose theirs (scoring.py): per comparison, a constant "42. The king rode to the
town." is an attempt at every arithmetic prompt, and only the set of responses shows that
it ignores them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rebench.environments.nanogpt_chat_rl.tasks import (
    TRADES,
    KnowledgeBase,
    Task,
    extract_answer,
    parse_prompt,
)

# How many letters a reversal or upper-casing may miss or add and still be an attempt at
# that word (a swapped or dropped letter is a wrong answer, not a non-answer).
LETTER_SLACK = 2

Kind = Callable[[str, Mapping[str, str], KnowledgeBase | None], bool]


def _number(answer: str, args: Mapping[str, str], kb: KnowledgeBase | None) -> bool:
    return answer.isascii() and answer.isdigit() and len(answer) <= 6


def _letter(answer: str, args: Mapping[str, str], kb: KnowledgeBase | None) -> bool:
    return len(answer) == 1 and answer.isascii() and answer.isalpha()


def _made_of_word(answer: str, word: str) -> bool:
    """`answer` uses the letters of `word`, up to LETTER_SLACK missing or extra."""
    if not (answer.isascii() and answer.isalpha()):
        return False
    mine, theirs = Counter(answer.lower()), Counter(word.lower())
    shared = sum((mine & theirs).values())
    return max(len(answer), len(word)) - shared <= LETTER_SLACK


def _reversal(answer: str, args: Mapping[str, str], kb: KnowledgeBase | None) -> bool:
    return _made_of_word(answer, args["w"])


def _capitals(answer: str, args: Mapping[str, str], kb: KnowledgeBase | None) -> bool:
    return (answer.isupper() or len(answer) == 1) and _made_of_word(answer, args["w"])


def _capital(answer: str, args: Mapping[str, str], kb: KnowledgeBase | None) -> bool:
    if kb is not None:
        return answer.lower() in {c.lower() for c in kb.capitals.values()}
    # Without the world (an endpoint judge with no prepared assets): a proper name.
    return answer.isascii() and answer.isalpha() and len(answer) >= 4 and answer.istitle()


def _trade(answer: str, args: Mapping[str, str], kb: KnowledgeBase | None) -> bool:
    return answer.lower() in TRADES


KINDS: Mapping[str, Kind] = {
    "add": _number, "subtract": _number, "larger": _number, "length": _number,
    "first": _letter, "reverse": _reversal, "upper": _capitals,
    "capital": _capital, "trade": _trade,
}


def is_attempt(prompt: str, response: str, kb: KnowledgeBase | None) -> bool | None:
    """Whether `response` attempts an answer to `prompt`; None when the prompt is not in
    one of the families' phrasings (nothing to decide)."""
    parsed = parse_prompt(prompt)
    if parsed is None:
        return None
    family, args = parsed
    answer = extract_answer(response)
    return bool(answer) and KINDS[family.name](answer, args, kb)


# A policy whose responses fit their own prompts by less than this share more often than
# they fit the prompts they were not written for ignores its prompts. Measured on a cpu
# prepare (README): the base student and the labelled opponent fit their own prompts
# 0.30 and 0.39 more often; every constant, template, echo or random policy within 0.01.
MIN_LIFT = 0.15
# A policy that gives one response (up to case, spacing and punctuation) to more than
# this share of all prompts ignores them (honest models: 1.4%).
MAX_SAME_SHARE = 0.3
# Within one family, a policy whose most frequent answer is given to more than this share
# of the family's prompts, and to this much more than the right answers repeat, answers
# that family without reading its arguments ("42." to every sum). Honest models on a cpu
# prepare: at most 0.24 (the labelled opponent's "s" for first letters; the truths' "4"
# for letter counts: 0.36).
MAX_FAMILY_SHARE = 0.5
FAMILY_SHARE_OVER_TRUTH = 0.2


@dataclass(frozen=True)
class Dependence:
    """How a set of responses depends on its prompts."""

    own: float  # share of the (parsed) prompts their own response attempts
    shifted: float  # the same responses against other prompts of the set
    same_share: float  # share of the responses equal to the most frequent one
    blind_families: tuple[str, ...]  # families answered without reading the arguments

    @property
    def lift(self) -> float:
        return self.own - self.shifted

    @property
    def ignores_prompts(self) -> bool:
        """The whole policy ignores its prompts: every response is degenerate."""
        return self.lift < MIN_LIFT or self.same_share > MAX_SAME_SHARE

    def degenerate(self, tasks: Sequence[Task]) -> list[bool]:
        """Which responses (one per task) are degenerate: all when the policy ignores its
        prompts, else those of the blind families."""
        if self.ignores_prompts:
            return [True] * len(tasks)
        return [t.family in self.blind_families for t in tasks]

    def to_json(self) -> dict[str, object]:
        return {"own": round(self.own, 4), "shifted": round(self.shifted, 4),
                "same_share": round(self.same_share, 4),
                "blind_families": list(self.blind_families),
                "ignores_prompts": self.ignores_prompts}


def _normalized(response: str) -> str:
    kept = "".join(ch if ch.isalnum() else " " for ch in response.lower())
    return " ".join(kept.split())


def _modal_share(values: Sequence[str]) -> float:
    return Counter(values).most_common(1)[0][1] / len(values) if values else 0.0


def blind_families(tasks: Sequence[Task], responses: Sequence[str]) -> tuple[str, ...]:
    """The families whose answers repeat far more than their right answers do."""
    by_family: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        by_family.setdefault(task.family, []).append(i)
    blind = []
    for family, rows in sorted(by_family.items()):
        mine = _modal_share([extract_answer(responses[i]).lower() for i in rows])
        truth = _modal_share([tasks[i].answer.lower() for i in rows])
        if mine > max(MAX_FAMILY_SHARE, truth + FAMILY_SHARE_OVER_TRUTH):
            blind.append(family)
    return tuple(blind)


def prompt_dependence(tasks: Sequence[Task], responses: Sequence[str],
                      kb: KnowledgeBase | None) -> Dependence:
    """The attempt rate of each response on its own prompt against the rate on the
    prompt `len/2 + 1` places on (a fixed derangement: over a held-out set drawn family
    by family, most shifted prompts are of another family), the share of the most
    frequent response, and the families answered blind."""
    n = len(tasks)
    if n < 2 or len(responses) != n:
        raise ValueError("need two or more prompts, one response each")
    prompts = [t.prompt for t in tasks]
    step = n // 2 + 1 if n > 2 else 1
    own = [is_attempt(p, r, kb) for p, r in zip(prompts, responses, strict=True)]
    shifted = [is_attempt(prompts[(i + step) % n], r, kb) for i, r in enumerate(responses)]
    decided_own = [bool(x) for x in own if x is not None]
    decided_shifted = [bool(x) for x in shifted if x is not None]
    return Dependence(
        own=sum(decided_own) / max(1, len(decided_own)),
        shifted=sum(decided_shifted) / max(1, len(decided_shifted)),
        same_share=_modal_share([_normalized(r) for r in responses]),
        blind_families=blind_families(tasks, responses))
