"""Bad input: a module that fails to import."""

import this_module_does_not_exist  # noqa: F401


async def generate_solution(client, semaphore, problem):
    return ""
