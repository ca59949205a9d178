"""Runs INSIDE the sandbox (copied next to the problems file, standard library + openai only):
imports the agent's `solution.py`, calls `generate_solution` on every problem and streams one
JSON line per problem to its original stdout. It returns code strings, never verdicts.

usage: python child_runner.py SOLUTION_DIR PROBLEMS_JSON BASE_URL SOCKET PARALLEL TIMEOUT_S
(SOCKET is a unix socket path, or "-" to reach BASE_URL over TCP.)
       python child_runner.py --check SOLUTION_DIR
(imports the solution and checks `generate_solution`, with no problem in reach: the official
scorer decides validity there, before any held-out problem exists in a process of the
solution, so whether a submission is valid cannot depend on held-out data.)
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from typing import Any

MAX_CODE_CHARS = 256 * 1024


def _emitter() -> Any:
    # Keep the real stdout for results; the solution's own prints go to stderr.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def emit(record: dict[str, Any]) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()

    return emit


def _load(solution_dir: str) -> Any:
    sys.path.insert(0, solution_dir)
    path = os.path.join(solution_dir, "solution.py")
    spec = importlib.util.spec_from_file_location("solution", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["solution"] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "generate_solution", None)
    if fn is None or not asyncio.iscoroutinefunction(fn):
        raise TypeError("solution.py must define "
                        "`async def generate_solution(client, semaphore, problem)`")
    return fn


def _client(base_url: str, socket_path: str) -> Any:
    import openai

    # The HTTP library openai is built on (httpx, or httpx2 in recent releases).
    http = sys.modules[openai.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0]]
    transport = http.AsyncHTTPTransport(uds=socket_path) if socket_path != "-" else None
    http_client = openai.DefaultAsyncHttpxClient(transport=transport, timeout=300.0)
    return openai.AsyncOpenAI(base_url=base_url, api_key="rebench-sandbox",
                              http_client=http_client, max_retries=4)


async def _run_all(fn: Any, problems: list[dict[str, Any]], client: Any, parallel: int,
                   timeout_s: float, emit: Any) -> None:
    semaphore = asyncio.Semaphore(parallel)  # handed to the solution for its model calls
    slots = asyncio.Semaphore(parallel)  # problems in progress; a problem's clock starts here

    async def one(item: dict[str, Any]) -> None:
        async with slots:
            try:
                code = await asyncio.wait_for(fn(client, semaphore, item["problem"]), timeout_s)
            except TimeoutError:
                error = f"generate_solution timed out after {timeout_s:.0f} s"
                emit({"id": item["id"], "error": error})
                return
            except Exception as exc:  # the solution's bug: report it, go on with the others
                emit({"id": item["id"], "error": f"{type(exc).__name__}: {exc}"[:1000]})
                return
            if isinstance(code, str):
                emit({"id": item["id"], "code": code[:MAX_CODE_CHARS]})
            else:
                emit({"id": item["id"], "error": f"returned {type(code).__name__}, not str"})

    await asyncio.gather(*(one(item) for item in problems))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        emit = _emitter()
        try:
            _load(argv[1])
        except BaseException as exc:
            emit({"fatal": f"solution.py failed to import: {type(exc).__name__}: {exc}"[:2000]})
            return 1
        emit({"ok": True})
        return 0
    solution_dir, problems_path, base_url, socket_path, parallel, timeout_s = argv[:6]
    emit = _emitter()
    with open(problems_path) as fh:
        problems = json.load(fh)
    try:
        fn = _load(solution_dir)
    except BaseException as exc:  # any failure to import is the submission's, reported as data
        emit({"fatal": f"solution.py failed to import: {type(exc).__name__}: {exc}"[:2000]})
        return 1
    client = _client(base_url, socket_path)
    asyncio.run(_run_all(fn, problems, client, int(parallel), float(timeout_s), emit))
    emit({"done": True})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
