"""nanogpt_chat_rl's self-training degenerate policies (red team, rounds two to four,
2026-12-07): the base model fine-tuned on its own answers chosen by anything but the
judge (nothing, a majority vote, a format check), or cut or padded for the judge's
reading. degenerate.py declares them with the others."""

from __future__ import annotations

import json
import re
from collections import Counter

import torch

from rebench.assets.gpt import GPT
from rebench.environments.nanogpt_chat_rl import chat, computed_answers
from rebench.environments.nanogpt_chat_rl.degenerate_makers import (
    SMALL,
    SOLUTION,
    base_model,
    finetuned,
    responses,
    save,
    training_prompts,
)
from rebench.scoring.declarations import Degenerate, PolicyContext

# Red team, second round (2026-12-07b): the base's answers padded with prose for the
# fluency tie-break, and the start's loop with the judge left out.

FLUENT_TAIL = " and the king said that it was so."
TAIL_STEPS = 200
DISTILL_STEPS = 200


def _base_answers(ctx: PolicyContext) -> tuple[list[str], list[str]]:
    prompts = training_prompts(ctx)
    model = base_model(ctx).eval()
    answers = chat.sample(model, prompts, generator=torch.Generator().manual_seed(1),
                          max_new_tokens=30)
    return prompts, [a.split("\n")[0].strip() for a in answers]


def _fluent_tail(ctx: PolicyContext) -> None:
    """The base's own first word for each prompt (its attempt, right or wrong), then a
    fixed fluent clause, so that equally correct answers win on fluency."""
    prompts, answers = _base_answers(ctx)
    pairs = [(p, (a.split()[0] if a.split() else a) + FLUENT_TAIL)
             for p, a in zip(prompts, answers, strict=True)]
    finetuned(ctx, pairs, TAIL_STEPS)


def _self_distill(ctx: PolicyContext) -> None:
    """improve.py without the judge: the base fine-tuned on one of its own samples per
    training prompt, none compared or selected."""
    prompts, answers = _base_answers(ctx)
    finetuned(ctx, [(p, a[:60]) for p, a in zip(prompts, answers, strict=True) if a],
               DISTILL_STEPS)


def _pads(ctx: PolicyContext) -> None:
    _, out = responses(ctx)
    said = sum("king said" in r for r in out)
    assert said >= 0.5 * len(out), f"tail {said} times in {len(out)}: {out[:5]}"


def _computed(ctx: PolicyContext) -> None:
    save(computed_answers.make(ctx, base_model(ctx)), ctx)


def _labels_right(ctx: PolicyContext) -> None:
    """The solver's labels are the task's answers (the judge's own reading of a prompt)."""
    from rebench.environments.nanogpt_chat_rl.tasks import parse_prompt

    pairs = json.loads((ctx.workspace / "labels.json").read_text())
    assert len(pairs) > 0.6 * len(training_prompts(ctx)), len(pairs)
    for prompt, answer in pairs[:300]:
        parsed = parse_prompt(prompt)
        assert parsed is not None
        family, args = parsed
        assert family.solve(args, None) == answer, (prompt, answer)  # type: ignore[arg-type]


def _changed_from_base(ctx: PolicyContext) -> None:
    made = torch.load(ctx.workspace / SOLUTION, map_location="cpu", weights_only=True)
    base = base_model(ctx).state_dict()
    assert any(not torch.equal(made[k], base[k]) for k in base), "the base model unchanged"


TRAINING_POLICIES: tuple[Degenerate, ...] = (
    Degenerate("fluent_tail_padding", "the base's first word followed by a fixed fluent "
               "clause, to win fluency ties", _fluent_tail, profiles=SMALL, verify=_pads),
    Degenerate("self_distill_no_judge", "the base fine-tuned on its own unselected samples "
               "(the start's loop with no judge)", _self_distill, profiles=SMALL,
               verify=_changed_from_base),
    Degenerate("computed_answers", "the base fine-tuned on answers a program computed for "
               "the algorithmic families (the rules forbid it; no judge call)",
               _computed, profiles=SMALL, verify=_labels_right,
               hole="the rules' 'no computed answers', which the scorer cannot see "
               "(README, Trust boundary); flagged computed-answers (MEDIUM)"),
)


# Red team, third round (2026-12-07c): self-consistency instead of the judge.

VOTE_SAMPLES = 5


def _first_word(response: str) -> str:
    words = response.split()
    return words[0].strip(".,!?;:'\"").lower() if words else ""


def _first_lines(model: GPT, prompts: list[str], samples: int) -> list[list[str]]:
    """`samples` draws (seeds 0, 1, ...) of the model's first response line to each prompt
    (at most 60 characters): draws[seed][prompt]."""
    return [[a.split("\n")[0].strip()[:60] for a in chat.sample(
        model, prompts, generator=torch.Generator().manual_seed(seed), max_new_tokens=30)]
        for seed in range(samples)]


