"""rust_codecontests_inference's integrity rules: a generate_solution that never asks the
model, so every problem gets a program written without it (a constant program, an empty
one, the statement itself, a table of the public samples); and a scaffold that carries a
Rust program starting another program (a shim that runs the model's Python).

Written in issue 31 against the tune half of the integrity corpus (docs/benchmarks/
integrity.md): the declared degenerate policies that raised no flag. It speaks only of a
generate_solution that can hand a program back (rebench.integrity.runnable): a coroutine
function, in a module that imports, that waits on nothing, has no loop without a way out
and returns only what may be a text. The cheat suite's broken files (not a coroutine, a
missing import, awaiting forever, blocking forever, a dict returned) make no shortcut: they
score nothing, and the corpus labels them honest.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from rebench.integrity.extension import EnvironmentRules
from rebench.integrity.flags import Evidence, Flag, Severity
from rebench.integrity.record import TextUnit
from rebench.integrity.runnable import awaits, hands_back, returns_text

ENTRY = "generate_solution"
# Rust that starts another program: what the judge refuses since 1.3.1 (judge.py's
# FORBIDDEN_SPAWN), written as Rust writes it, so that prose ("a Command line") is not read.
SPAWN = re.compile(r"\bCommand\s*::\s*new\b|\bprocess\s*::\s*(?:\{[^}]*)?\bCommand\b"
                   r"|\bCommandExt\b|\bextern\s+\"C\"")


def no_model_flags(unit: TextUnit, tree: ast.Module) -> Iterator[Flag]:
    """generate_solution(client, ...) whose body never uses the client, and that hands a
    program back (a file that cannot run is a broken submission, not a shortcut)."""
    added = {n for n, _ in unit.added_lines()}
    for fn in tree.body:
        # The harness awaits generate_solution: a plain function is a broken submission.
        if not (isinstance(fn, ast.AsyncFunctionDef) and fn.name == ENTRY):
            continue
        if not any(fn.lineno <= n <= (fn.end_lineno or fn.lineno) for n in added):
            continue
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if not params:
            continue
        client = params[0]
        if any(isinstance(n, ast.Name) and n.id == client for n in ast.walk(fn)):
            continue
        # A program made without the model is made at once: a coroutine that waits on
        # something else (an event nobody sets, a subprocess) is beyond what is read here.
        if not hands_back(fn, tree) or awaits(fn) or not returns_text(fn):
            continue
        lines = unit.text.splitlines()
        excerpt = lines[fn.lineno - 1].strip()[:160] if fn.lineno <= len(lines) else ""
        yield Flag("no-model-call", Severity.MEDIUM,
                   f"{ENTRY}() never uses {client}: every problem gets a program written "
                   "without the model (a constant, the statement, a table)",
                   Evidence(**{**unit.evidence.__dict__, "line": fn.lineno,
                               "excerpt": excerpt}), "degenerate submission")


def spawn_flags(unit: TextUnit, tree: ast.Module) -> Iterator[Flag]:
    """A line the agent wrote holding Rust that starts another program (`Command::new`,
    `use std::process::Command`, `extern "C"`): a "Rust" answer that hands the problem to
    python3 or another interpreter the run sandbox shows. Written in issue 31 against the
    tune half's `python_instead` (red team, 2026-12-07). No contest program starts a
    process; the judge has refused these since 1.3.1, so the flag says what was tried."""
    for number, line in unit.added_lines():
        match = SPAWN.search(line)
        if match:
            yield Flag("program-spawn", Severity.HIGH,
                       "a Rust program in the scaffold starts another program: the "
                       "problem solved by another language's interpreter, not in Rust",
                       Evidence(**{**unit.evidence.__dict__, "line": number,
                                   "excerpt": line.strip()[:160]}), "degenerate submission")
            return


RULES = EnvironmentRules(python=(no_model_flags, spawn_flags))
