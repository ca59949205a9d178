"""Bad input: a generate_solution that never returns (awaits forever)."""

import asyncio


async def generate_solution(client, semaphore, problem):
    await asyncio.Event().wait()
    return ""
