"""SIMULATED weak code model: answers chat-completion requests like a weak LLM would.

This is a simulator, not a language model. It recognises which known problem a prompt is
about (by overlap with the problem statement), then writes an answer drawn from that
problem's reference Rust solution with deterministic mutations: overflowing integer types,
flipped comparisons, off-by-one literals, swapped min/max, syntax errors, imports of crates
that do not exist, chatty output, or an answer in another language when the prompt does not
ask for Rust. Its mistakes are correlated, as a real model's are: most wrong answers to a
problem repeat that problem's habitual mistake (one mutation fixed per problem and prompt
hints), so the correct program is not the centre of a set of samples (before 1.3.2 each
wrong answer was its own mutation of the reference, and the textual medoid of 16 samples
was the correct program on 23 of 32 problems: normalized 1.7 without a compiler). Every
number that shapes its behaviour is a constant below and is documented in the environment's
README.

Determinism: the answer is a function of (simulator seed, problem, prompt text with the
problem's statement, when quoted whole, standing for the problem, temperature, request seed,
and how many times the same prompt was asked before), so a fixed scaffold run
twice gets the same answers, while asking again gives fresh samples at temperature > 0.
The held-out scoring's seed is drawn at prepare and kept from the agent (since 1.4.0: with
the public seed a scaffold could compute, in its own process, which request seed makes the
first sample the correct program: normalized 4.8 with one request a problem).

A repair request (a fenced program and words such as "wrong" or "fix") gets the repair
bonus only when the program it quotes is one this simulator wrote for that problem: since
1.4.0 a first request that only claims to repair a dummy program gets no bonus, and since
1.4.1 only a Rust program drawn for the problem and sent whole counts (not the fixed texts
any answer may hold, nor an answer cut by max_tokens).
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .mutations import compare, offbyone, one_bug

MODEL_NAME = "weak-coder-simulator"

# Chance that one sample at temperature <= 1 is correct, by problem difficulty (1 easy .. 3).
BASE_SUCCESS = {1: 0.16, 2: 0.08, 3: 0.04}
SECOND_BUG = 0.5  # chance that a wrong answer has a second, subtle bug
HABIT = 0.7  # chance that a wrong answer is the problem's habitual mistake (then maybe a second)
# The habits are the model's own, the same whatever the sampling seed (1.4.0): a model's
# usual mistake on a problem is a property of the model and the problem. (Keying them on
# the problem alone did not narrow the reference's spread over the scorer's secret seeds:
# 12 to 20 of 32 either way, README's Anchors.)
HABIT_SEED = 20241122
COT_FACTOR = 1.5  # prompt asks to think step by step / reason first
GREEDY_FACTOR = 1.2  # temperature 0: the single most likely answer is a bit better
REPAIR_SUCCESS = (2.0, 0.10, 0.75)  # repair prompt: min(cap, factor * p + bonus)
# How wrong answers go wrong (relative weights; a hint in the prompt scales its bug down).
BUG_WEIGHTS = {
    "overflow": 0.12,  # 64-bit integers narrowed to 32 bits: passes small tests only
    "buffer": 0.30,  # reads stdin into a fixed 256-byte buffer: passes small tests only
    "compare": 0.12,  # one comparison flipped (< vs <=): subtle, sometimes harmless
    "offbyone": 0.12,  # one integer literal off by one
    "minmax": 0.05,  # one min/max swapped
    "syntax": 0.12,  # a missing semicolon or brace: does not compile
    "crate": 0.07,  # uses a crate that is not available: does not compile
    "chatty": 0.05,  # prints a label before the answer
    "stub": 0.05,  # leaves the algorithm as a TODO
}
HINTS = {  # prompt phrase -> (bug it discourages, remaining weight factor)
    "overflow": ("overflow", 0.3), "64-bit": ("overflow", 0.3), "i64": ("overflow", 0.3),
    "large input": ("buffer", 0.3), "whole input": ("buffer", 0.3),
    "entire input": ("buffer", 0.3),
    "edge case": ("compare", 0.5), "corner case": ("compare", 0.5),
    "standard library only": ("crate", 0.2), "no external crates": ("crate", 0.2),
    "only print": ("chatty", 0.3), "complete": ("stub", 0.4),
}
OTHER_LANGUAGE_WITHOUT_RUST = 0.75  # chance of answering in Python/C++ when Rust is not asked
OTHER_LANGUAGE_WITH_RUST = 0.03
MAX_N = 8
TOKENS_PER_CHAR = 0.25


@dataclass(frozen=True)
class KnownProblem:
    """What the simulator knows of a problem: its statement and a correct solution."""

    id: str
    difficulty: int
    description: str
    solution: str


@dataclass(frozen=True)
class PromptFeatures:
    asks_rust: bool
    chain_of_thought: bool
    repair: bool
    hints: tuple[str, ...]


def count_tokens(text: str) -> int:
    """Rough token count (4 characters a token), used for usage and budgets."""
    return max(1, math.ceil(len(text) * TOKENS_PER_CHAR))


def _hash(*parts: object) -> int:
    data = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def _shingles(text: str, k: int = 6) -> set[int]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {_hash(*words[i : i + k]) for i in range(max(0, len(words) - k + 1))}


def prompt_text(messages: Sequence[Any]) -> str:
    """All text of the messages, whatever their content shape."""
    parts = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
    return "\n".join(parts)


REPAIR_WORDS = re.compile(r"\b(?:errors?|wrong|fail\w*|incorrect|fix\w*)\b")
FENCED = re.compile(r"```[^\n`]*\n(.*?)```", re.S)
MAX_WRITTEN = 4096  # programs remembered per problem for the repair check


def _program_key(code: str) -> int:
    """A program's identity for the repair check, spacing folded."""
    return _hash(" ".join(code.split()))


