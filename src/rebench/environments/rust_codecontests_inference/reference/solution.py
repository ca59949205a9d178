"""Reference solution: chain-of-thought prompt, sample n answers, extract the fenced Rust
code, keep the first candidate that compiles and passes the public tests, retry within a
per-problem time budget."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tempfile
import time
from typing import Any

import openai

MODEL = "gpt-3.5-turbo"  # the gateway decides which model actually answers
N_SAMPLES = 4  # completions per request
TEMPERATURE = 0.7
MAX_ROUNDS = 4  # requests per problem at most
TIME_BUDGET_S = 25.0  # per problem; the scorer's own limit is higher
RUSTC = os.environ.get("RUSTC", "rustc")
COMPILE_SLOTS = asyncio.Semaphore(2)  # rustc is CPU bound: two at a time on two cores

PROMPT = """Solve the following competitive programming problem in Rust (edition 2021).
Think step by step about the algorithm first, then write the complete program in one
```rust code block. The program reads standard input and writes standard output.

{description}"""

FENCE = re.compile(r"```([a-zA-Z]*)[ \t]*\n(.*?)```", re.S)


def extract_rust(text: str) -> str | None:
    """The last fenced block that looks like a Rust program."""
    blocks = [code for lang, code in FENCE.findall(text)
              if lang.lower() in ("rust", "rs", "") and "fn main" in code]
    return blocks[-1] if blocks else None


async def _compile(code: str, workdir: str) -> str | None:
    """Path of the compiled binary, or None if rustc rejects the program."""
    name = hashlib.sha256(code.encode()).hexdigest()[:16]
    binary = os.path.join(workdir, name)
    if os.path.exists(binary):
        return binary
    source = binary + ".rs"
    with open(source, "w") as fh:
        fh.write(code)
    async with COMPILE_SLOTS:
        proc = await asyncio.create_subprocess_exec(
            RUSTC, "--edition", "2021", "-O", source, "-o", binary,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        await proc.wait()
    return binary if proc.returncode == 0 and os.path.exists(binary) else None


async def _passes(binary: str, tests: dict[str, list[str]], time_limit: float) -> bool:
    for given, expected in zip(tests["input"], tests["output"], strict=False):
        proc = await asyncio.create_subprocess_exec(
            binary, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(given.encode()), 2 * time_limit + 1)
        except TimeoutError:
            proc.kill()
            return False
        if proc.returncode != 0 or out.decode(errors="replace").split() != expected.split():
            return False
    return True


async def generate_solution(
    client: openai.AsyncOpenAI,
    semaphore: asyncio.Semaphore,
    problem: dict[str, Any],
) -> str:
    """Return the source of a Rust program that solves `problem`."""
    deadline = time.monotonic() + TIME_BUDGET_S
    prompt = PROMPT.format(description=problem["description"])
    fallback = ""
    with tempfile.TemporaryDirectory(prefix="cand-", dir=os.getcwd()) as workdir:
        for _ in range(MAX_ROUNDS):
            if time.monotonic() > deadline:
                break
            try:
                async with semaphore:
                    completion = await client.chat.completions.create(
                        model=MODEL, n=N_SAMPLES, temperature=TEMPERATURE,
                        messages=[{"role": "user", "content": prompt}])
            except openai.APIError:
                break  # out of budget or the endpoint is down: keep what we have
            for choice in completion.choices:
                code = extract_rust(choice.message.content or "")
                if code is None:
                    continue
                binary = await _compile(code, workdir)
                if binary is None:
                    continue
                fallback = fallback or code
                if await _passes(binary, problem["public_tests"], problem["time_limit"]):
                    return code
    return fallback
