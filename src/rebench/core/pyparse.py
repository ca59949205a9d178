"""`ast.parse` that survives a CPython 3.11 bug: the AST constructor's recursion-depth
bookkeeping can be thrown off while another thread runs, raising a spurious
`SystemError: AST constructor recursion depth mismatch` on valid source (python/cpython
gh-106905; seen here once in a test process with background threads). The parse is pure,
so it is tried again; any other error passes up unchanged."""

from __future__ import annotations

import ast

_SPURIOUS = "AST constructor recursion depth mismatch"
_TRIES = 3


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """The module's syntax tree (SyntaxError, ValueError, RecursionError as `ast.parse`)."""
    for attempt in range(_TRIES):
        try:
            return ast.parse(source, filename)
        except SystemError as exc:
            if _SPURIOUS not in str(exc) or attempt == _TRIES - 1:
                raise
    raise AssertionError("unreachable")  # the loop returns or raises
