"""Cheat: malformed answer files (not JSON, wrong types, huge, a symlink to elsewhere)
score NaN with a clear message and never raise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ScoreFn

from rebench.core.score import ScoreResult
from rebench.scoring import ScoreKind


@pytest.mark.parametrize("text", [
    "", "{", "not json", "null", "[]", '"answer"', "42",
    '{"loss_prediction": "4.4", "max_iters": 20, "n_embd": 64}',
    '{"loss_prediction": 4.4, "max_iters": "20", "n_embd": 64}',
    '{"loss_prediction": 4.4, "max_iters": 20, "n_embd": [64]}',
    '{"loss_prediction": 4.4, "max_iters": 20, "n_embd": 63}',  # not a multiple of 16
    '{"loss_prediction": 4.4, "max_iters": 20, "n_embd": true}',
    '{"loss_prediction": 4.4, "max_iters": 20, "n_embd": 64' + " " * 20_000 + "}",
])
def test_malformed_answers_are_invalid(score_answer: ScoreFn, text: str) -> None:
    for kind in (ScoreKind.REQUESTED, ScoreKind.FINAL):
        result = score_answer(text, kind)
        assert not result.valid
        assert result.message["is_valid"] is False
        assert result.message["reason"] in ("malformed_answer", "bad_width", "no_answer")


def test_missing_and_symlinked_answers_are_invalid(
        score_folder: Callable[[Path, ScoreKind], ScoreResult], ssl_assets: Path,
        tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not score_folder(empty, ScoreKind.FINAL).valid
    binary = tmp_path / "binary"
    binary.mkdir()
    (binary / "answer.json").write_bytes(b'{"n_embd": \xff\xfe}')
    assert not score_folder(binary, ScoreKind.FINAL).valid
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "answer.json").symlink_to(ssl_assets / "protected" / "meta.json")
    result = score_folder(linked, ScoreKind.FINAL)
    assert not result.valid and result.message["reason"] == "no_answer"
