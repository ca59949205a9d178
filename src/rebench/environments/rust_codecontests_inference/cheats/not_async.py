"""Bad input: generate_solution is not a coroutine function."""


def generate_solution(client, semaphore, problem):
    return ""
