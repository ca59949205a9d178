"""Normalization: start -> 0, reference -> 1, monotone, floored at 0, NaN -> invalid."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rebench.core.normalize import Anchors, AnchorSource, aggregate, normalize
from rebench.core.spec import Aggregation, Direction

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def anchors(start: float, ref: float) -> Anchors:
    return Anchors(start, ref, AnchorSource.PROFILE_DEFAULT, "test")


def direction_of(start: float, ref: float) -> Direction:
    return Direction.LOWER if ref < start else Direction.HIGHER


@given(finite, finite)
def test_start_is_zero_and_reference_is_one(start: float, ref: float) -> None:
    assume(abs(ref - start) > 1e-6)
    a, d = anchors(start, ref), direction_of(start, ref)
    assert normalize(start, a, d) == 0.0
    assert normalize(ref, a, d) == pytest.approx(1.0)


@given(finite, finite, finite, finite)
def test_monotone_in_the_better_direction(start: float, ref: float, x: float, y: float) -> None:
    assume(abs(ref - start) > 1e-6)
    a, d = anchors(start, ref), direction_of(start, ref)
    better, worse = (min(x, y), max(x, y)) if d is Direction.LOWER else (max(x, y), min(x, y))
    assert normalize(better, a, d) >= normalize(worse, a, d)


@given(finite, finite, finite)
def test_floored_at_zero_not_capped(start: float, ref: float, x: float) -> None:
    assume(abs(ref - start) > 1e-6)
    a, d = anchors(start, ref), direction_of(start, ref)
    assert normalize(x, a, d) >= 0.0
    beyond = ref + 2 * (ref - start)
    assert normalize(beyond, a, d) == pytest.approx(3.0)


@given(finite, finite)
def test_nan_and_inf_are_invalid(start: float, ref: float) -> None:
    assume(abs(ref - start) > 1e-6)
    a, d = anchors(start, ref), direction_of(start, ref)
    for bad in (math.nan, math.inf, -math.inf):
        assert math.isnan(normalize(bad, a, d))


def test_paper_triton_anchors() -> None:
    a = anchors(1.5535302804958044, 0.4700036292457356)
    assert normalize(math.log(4.73), a, Direction.LOWER) == pytest.approx(0.0, abs=1e-3)
    # The best human (0.67 ms) is 1.81 in the paper's Table 5.
    assert normalize(math.log(0.67), a, Direction.LOWER) == pytest.approx(1.81, abs=0.01)


def test_direction_disagreeing_with_anchors_is_an_error() -> None:
    with pytest.raises(ValueError):
        normalize(1.0, anchors(0.0, 1.0), Direction.LOWER)


def test_aggregation_best_last_and_none_valid() -> None:
    scores = [0.2, math.nan, 0.9, 0.4, math.nan]
    assert aggregate(scores, Aggregation.BEST) == 0.9
    assert aggregate(scores, Aggregation.LAST) == 0.4
    assert aggregate([math.nan], Aggregation.BEST) == 0.0
    assert aggregate([], Aggregation.LAST) == 0.0
