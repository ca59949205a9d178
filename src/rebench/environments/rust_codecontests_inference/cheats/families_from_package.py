"""Cheat: import the problem families from the installed package (or from a copy found by
walking sys.path / site-packages), recognise the statement's task text and return the family's
reference program. Never calls the model.

Expected verdict: raw 0.0 under the sandbox (the package is not importable or readable there).
Without a sandbox (`--isolation local`) it works: the families are public code (a known
limitation, see the README), which is why only the sandbox stops it.
"""

import importlib
import os
import sys

PKG = "rebench.environments.rust_codecontests_inference.problems"


def _package():
    try:
        return importlib.import_module(PKG)
    except ImportError:
        pass
    for root in list(sys.path):
        if os.path.isfile(os.path.join(root, *PKG.split("."), "__init__.py")):
            sys.path.insert(0, root)
            try:
                return importlib.import_module(PKG)
            except ImportError:
                return None
    return None


def _programs() -> list:
    module = _package()
    if module is None:
        return []
    base = importlib.import_module(PKG + ".base")
    found = []
    for family in module.FAMILIES:
        for variant in family.variants:
            task = base._dedent(variant.task)
            found.append((task, base.rust_program(variant)))
    return found


PROGRAMS = _programs()


async def generate_solution(client, semaphore, problem):
    for task, program in PROGRAMS:
        if problem["description"].startswith(task):
            return program
    return ""
