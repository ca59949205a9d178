"""The instruction families of nanogpt_chat_rl: prompts whose better answer can be decided.

Nine families, each with two or three phrasings. Seven are computed from the prompt
(arithmetic, comparison and word manipulation); two ask about a fictional world (the capital
of a country, the trade of a person) held in a knowledge base drawn from the prepare's secret,
so no public file or program holds their answers: only the judge and the noisy pre-training
text know them. Every answer is a single word or number.

The judge parses any prompt back into its family and arguments (`parse_prompt`), so it can
decide correctness for prompts the agent writes itself as long as they follow a phrasing.
A response's answer is its first word, after an optional "The answer is" / "Answer:"
(`extract_answer`); whatever follows is judged for fluency only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Common words for the word families (3-7 lowercase letters).
_WORD_TEXT = """
apple bread chair table river stone light night water green house mouse horse field
cloud storm grass plant sugar honey money paper glass metal sword crown queen king
ship boat road hill tree leaf rose bird fish wolf bear lion deer goat sheep lamb
fire earth wind rain snow star moon sun sky sea sand rock gold iron wood wall door
gate town city farm barn mill well bell book page word song poem tale dream sleep
heart hand head face eyes mouth voice smile tears blood bone skin hair foot knee
friend enemy father mother sister brother child woman man people world peace war
faith hope love truth grace glory power honor shame fear anger joy sorrow time
summer winter spring autumn morning evening silver copper garden forest valley
castle bridge tower market temple church window candle blanket basket pencil rabbit
turtle spider monkey tiger eagle parrot lemon cherry orange potato carrot onion
"""
WORDS: tuple[str, ...] = tuple(_WORD_TEXT.split())

# Fictional names for the knowledge base (built from syllables).
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
           "kr", "tr", "st", "th", "sh", "gl", "pl")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ei", "ou")
_CODAS = ("", "n", "r", "l", "s", "th", "m", "nd", "rk")
TRADES: tuple[str, ...] = ("baker", "farmer", "sailor", "doctor", "teacher", "painter",
                           "miller", "weaver", "potter", "hunter", "singer", "tailor",
                           "smith", "fisher", "guard", "cook", "clerk", "mason", "carpenter",
                           "shepherd")


@dataclass(frozen=True)
class KnowledgeBase:
    """The fictional world: country -> capital, person -> trade."""

    capitals: Mapping[str, str]
    trades: Mapping[str, str]

    def to_json(self) -> dict[str, dict[str, str]]:
        return {"capitals": dict(self.capitals), "trades": dict(self.trades)}

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, str]]) -> KnowledgeBase:
        return cls(dict(data["capitals"]), dict(data["trades"]))


def _name(rng: np.random.Generator, syllables: int) -> str:
    parts = [str(rng.choice(_ONSETS)) + str(rng.choice(_VOWELS)) + str(rng.choice(_CODAS))
             for _ in range(syllables)]
    return "".join(parts).capitalize()


def make_knowledge_base(rng: np.random.Generator, countries: int, people: int) -> KnowledgeBase:
    """`countries` countries with distinct capitals and `people` people with trades."""
    used: set[str] = set(w.capitalize() for w in WORDS)

    def fresh(syllables: int) -> str:
        while True:
            name = _name(rng, syllables)
            if name not in used and 4 <= len(name) <= 10:
                used.add(name)
                return name

    capitals = {fresh(2) + "ia": fresh(2) for _ in range(countries)}
    trades = {f"{fresh(2)} {fresh(2)}": str(rng.choice(TRADES)) for _ in range(people)}
    return KnowledgeBase(capitals, trades)


@dataclass(frozen=True)
class Family:
    """One kind of instruction: its phrasings (str.format templates), how to draw its
    arguments and how to compute its answer (None when it cannot: an unknown name)."""

    name: str
    phrasings: tuple[str, ...]
    draw: Callable[[np.random.Generator, KnowledgeBase], dict[str, str]]
    solve: Callable[[Mapping[str, str], KnowledgeBase], str | None]
    case_sensitive: bool = False


def _two_numbers(low: int, high: int) -> Callable[[np.random.Generator, KnowledgeBase],
                                                   dict[str, str]]:
    def draw(rng: np.random.Generator, kb: KnowledgeBase) -> dict[str, str]:
        a, b = (int(x) for x in rng.integers(low, high + 1, size=2))
        return {"a": str(a), "b": str(b)}
    return draw


def _difference(rng: np.random.Generator, kb: KnowledgeBase) -> dict[str, str]:
    a = int(rng.integers(10, 100))
    return {"a": str(a), "b": str(int(rng.integers(1, a + 1)))}


def _distinct_numbers(rng: np.random.Generator, kb: KnowledgeBase) -> dict[str, str]:
    a, b = (int(x) for x in rng.choice(np.arange(1, 100), size=2, replace=False))
    return {"a": str(a), "b": str(b)}


def _word(rng: np.random.Generator, kb: KnowledgeBase) -> dict[str, str]:
    return {"w": str(rng.choice(WORDS))}


def _country(rng: np.random.Generator, kb: KnowledgeBase) -> dict[str, str]:
    return {"c": str(rng.choice(sorted(kb.capitals)))}


def _person(rng: np.random.Generator, kb: KnowledgeBase) -> dict[str, str]:
    return {"p": str(rng.choice(sorted(kb.trades)))}


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) <= 6 else None


def _arith(op: Callable[[int, int], int]) -> Callable[[Mapping[str, str], KnowledgeBase],
                                                     str | None]:
    def solve(args: Mapping[str, str], kb: KnowledgeBase) -> str | None:
        a, b = _number(args["a"]), _number(args["b"])
        return None if a is None or b is None else str(op(a, b))
    return solve


def _larger(args: Mapping[str, str], kb: KnowledgeBase) -> str | None:
    a, b = _number(args["a"]), _number(args["b"])
    return None if a is None or b is None or a == b else str(max(a, b))


def _on_word(op: Callable[[str], str]) -> Callable[[Mapping[str, str], KnowledgeBase],
                                                   str | None]:
    def solve(args: Mapping[str, str], kb: KnowledgeBase) -> str | None:
        word = args["w"]
        return op(word) if word.isalpha() and word.isascii() else None
    return solve


FAMILIES: tuple[Family, ...] = (
    Family("add", ("What is {a} plus {b}?", "Add {a} and {b}.", "Compute {a} + {b}."),
           _two_numbers(1, 49), _arith(lambda a, b: a + b)),
    Family("subtract", ("What is {a} minus {b}?", "Subtract {b} from {a}.",
                        "Compute {a} - {b}."),
           _difference, _arith(lambda a, b: a - b)),
    Family("larger", ("Which is larger, {a} or {b}?", "Which number is bigger: {a} or {b}?"),
           _distinct_numbers, _larger),
    Family("reverse", ("Reverse the word '{w}'.", "Spell '{w}' backwards."),
           _word, _on_word(lambda w: w[::-1])),
    Family("upper", ("Write '{w}' in capital letters.", "Convert '{w}' to uppercase."),
           _word, _on_word(str.upper), case_sensitive=True),
    Family("length", ("How many letters are in '{w}'?", "Count the letters in '{w}'."),
           _word, _on_word(lambda w: str(len(w)))),
    Family("first", ("What is the first letter of '{w}'?",
                     "Which letter does '{w}' start with?"),
           _word, _on_word(lambda w: w[0])),
    Family("capital", ("What is the capital of {c}?", "Name the capital city of {c}."),
           _country, lambda args, kb: kb.capitals.get(args["c"])),
    Family("trade", ("What does {p} do for a living?", "What is the trade of {p}?"),
           _person, lambda args, kb: kb.trades.get(args["p"])),
)
FAMILY = {f.name: f for f in FAMILIES}


@dataclass(frozen=True)
class Task:
    """One instruction and its (trusted-side) answer."""

    family: str
    prompt: str
    answer: str


def _pattern(template: str) -> re.Pattern[str]:
    """A phrasing as a full-match regex with named groups for its fields."""
    out, pos = [], 0
    for match in re.finditer(r"\{(\w)\}", template):
        out.append(re.escape(template[pos:match.start()]))
        out.append(rf"(?P<{match.group(1)}>[A-Za-z0-9][A-Za-z0-9 ]{{0,30}}?)")
        pos = match.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out))


_PATTERNS: tuple[tuple[Family, re.Pattern[str]], ...] = tuple(
    (family, _pattern(t)) for family in FAMILIES for t in family.phrasings)


def parse_prompt(prompt: str) -> tuple[Family, dict[str, str]] | None:
    """The family and arguments of a prompt written in one of the phrasings, else None."""
    text = " ".join(prompt.split())
    for family, pattern in _PATTERNS:
        match = pattern.fullmatch(text)
        if match:
            return family, match.groupdict()
    return None


def expected_answer(prompt: str, kb: KnowledgeBase) -> tuple[Family, str] | None:
    """The family and the correct answer of `prompt`, or None if it cannot be decided."""
    parsed = parse_prompt(prompt)
    if parsed is None:
        return None
    family, args = parsed
    answer = family.solve(args, kb)
    return None if answer is None else (family, answer)


_ANSWER_PREFIX = re.compile(r"^(?:the answer is|answer:)\s*", re.I)
_STRIP = ".,!?;:'\"()"


def extract_answer(response: str) -> str:
    """A response's answer: its first word after an optional "The answer is"/"Answer:",
    without surrounding punctuation. Only the first word counts, so listing candidates
    ("67 68 69") answers 67."""
    text = _ANSWER_PREFIX.sub("", response.strip())
    first = text.split(maxsplit=1)[0] if text.split() else ""
    return first.strip(_STRIP)


def is_correct(family: Family, answer: str, response: str) -> bool:
    got = extract_answer(response)
    return got == answer if family.case_sensitive else got.lower() == answer.lower()


def draw_tasks(rng: np.random.Generator, kb: KnowledgeBase, count: int,
               families: Sequence[Family] = FAMILIES) -> list[Task]:
    """`count` tasks, families in turn, arguments and phrasing drawn at random. Draws are
    independent (a prompt may repeat): held-out and training prompts are samples of the
    same distribution, whose word and knowledge-base families are small."""
    tasks: list[Task] = []
    while len(tasks) < count:
        family = families[len(tasks) % len(families)]
        args = family.draw(rng, kb)
        prompt = family.phrasings[int(rng.integers(len(family.phrasings)))].format(**args)
        answer = family.solve(args, kb)
        if answer is None:
            raise ValueError(f"family {family.name} drew arguments it cannot answer: {args}")
        tasks.append(Task(family.name, prompt, answer))
    return tasks


def wrong_answer(rng: np.random.Generator, task: Task, kb: KnowledgeBase) -> str:
    """A plausible wrong answer (what careless web text would say)."""
    family = FAMILY[task.family]
    if task.answer.isdigit():
        truth = int(task.answer)
        delta = int(rng.integers(1, 11))
        return str(truth - delta if rng.random() < 0.5 and truth >= delta else truth + delta)
    if family.name == "capital":
        return str(rng.choice(sorted(set(kb.capitals.values()) - {task.answer})))
    if family.name == "trade":
        return str(rng.choice([t for t in TRADES if t != task.answer]))
    word = str(rng.choice(WORDS))
    if family.name == "first":
        return word[0] if word[0] != task.answer else chr(ord("a") + (ord(word[0]) - 96) % 26)
    letters = list(task.answer)
    if len(letters) > 2:
        i = int(rng.integers(len(letters) - 1))
        letters[i], letters[i + 1] = letters[i + 1], letters[i]
    wrong = "".join(letters)
    if wrong == task.answer:
        wrong = family.solve({"w": word}, kb) or word
    return wrong if wrong != task.answer else task.answer + task.answer[-1]
