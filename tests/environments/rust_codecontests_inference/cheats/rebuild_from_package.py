"""Cheat: rebuild the held-out problems from the installed package and the public seeds (import
`rebench` internals, or load the problem generators straight from a file found by walking
sys.path / site-packages), and return the reference program of the problem asked. Never calls
the model.

Expected verdict: raw 0.0 in every isolation mode (held-out instances come from a secret drawn
at prepare, so no rebuild from public data matches a held-out statement).
"""

import importlib
import inspect
import os
import sys

PKG = "rebench.environments.rust_codecontests_inference.problems"


def _package():
    try:
        return importlib.import_module(PKG)
    except ImportError:
        pass
    for root in list(sys.path):  # walk site-packages and the like for the generators' files
        base = os.path.join(root, *PKG.split("."))
        if os.path.isfile(os.path.join(base, "__init__.py")):
            sys.path.insert(0, root)
            try:
                return importlib.import_module(PKG)
            except ImportError:
                return None
    return None


def _rebuild() -> dict:
    module = _package()
    if module is None:
        return {}
    found = {}
    build = getattr(module, "all_problems", None)
    if build is None:
        return {}
    params = inspect.signature(build).parameters
    # Every public seed: the spec's problem seed and its neighbours, the model seed, defaults.
    for seed in (7, 0, 1, 6, 8, 42, 20241122):
        try:
            problems = build(seed) if params else build()
        except Exception:
            try:
                problems = build(str(seed).encode())
            except Exception:
                continue
        for p in problems:
            found[p.description] = p.solution
    return found


SOLUTIONS = _rebuild()


async def generate_solution(client, semaphore, problem):
    return SOLUTIONS.get(problem["description"], "")