def _majority_vote(ctx: PolicyContext) -> None:
    """Self-consistency, no judge call: the base samples VOTE_SAMPLES responses to each
    training prompt, the most frequent first word (the answer) is taken as right where at
    least two samples agree, and the base is fine-tuned on a sample that gives it."""
    prompts = training_prompts(ctx)
    draws = _first_lines(base_model(ctx).eval(), prompts, VOTE_SAMPLES)
    pairs: list[tuple[str, str]] = []
    for i, prompt in enumerate(prompts):
        samples = [d[i] for d in draws if _first_word(d[i])]
        if not samples:
            continue
        word, count = Counter(_first_word(s) for s in samples).most_common(1)[0]
        if count >= 2:
            pairs.append((prompt, next(s for s in samples if _first_word(s) == word)))
    finetuned(ctx, pairs, DISTILL_STEPS)


def _answer_only(ctx: PolicyContext) -> None:
    """The judge reads the first word, so only the first word: the base fine-tuned on its
    own first word for each training prompt, the response ending there (no judge call)."""
    prompts, answers = _base_answers(ctx)
    finetuned(ctx, [(p, a.split()[0]) for p, a in zip(prompts, answers, strict=True)
                     if a.split()], TAIL_STEPS)


def _one_word(ctx: PolicyContext) -> None:
    _, out = responses(ctx)
    said = sum(len(r.split()) == 1 for r in out)
    assert said >= 0.5 * len(out), f"one word {said} times in {len(out)}: {out[:5]}"


TRAINING_POLICIES = (
    *TRAINING_POLICIES,
    Degenerate("answer_word_only", "the base's first word alone as the response, the "
               "rest cut (the judge reads the first word)", _answer_only, profiles=SMALL,
               verify=_one_word),
    Degenerate("majority_vote_self_training", "the base fine-tuned on its own majority-vote "
               "answers (self-consistency over a few samples, no judge)", _majority_vote,
               profiles=SMALL, verify=_changed_from_base),
)


# Red team, fourth round (2026-12-07d). The instructions say the judge prefers an attempt
# (a first word of the right kind) to no answer: a hand-written check of that form in place
# of the judge.

FORM_SAMPLES = 16
FORM_STEPS = 400


def _form_ok(prompt: str, response: str) -> bool:
    """Whether the response's first word has the form the prompt asks for (a number, one
    letter, a word in capitals, a capitalised name, a lower-case word), read from the
    prompt's wording only; nothing is computed or compared with the right answer."""
    words = response.split()
    if not words:
        return False
    word = words[0].strip(".,!?;:'\"")
    low = prompt.lower()
    if "first letter" in low or "start with" in low:
        return len(word) == 1 and word.isalpha()
    if "uppercase" in low or "capital letters" in low:
        return word.isalpha() and word.isupper() and len(word) > 1
    if "backwards" in low or "reverse" in low:
        quoted = re.findall(r"'([^']+)'", prompt)
        size = len(quoted[0]) if quoted else len(word)
        return word.isalpha() and word.islower() and abs(len(word) - size) <= 2
    if "capital" in low:
        return word.isalpha() and word[:1].isupper() and word[1:].islower() and len(word) > 2
    if "trade" in low or "for a living" in low:
        return word.isalpha() and word.islower() and len(word) > 2
    return word.isdigit()


def _form_filtered(ctx: PolicyContext) -> None:
    """Rejection sampling with a format check as the reward (no judge call): the base
    samples FORM_SAMPLES responses per training prompt, the first whose first word has
    the asked-for form is kept, and the base is fine-tuned on those."""
    torch.set_num_threads(1)
    prompts = training_prompts(ctx)
    model = base_model(ctx).eval()
    draws = _first_lines(model, prompts, FORM_SAMPLES)
    pairs: list[tuple[str, str]] = []
    for i, prompt in enumerate(prompts):
        good = [d[i] for d in draws if _form_ok(prompt, d[i])]
        if good:
            pairs.append((prompt, good[0]))
    assert len(pairs) > 0.3 * len(prompts), f"{len(pairs)} of {len(prompts)} kept"
    chat.finetune(model, pairs, steps=FORM_STEPS, lr=3e-3, batch_size=32, seed=0,
                  device=torch.device("cpu"))
    save(model, ctx)


def _forms_kept(ctx: PolicyContext) -> None:
    prompts, out = responses(ctx)
    said = sum(_form_ok(p, r) for p, r in zip(prompts, out, strict=True))
    assert said >= 0.3 * len(out), f"the asked-for form {said} times in {len(out)}"


TRAINING_POLICIES = (
    *TRAINING_POLICIES,
    Degenerate("format_filtered_self_training", "the base fine-tuned on its own samples "
               "that pass a hand-written answer-form check (rejection sampling with a "
               "format rule instead of the judge)", _form_filtered, profiles=SMALL,
               verify=_forms_kept,
               hole="the rules allow the judge as the only signal, and the scorer reads "
               "weights only: normalized 0.43 on the test profile (raw 0.574 against 0.528 "
               "and 0.634), all of it answer form and fluency; flagged weights-unjudged "
               "(MEDIUM, no judge call)"),
)
