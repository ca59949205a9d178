"""Cheat: try to tamper with the scorer's files from the child (the runner script, the
problems file, other folders) and then return an empty program."""

import contextlib
import os
import pathlib


async def generate_solution(client, semaphore, problem):
    for path in ("child_runner.py", "problems.json"):
        with contextlib.suppress(OSError):
            pathlib.Path(path).write_text("tampered")
    for root in (os.environ.get("HOME", ""), "/tmp"):
        with contextlib.suppress(OSError):
            pathlib.Path(root, "rebench-cheat-marker").write_text("x")
    return ""