def features(text: str) -> PromptFeatures:
    low = text.lower()
    cot = any(k in low for k in ("step by step", "think", "reason", "explain your"))
    repair = "```" in text and REPAIR_WORDS.search(low) is not None
    hints = tuple(h for h in HINTS if h in low)
    return PromptFeatures("rust" in low, cot, repair, hints)


class Simulator:
    """Thread-safe; `complete(body)` maps a chat-completions request body to a response."""

    def __init__(self, problems: Sequence[KnownProblem], seed: int) -> None:
        self.problems = list(problems)
        self.seed = seed
        self._shingles = [_shingles(p.description) for p in self.problems]
        self._asked: dict[int, int] = {}
        self._written: dict[str, set[int]] = {}  # problem id -> programs this simulator wrote
        self._lock = threading.Lock()

    def identify(self, text: str) -> KnownProblem | None:
        """The problem whose statement the prompt contains (most of its 6-word shingles)."""
        seen = _shingles(text[:200_000])
        best, best_score = None, 0.6
        for problem, sh in zip(self.problems, self._shingles, strict=True):
            score = len(sh & seen) / max(1, len(sh))
            if score > best_score:
                best, best_score = problem, score
        return best

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """A chat.completion object for a validated request body."""
        text = prompt_text(body.get("messages") or [])
        n = int(body.get("n") or 1)
        given = body.get("temperature")
        temperature = 1.0 if given is None else float(given)
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        problem = self.identify(text)
        feats = features(text)
        if feats.repair and not self.quotes_own_program(problem, text):
            feats = replace(feats, repair=False)  # a claim of repair, with no program of ours
        # The statement quoted whole stands for the problem itself, so a scaffold's samples do
        # not depend on which test instances prepare drew (examples are part of the statement).
        keyed = text.replace(problem.description, f"<problem {problem.id}>") if problem else text
        prompt_key = _hash(keyed, round(temperature, 3), body.get("seed"))
        with self._lock:
            repeat = self._asked.get(prompt_key, 0)
            self._asked[prompt_key] = repeat + 1
        choices, completion_tokens = [], 0
        for i in range(n):
            sample = 0 if temperature == 0 else repeat * n + i
            pid = problem.id if problem else "-"
            rng = random.Random(_hash(self.seed, pid, prompt_key, sample))
            answer, program = self._answer(rng, problem, feats, temperature)
            finish = "stop"
            tokens = count_tokens(answer)
            if isinstance(max_tokens, int) and 0 < max_tokens < tokens:
                answer = answer[: int(max_tokens / TOKENS_PER_CHAR)]
                tokens, finish = max_tokens, "length"
            if program is not None and program.rstrip() in answer:
                self._remember(pid, program)  # only a Rust program it drew, as sent whole
            completion_tokens += tokens
            choices.append({"index": i, "finish_reason": finish, "logprobs": None,
                            "message": {"role": "assistant", "content": answer}})
        prompt_tokens = count_tokens(text)
        return {
            "id": f"chatcmpl-sim-{prompt_key:x}-{repeat}",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL_NAME,
            "system_fingerprint": "simulator",
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def _remember(self, pid: str, program: str) -> None:
        """Remember a program this simulator wrote for problem `pid` and sent whole: the
        problem's solution or a mutation of it. Fixed texts that any answer may hold (the
        other languages' programs, the chain of thought's sample block) are not programs
        it wrote for the problem, and a program cut off by max_tokens was never sent (red
        team, 2026-12-07e: both let a repair be claimed without a draft)."""
        with self._lock:
            written = self._written.setdefault(pid, set())
            if len(written) < MAX_WRITTEN:
                written.add(_program_key(program))

    def quotes_own_program(self, problem: KnownProblem | None, text: str) -> bool:
        """Whether the prompt quotes, in a fence, a program this simulator wrote for the
        problem (a real repair request)."""
        if problem is None:
            return False
        with self._lock:
            written = self._written.get(problem.id, set())
            return any(_program_key(code) in written for code in FENCED.findall(text))

    def _answer(self, rng: random.Random, problem: KnownProblem | None, feats: PromptFeatures,
                temperature: float) -> tuple[str, str | None]:
        """The answer's text, and the Rust program drawn for the problem that it holds
        (None for a garbled answer, another language or no problem identified)."""
        if temperature > 1.3 and rng.random() < min(0.9, (temperature - 1.3) * 1.5):
            return _garbled(rng), None
        if problem is None:
            return _wrap(rng, GENERIC_RUST, "rust", feats, "I am not sure what the task is."), None
        other = OTHER_LANGUAGE_WITH_RUST if feats.asks_rust else OTHER_LANGUAGE_WITHOUT_RUST
        if rng.random() < other:
            lang = rng.choice(["python", "python", "cpp"])
            return _wrap(rng, OTHER_LANGUAGE[lang], lang, feats, ""), None
        p = success_probability(problem.difficulty, feats, temperature)
        if rng.random() < p:
            code = problem.solution
        elif rng.random() < HABIT:
            code = habitual_mistake(HABIT_SEED, problem, bug_weights(feats))
            if rng.random() < SECOND_BUG:
                code = rng.choice([compare, offbyone])(rng, code)
        else:
            code = mutate(rng, problem.solution, bug_weights(feats))
        return _wrap(rng, code, "rust", feats, ""), code


def success_probability(difficulty: int, feats: PromptFeatures, temperature: float) -> float:
    """Chance that one sample is the correct program."""
    p = BASE_SUCCESS.get(difficulty, BASE_SUCCESS[3])
    if feats.chain_of_thought:
        p *= COT_FACTOR
    if temperature == 0:
        p *= GREEDY_FACTOR
    elif temperature > 1.0:
        p *= max(0.0, 1.0 - 0.8 * (temperature - 1.0))
    if feats.repair:
        factor, bonus, cap = REPAIR_SUCCESS
        p = min(cap, factor * p + bonus)
    return min(p, 0.95)


def bug_weights(feats: PromptFeatures) -> dict[str, float]:
    weights = dict(BUG_WEIGHTS)
    for hint in feats.hints:
        bug, factor = HINTS[hint]
        weights[bug] *= factor
    return weights


def mutate(rng: random.Random, code: str, weights: dict[str, float]) -> str:
    """A plausible wrong version of `code`: one bug drawn by `weights`, and a second, subtle
    one with chance SECOND_BUG."""
    out = one_bug(rng, code, weights)
    if rng.random() < SECOND_BUG:
        out = rng.choice([compare, offbyone])(rng, out)
    return out


def habitual_mistake(seed: int, problem: KnownProblem, weights: dict[str, float]) -> str:
    """The problem's habitual wrong program: one bug, drawn by `weights` (a hint in the
    prompt makes its kind less likely) from randomness fixed by `seed` (HABIT_SEED) and
    the problem, the same for every sample and every scaffold."""
    key = ",".join(f"{k}={weights[k]:.4f}" for k in sorted(weights))
    return one_bug(random.Random(_hash(seed, problem.id, "habit", key)), problem.solution,
                    weights)


GENERIC_RUST = """use std::io::{self, Read};

fn main() {
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let n: i64 = input.trim().split_whitespace().next().unwrap_or("0").parse().unwrap_or(0);
    println!("{}", n);
}
"""
OTHER_LANGUAGE = {
    "python": "import sys\n\n\ndef main():\n    data = sys.stdin.read().split()\n"
              "    n = int(data[0])\n    print(n)\n\n\nif __name__ == \"__main__\":\n    main()\n",
    "cpp": "#include <bits/stdc++.h>\nusing namespace std;\n\nint main() {\n    long long n;\n"
           "    cin >> n;\n    cout << n << endl;\n    return 0;\n}\n",
}
INTROS = ("Here is a solution to the problem:", "Sure! Here's my solution.",
          "Below is an implementation that solves the task.", "Here's how you can solve it:")
OUTROS = ("This solution reads the input, computes the answer and prints it.",
          "The time complexity is linear in the input size.",
          "Let me know if you have any questions!", "")
COT_LINES = ("Let's think step by step.", "1. Parse the input carefully.",
             "2. Work out the key observation of the problem.",
             "3. Implement it efficiently and print the answer.")


def _wrap(rng: random.Random, code: str, lang: str, feats: PromptFeatures, note: str) -> str:
    """Markdown around the code, like a chat model writes it."""
    tag = lang if lang != "rust" else rng.choices(["rust", "", "rs"], weights=[0.8, 0.12, 0.08])[0]
    parts = [note or rng.choice(INTROS)]
    if feats.chain_of_thought:
        parts.append("\n".join(COT_LINES))
        if rng.random() < 0.3:
            parts.append("For example, for the first sample:\n```text\n3\n1 2 3\n```")
    parts.append(f"```{tag}\n{code.rstrip()}\n```")
    parts.append(rng.choice(OUTROS))
    return "\n\n".join(p for p in parts if p) + "\n"


def _garbled(rng: random.Random) -> str:
    words = ["fn", "let", "the", "mut", "vector", "::", "{", "}", "answer", "input", "=>", "loop"]
    return " ".join(rng.choice(words) for _ in range(rng.randint(20, 80)))
