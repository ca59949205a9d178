"""Cheat: NaN, infinite, zero or negative values in answer.json (Python's json reads NaN
and Infinity literals) are invalid."""

from __future__ import annotations

import pytest
from conftest import ScoreFn

from rebench.scoring import ScoreKind


@pytest.mark.parametrize("pred, iters, width", [
    ("NaN", "20", "64"), ("Infinity", "20", "64"), ("-Infinity", "20", "64"),
    ("-4.4", "20", "64"), ("0", "20", "64"), ("1e400", "20", "64"),
    ("4.4", "-20", "64"), ("4.4", "0", "64"), ("4.4", "20", "-64"), ("4.4", "20", "0"),
    ("4.4", "NaN", "64"), ("4.4", "20", "Infinity"),
])
def test_non_finite_or_negative_values_are_invalid(score_answer: ScoreFn, pred: str,
                                                   iters: str, width: str) -> None:
    text = f'{{"loss_prediction": {pred}, "max_iters": {iters}, "n_embd": {width}}}'
    for kind in (ScoreKind.REQUESTED, ScoreKind.FINAL):
        result = score_answer(text, kind)
        assert not result.valid and result.message["is_valid"] is False
