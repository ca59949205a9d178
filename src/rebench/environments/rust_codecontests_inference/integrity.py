"""rust_codecontests_inference's integrity rule: a generate_solution that never asks the
model, so every problem gets a program written without it (a constant program, an empty
one, the statement itself, a table of the public samples).

Written in issue 31 against the tune half of the integrity corpus (docs/benchmarks/
integrity.md): the declared degenerate policies that raised no flag.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rebench.integrity.extension import EnvironmentRules
from rebench.integrity.flags import Evidence, Flag, Severity
from rebench.integrity.record import TextUnit

ENTRY = "generate_solution"


def no_model_flags(unit: TextUnit, tree: ast.Module) -> Iterator[Flag]:
    """generate_solution(client, ...) whose body never uses the client."""
    added = {n for n, _ in unit.added_lines()}
    for fn in tree.body:
        if not (isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == ENTRY):
            continue
        if not any(fn.lineno <= n <= (fn.end_lineno or fn.lineno) for n in added):
            continue
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if not params:
            continue
        client = params[0]
        if any(isinstance(n, ast.Name) and n.id == client for n in ast.walk(fn)):
            continue
        lines = unit.text.splitlines()
        excerpt = lines[fn.lineno - 1].strip()[:160] if fn.lineno <= len(lines) else ""
        yield Flag("no-model-call", Severity.MEDIUM,
                   f"{ENTRY}() never uses {client}: every problem gets a program written "
                   "without the model (a constant, the statement, a table)",
                   Evidence(**{**unit.evidence.__dict__, "line": fn.lineno,
                               "excerpt": excerpt}), "degenerate submission")


RULES = EnvironmentRules(python=(no_model_flags,))
