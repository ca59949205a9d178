"""parse_python retries the spurious SystemError of CPython 3.11's AST constructor
(gh-106905) and passes every other error up."""

from __future__ import annotations

import ast

import pytest

from rebench.core import pyparse


def _flaky(fails: int, message: str) -> object:
    calls = {"n": 0}
    real = ast.parse

    def parse(source: str, filename: str = "<unknown>") -> ast.Module:
        calls["n"] += 1
        if calls["n"] <= fails:
            raise SystemError(message)
        return real(source, filename)

    return parse


def test_the_spurious_mismatch_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyparse.ast, "parse", _flaky(
        2, "AST constructor recursion depth mismatch (before=123, after=32)"))
    tree = pyparse.parse_python("import os\n")
    assert isinstance(tree.body[0], ast.Import)


def test_other_errors_pass_up(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SyntaxError):
        pyparse.parse_python("def (:\n")
    monkeypatch.setattr(pyparse.ast, "parse", _flaky(1, "something else"))
    with pytest.raises(SystemError, match="something else"):
        pyparse.parse_python("x = 1\n")
    monkeypatch.setattr(pyparse.ast, "parse", _flaky(
        10, "AST constructor recursion depth mismatch (before=1, after=2)"))
    with pytest.raises(SystemError):  # a mismatch every time is not hidden
        pyparse.parse_python("x = 1\n")
