"""The simulated weak code model's bugs: each mutation turns a correct Rust program into a
plausible wrong one (an overflowing integer type, a short read of the input, a flipped
comparison, an off-by-one literal, swapped min/max, a syntax error, a crate that does not
exist, chatty output, a stub). The simulator (simulator.py) draws which, and how often; the
mutations themselves hold no number that shapes its behaviour.

Portable (standard library only): copied with the simulator into the workspace's evaluate
package.
"""

from __future__ import annotations

import random
import re


def one_bug(rng: random.Random, code: str, weights: dict[str, float]) -> str:
    """`code` with one bug; falls back to another bug when one cannot apply."""
    kinds = list(weights)
    for _ in range(6):
        kind = rng.choices(kinds, weights=[weights[k] for k in kinds])[0]
        out = MUTATIONS[kind](rng, code)
        if out != code:
            return out
    return syntax(rng, code)


def overflow(rng: random.Random, code: str) -> str:
    del rng
    for wide, narrow in (("i128", "i64"), ("u128", "u64"), ("i64", "i32"), ("u64", "u32")):
        code = code.replace(wide, narrow)
    return code


def _replace_one(rng: random.Random, code: str, pattern: str, repl: dict[str, str]) -> str:
    matches = list(re.finditer(pattern, code))
    if not matches:
        return code
    m = rng.choice(matches)
    return code[: m.start()] + repl[m.group(0)] + code[m.end() :]


READ_ALL = "io::stdin().read_to_string(&mut input).unwrap();"
READ_BUFFER = ("let mut buf = [0u8; 256];\n    let k = io::stdin().read(&mut buf).unwrap();\n"
               "    input.push_str(std::str::from_utf8(&buf[..k]).unwrap_or(\"\"));")


def buffer(rng: random.Random, code: str) -> str:
    del rng
    return code.replace(READ_ALL, READ_BUFFER, 1)


def compare(rng: random.Random, code: str) -> str:
    flips = {" < ": " <= ", " <= ": " < ", " > ": " >= ", " >= ": " > "}
    return _replace_one(rng, code, r" (<=|>=|<|>) ", flips)


def offbyone(rng: random.Random, code: str) -> str:
    matches = list(re.finditer(r"(?<![\w.])([0-9])(?![\w.])", code))
    if not matches:
        return code
    m = rng.choice(matches)
    value = int(m.group(1)) + rng.choice([-1, 1])
    return code[: m.start()] + str(abs(value)) + code[m.end() :]


def minmax(rng: random.Random, code: str) -> str:
    return _replace_one(rng, code, r"\b(min|max)\b", {"min": "max", "max": "min"})


def syntax(rng: random.Random, code: str) -> str:
    spots = [i for i, ch in enumerate(code) if ch in ";}"]
    i = rng.choice(spots) if spots else len(code) // 2
    return code[:i] + code[i + 1 :]


def crate(rng: random.Random, code: str) -> str:
    crate = rng.choice(["use itertools::Itertools;", "use proconio::input;", "use num::Integer;"])
    return crate + "\n" + code


def chatty(rng: random.Random, code: str) -> str:
    label = rng.choice(["Answer: ", "Result = ", "Output: "])
    return code.replace("io::BufWriter::new(stdout.lock());",
                        f"io::BufWriter::new(stdout.lock());\n    print!(\"{label}\");", 1)


def stub(rng: random.Random, code: str) -> str:
    del rng
    head = code.split("let stdout", 1)[0]
    if head == code:
        return code
    return head + "    // TODO: implement the algorithm\n    println!(\"0\");\n}\n"


MUTATIONS = {"overflow": overflow, "buffer": buffer, "compare": compare, "offbyone": offbyone,
             "minmax": minmax, "syntax": syntax, "crate": crate, "chatty": chatty,
             "stub": stub}
