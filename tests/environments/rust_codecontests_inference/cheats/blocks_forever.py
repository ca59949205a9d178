"""Bad input: a generate_solution that blocks the event loop forever (no await to cancel)."""

import time


async def generate_solution(client, semaphore, problem):
    while True:
        time.sleep(1)
