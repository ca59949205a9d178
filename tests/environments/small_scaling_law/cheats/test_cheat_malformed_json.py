"""Cheat: malformed answer files (not JSON, wrong types, huge) score NaN with a clear
message and never raise. (A symbolic link to the protected record, scored officially:
degenerate.py's CHEATS.)"""

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


def test_missing_and_undecodable_answers_are_invalid(
        score_folder: Callable[[Path, ScoreKind], ScoreResult], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not score_folder(empty, ScoreKind.FINAL).valid
    binary = tmp_path / "binary"
    binary.mkdir()
    (binary / "answer.json").write_bytes(b'{"n_embd": \xff\xfe}')
    assert not score_folder(binary, ScoreKind.FINAL).valid
