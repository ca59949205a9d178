"""Starting solution: ask the model once and return its raw answer."""

from __future__ import annotations

import asyncio
from typing import Any

import openai

MODEL = "gpt-3.5-turbo"  # the gateway decides which model actually answers


def get_prompt(problem: dict[str, Any]) -> str:
    return f"Please solve this coding contest problem in Rust:\n{problem['description']}"


async def generate_solution(
    client: openai.AsyncOpenAI,
    semaphore: asyncio.Semaphore,
    problem: dict[str, Any],
) -> str:
    """Return the source of a Rust program that solves `problem`."""
    async with semaphore:
        completion = await client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": get_prompt(problem)}],
            temperature=0.0,
        )
    return completion.choices[0].message.content or ""
