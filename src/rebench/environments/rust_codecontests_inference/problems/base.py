"""Problem families: data types and the assembly of one problem from a family variant.

A family is a shared input format and generator; each variant is a different task on it with
its own statement, Python oracle and reference Rust solution. Tests are produced by the
family's generator from a key (bytes), and the expected outputs by the oracle; a test proves
the Rust solution agrees with the oracle on every test. Held-out problems are built at prepare
from a key derived from a secret drawn then, so this code alone cannot rebuild them.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Size = Literal["small", "edge", "large"]
Generator = Callable[[random.Random, Size], str]
Oracle = Callable[[str], str]

# The reading and writing boilerplate every reference solution shares; the variant supplies
# the body. `rd!(T)` parses the next whitespace-separated token.
RUST_SKELETON = """use std::io::{{self, Read, Write}};

#[allow(unused_macros, unused_mut)]
fn main() {{
    let mut input = String::new();
    io::stdin().read_to_string(&mut input).unwrap();
    let mut it = input.split_ascii_whitespace();
    macro_rules! rd {{
        ($t:ty) => {{
            it.next().unwrap().parse::<$t>().unwrap()
        }};
    }}
    let stdout = io::stdout();
    let mut o = io::BufWriter::new(stdout.lock());
{body}
}}
"""

# Test counts per problem: public tests are shown in the statement; private and generated
# tests are held back (as in CodeContests).
PUBLIC_SIZES: tuple[Size, ...] = ("small", "small")
PRIVATE_SIZES: tuple[Size, ...] = ("edge", "edge", "small", "small")
GENERATED_SIZES: tuple[Size, ...] = ("large",) * 6


@dataclass(frozen=True)
class Variant:
    """One task of a family: statement pieces, oracle and reference Rust body."""

    key: str
    title: str
    difficulty: int  # 1 easy, 2 medium, 3 hard (drives the simulated model's success rate)
    task: str
    output: str
    oracle: Oracle
    rust: str  # the body of main(), indented by four spaces, or a full program
    gen: Generator | None = None  # overrides the family's generator
    input_text: str | None = None  # overrides the family's input description
    full_program: bool = False


@dataclass(frozen=True)
class Family:
    """A shared input format and generator, with its variants."""

    key: str
    input_text: str
    gen: Generator
    variants: tuple[Variant, ...]
    constraints: str = ""


@dataclass(frozen=True)
class Problem:
    """One problem as stored in the assets (JSON-serializable via `to_json`)."""

    id: str
    family: str
    name: str
    difficulty: int
    description: str
    public_tests: dict[str, list[str]]
    private_tests: dict[str, list[str]]
    generated_tests: dict[str, list[str]]
    solution: str
    time_limit_s: float = 2.0
    memory_limit_mb: int = 256
    extra: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id, "family": self.family, "name": self.name,
            "difficulty": self.difficulty, "description": self.description,
            "public_tests": self.public_tests, "private_tests": self.private_tests,
            "generated_tests": self.generated_tests, "solution": self.solution,
            "time_limit_s": self.time_limit_s, "memory_limit_mb": self.memory_limit_mb,
        }


def rust_program(variant: Variant) -> str:
    """The full reference Rust program of a variant."""
    if variant.full_program:
        return variant.rust.strip() + "\n"
    body = "\n".join(
        ("    " + line) if line.strip() else "" for line in _dedent(variant.rust).splitlines()
    )
    return RUST_SKELETON.format(body=body)


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip("\n")


def _tests(gen: Generator, oracle: Oracle, sizes: tuple[Size, ...], rng: random.Random
           ) -> dict[str, list[str]]:
    inputs = [gen(rng, size) for size in sizes]
    return {"input": inputs, "output": [oracle(text) for text in inputs]}


def derive_key(key: bytes, *labels: str) -> bytes:
    """A sub-key of `key` for a purpose (HMAC-SHA256): one-way, so sub-keys that are made
    public (e.g. the validation problems' tests) reveal nothing of the others."""
    return hmac.new(key, "|".join(labels).encode(), hashlib.sha256).digest()


# Draws of the hidden tests before a problem is kept as it is: a draw that a program
# printing the samples' outputs (the first sample's for any other input) passes whole is
# drawn again (random grids with no path all print -1, random words are rarely
# palindromes); the rng continues, so the problem stays deterministic in its key.
HIDDEN_DRAWS = 8


def answered_by_samples(public: dict[str, list[str]],
                        hidden: list[dict[str, list[str]]]) -> bool:
    """Whether a table of the public tests (the first sample's output for any other input)
    passes every hidden test, comparing whitespace-separated tokens."""
    table = {i.strip(): o for i, o in zip(public["input"], public["output"], strict=True)}
    first = public["output"][0]
    return all(table.get(i.strip(), first).split() == o.split()
               for tests in hidden
               for i, o in zip(tests["input"], tests["output"], strict=True))


def build_problem(family: Family, variant: Variant, key: bytes) -> Problem:
    """Assemble statement and tests of one variant; deterministic in (family, variant, key)."""
    gen = variant.gen or family.gen
    rng = random.Random(derive_key(key, "tests", family.key, variant.key))
    public = _tests(gen, variant.oracle, PUBLIC_SIZES, rng)
    for _ in range(HIDDEN_DRAWS):
        private = _tests(gen, variant.oracle, PRIVATE_SIZES, rng)
        generated = _tests(gen, variant.oracle, GENERATED_SIZES, rng)
        if not answered_by_samples(public, [private, generated]):
            break
    examples = "\n\n".join(
        f"Example {i + 1}\nInput:\n{inp.rstrip()}\nOutput:\n{out.rstrip()}"
        for i, (inp, out) in enumerate(zip(public["input"], public["output"], strict=True))
    )
    description = (
        f"{_dedent(variant.task)}\n\nInput\n{_dedent(variant.input_text or family.input_text)}"
        f"\n\nOutput\n{_dedent(variant.output)}\n\n{examples}\n"
    )
    return Problem(
        id=f"{family.key}-{variant.key}",
        family=family.key,
        name=variant.title,
        difficulty=variant.difficulty,
        description=description,
        public_tests=public,
        private_tests=private,
        generated_tests=generated,
        solution=rust_program(variant),
    )


def ints(text: str) -> list[int]:
    """All whitespace-separated integers of an input."""
    return [int(tok) for tok in text.split()]


def lines(*rows: object) -> str:
    """Join rows (scalars or sequences) into an input text with a trailing newline."""
    out = []
    for row in rows:
        if isinstance(row, list | tuple):
            out.append(" ".join(str(x) for x in row))
        else:
            out.append(str(row))
    return "\n".join(out) + "\n"
