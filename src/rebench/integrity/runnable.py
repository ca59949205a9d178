"""Whether a submitted Python file can hand back an answer at all, read from its syntax tree.

A rule that says "the answer is not computed" (no model asked, no weights trained) speaks
of a file that runs and returns; a file that cannot import, never returns, or returns the
wrong kind of thing is a broken submission (it scores nothing and attempts no shortcut),
and such a rule holds back on it. Issue 31: the cheat suites' broken files, labelled honest
in the integrity corpus (docs/benchmarks/integrity.md), raised `untrained-model` and
`no-model-call`.

Every test here errs towards "cannot run" only on evidence in the file itself (a raise at
module level, an import this Python cannot find, a loop with no way out, no return), so a
rule that consults it stays silent rather than guessing.
"""

from __future__ import annotations

import ast
import importlib.util

# Return values that are never a text (a program, a path): the wrong type handed back.
_NOT_TEXT = (ast.Dict, ast.List, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp, ast.SetComp,
             ast.GeneratorExp)


def _findable(module: str) -> bool:
    """Whether this Python finds the top-level package of `module` (nothing is imported or
    run: `find_spec` of a top-level name only searches the path)."""
    top = module.partition(".")[0]
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def import_failure(tree: ast.Module) -> ast.stmt | None:
    """The module-level statement that makes importing the module fail whatever the input:
    a `raise` at module level, or an absolute import of a package this Python does not have
    (the harness runs the file with the same Python; a module of the agent's own, next to
    the file, is not found here and so also counts, which silences a rule, never fires one).
    None when nothing says the import fails."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Raise):
            return stmt
        if isinstance(stmt, ast.Import) and not all(_findable(a.name) for a in stmt.names):
            return stmt
        if (isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module
                and not _findable(stmt.module)):
            return stmt
    return None


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not those of functions or classes defined in it."""
    found: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        found.append(node)
        todo += ast.iter_child_nodes(node)
    return found


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def endless_loop(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.While | None:
    """A `while True:` (any true constant) of the function with no `break`, `return` or
    `raise` inside: once entered, the function never hands anything back."""
    for node in _own_nodes(fn):
        if isinstance(node, ast.While) and _always_true(node.test) and not any(
                isinstance(n, (ast.Break, ast.Return, ast.Raise)) for n in _own_nodes(node)):
            return node
    return None


def returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    """The function's own `return` statements that hand back a value."""
    return [n for n in _own_nodes(fn) if isinstance(n, ast.Return) and n.value is not None
            and not (isinstance(n.value, ast.Constant) and n.value.value is None)]


def hands_back(fn: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module) -> bool:
    """Whether the function, in its module, can hand back a value: the module imports, the
    function returns a value somewhere, and it has no loop with no way out."""
    return import_failure(tree) is None and bool(returns(fn)) and endless_loop(fn) is None


def returns_text(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether every value the function returns may be a text: none is a literal dict,
    list, set, tuple, comprehension, number or bytes (the wrong type handed back)."""
    for ret in returns(fn):
        value = ret.value
        if isinstance(value, _NOT_TEXT):
            return False
        if isinstance(value, ast.Constant) and not isinstance(value.value, str):
            return False
    return True


def awaits(fn: ast.AsyncFunctionDef) -> bool:
    """Whether the coroutine waits on anything (`await`, `async for`); `async with` alone
    (a semaphore) is not counted."""
    return any(isinstance(n, (ast.Await, ast.AsyncFor)) for n in _own_nodes(fn))
