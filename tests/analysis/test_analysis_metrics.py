"""The math of the analysis, each fast function against a slow, obvious twin."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebench.analysis.metrics import (
    allocations,
    best_of_k_weights,
    bootstrap_score_at_k,
    expected_score_at_k,
    final_score,
    loglinear_interpolate,
    percentile_interval,
    run_trajectory,
    score_at,
)
from rebench.analysis.table import EnvRule, Run, ScoreEvent, make_run
from rebench.core.spec import Aggregation

BEST = EnvRule(Aggregation.BEST, True)
LAST_HIDDEN = EnvRule(Aggregation.LAST, False)


def run_of(events: list[tuple[float, float]], rule: EnvRule = BEST, tau: float = 100.0) -> Run:
    rows = [ScoreEvent("env", "1", "cpu", "agent", "r", tau, t, t, v, v, math.isfinite(v),
                       "agent") for t, v in events]
    return make_run(rows, rule)


def slow_score_at(events: list[tuple[float, float]], t: float, last: bool) -> float:
    score = None
    for time, value in sorted(events, key=lambda e: e[0]):
        if time > t or math.isnan(value):
            continue
        if last or score is None or value > score:
            score = value
    return 0.0 if score is None else score


def slow_expected_max(scores: list[float], k: int) -> float:
    draws = list(itertools.product(scores, repeat=k))
    return sum(max(d) for d in draws) / len(draws)


def slow_loglinear(knots: list[tuple[float, float]], t: float) -> float:
    if t < knots[0][0]:
        return 0.0
    for (t0, v0), (t1, v1) in itertools.pairwise(knots):
        if t0 <= t <= t1:
            return v0 + (v1 - v0) * (math.log(t) - math.log(t0)) / (math.log(t1) - math.log(t0))
    return knots[-1][1]


events_strategy = st.lists(
    st.tuples(st.floats(0, 100), st.one_of(st.just(math.nan), st.floats(0, 3))),
    min_size=1, max_size=8,
)


@given(events_strategy, st.floats(-1, 120), st.booleans())
def test_score_at_matches_slow(events: list[tuple[float, float]], t: float, last: bool) -> None:
    rule = LAST_HIDDEN if last else BEST
    assert score_at(run_of(events, rule), t) == pytest.approx(slow_score_at(events, t, last))


def test_score_at_best_last_and_nothing_valid() -> None:
    events = [(0.0, 0.0), (10.0, 0.8), (20.0, math.nan), (30.0, 0.3)]
    assert score_at(run_of(events), 25.0) == 0.8
    assert score_at(run_of(events, LAST_HIDDEN), 25.0) == 0.8
    assert score_at(run_of(events), 35.0) == 0.8  # best so far
    assert score_at(run_of(events, LAST_HIDDEN), 35.0) == 0.3  # Scaling Law: the last counts
    assert score_at(run_of([(5.0, math.nan)]), 10.0) == 0.0  # no valid score: 0
    assert score_at(run_of(events), -1.0) == 0.0  # before any score


def test_final_score_counts_a_final_score_logged_after_the_limit() -> None:
    run = run_of([(0.0, 0.0), (100.4, 0.9)], tau=100.0)
    assert final_score(run) == 0.9


def test_score_at_k_hand_computed() -> None:
    # Sorted scores 0, 0.5, 1 with k = 2: weights (1/9, 3/9, 5/9) -> (1.5 + 5) / 9.
    assert expected_score_at_k([1.0, 0.0, 0.5], 2, visible=True) == pytest.approx(6.5 / 9)
    assert expected_score_at_k([1.0, 0.0, 0.5], 1, visible=True) == pytest.approx(0.5)
    # Hidden score: a random pick of the k attempts, the mean, whatever k.
    assert expected_score_at_k([1.0, 0.0, 0.5], 4, visible=False) == pytest.approx(0.5)
    assert best_of_k_weights(3, 2) == pytest.approx([1 / 9, 3 / 9, 5 / 9])


@settings(max_examples=60)
@given(st.lists(st.floats(0, 2), min_size=1, max_size=5), st.integers(1, 4))
def test_score_at_k_matches_enumeration(scores: list[float], k: int) -> None:
    assert expected_score_at_k(scores, k, True) == pytest.approx(slow_expected_max(scores, k))


@given(st.lists(st.floats(0, 2), min_size=1, max_size=5), st.integers(1, 4))
def test_hidden_score_at_k_is_mean_of_a_random_pick(scores: list[float], k: int) -> None:
    draws = list(itertools.product(scores, repeat=k))
    slow = sum(d[0] for d in draws) / len(draws)  # the pick is any fixed position
    assert expected_score_at_k(scores, k, False) == pytest.approx(slow)


def test_score_at_k_of_nothing_is_nan() -> None:
    assert math.isnan(expected_score_at_k([], 2, True))


def test_bootstrap_is_seeded_and_matches_slow_resampling() -> None:
    scores = np.array([0.0, 0.2, 0.9, 1.1, 0.4])
    a = bootstrap_score_at_k(scores, 3, True, np.random.default_rng(7), 200)
    b = bootstrap_score_at_k(scores, 3, True, np.random.default_rng(7), 200)
    assert np.array_equal(a, b)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, scores.size, size=(200, scores.size))
    slow = [slow_expected_max(list(scores[row]), 3) for row in idx[:20]]
    assert a[:20] == pytest.approx(slow)
    lo, hi = percentile_interval(a)
    assert lo <= expected_score_at_k(scores, 3, True) <= hi


def test_allocations_fit_the_budget() -> None:
    assert allocations([1800.0, 7200.0, 28800.0], 7200.0) == [(1800.0, 4), (7200.0, 1)]
    assert allocations([1800.0], 900.0) == []
    assert allocations([600.0, 600.0], 1500.0) == [(600.0, 2)]


@given(
    st.lists(st.tuples(st.floats(0.1, 1e4), st.floats(0, 2)), min_size=1, max_size=6,
             unique_by=lambda x: round(x[0], 3)),
    st.floats(0.05, 2e4),
)
def test_loglinear_matches_slow(knots: list[tuple[float, float]], t: float) -> None:
    knots = sorted(knots)
    if any(b[0] / a[0] < 1.0001 for a, b in itertools.pairwise(knots)):
        return  # nearly equal knot times: the slope is ill-conditioned, not interesting
    got = loglinear_interpolate([k[0] for k in knots], [k[1] for k in knots], [t])[0]
    assert got == pytest.approx(slow_loglinear(knots, t), abs=1e-9)


def test_trajectory_interpolates_best_so_far_in_log_time() -> None:
    run = run_of([(0.0, 0.0), (10.0, 0.5), (100.4, 1.0)], tau=100.0)
    grid = [1.0, 10.0, math.sqrt(10.0 * 100.0), 100.0]
    got = run_trajectory(run, grid, t_min=1.0, t_max=100.0)
    assert got == pytest.approx([0.0, 0.5, 0.75, 1.0])
