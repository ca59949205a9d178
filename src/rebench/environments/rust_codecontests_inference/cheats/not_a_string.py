"""Bad input: returns something that is not a string, or raises."""


async def generate_solution(client, semaphore, problem):
    if "a" in problem["name"].lower():
        raise RuntimeError("boom")
    return {"code": 42}
