"""The paper's numbers as pure functions over runs and arrays of run scores.

Each function here has a slow, obvious twin in tests/analysis that it is checked against.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rebench.analysis.table import Run
from rebench.core.normalize import aggregate

FloatArray = npt.NDArray[np.float64]


def score_at(run: Run, t: float) -> float:
    """The run's score at working time t: best (or last, per its rule) valid normalized score
    logged by t; 0 when there is none yet."""
    return aggregate([e.normalized for e in run.events if e.working_s <= t], run.rule.aggregation)


def final_score(run: Run) -> float:
    """The run's score at its time limit. The final score is forced at the end of the budget
    and counts even when its request is logged a moment after the limit."""
    return score_at(run, math.inf)


def best_of_k_weights(n: int, k: float) -> FloatArray:
    """Weights w_i of the i-th smallest of n scores in E[max of k draws with replacement]:
    w_i = (i/n)^k - ((i-1)/n)^k, i = 1..n (they sum to 1)."""
    if n < 1 or k < 1:
        raise ValueError(f"need n >= 1 and k >= 1, got n={n}, k={k}")
    cdf = (np.arange(n + 1, dtype=np.float64) / n) ** k
    return np.diff(cdf)


def expected_score_at_k(scores: Sequence[float] | FloatArray, k: int, visible: bool) -> float:
    """Expected score of the best of k runs drawn with replacement from `scores`.

    When the agent cannot see its score (Scaling Law), it cannot pick the best of its k
    attempts, so the expected score is that of a random pick: the mean.
    """
    values = np.sort(np.asarray(scores, dtype=np.float64))
    if values.size == 0:
        return math.nan
    if not visible:
        return float(values.mean())
    return float(values @ best_of_k_weights(values.size, k))


def bootstrap_score_at_k(
    scores: Sequence[float] | FloatArray, k: int, visible: bool,
    rng: np.random.Generator, n_boot: int,
) -> FloatArray:
    """`expected_score_at_k` on `n_boot` resamples (with replacement, same size) of the runs."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return np.full(n_boot, math.nan)
    samples = values[rng.integers(0, values.size, size=(n_boot, values.size))]
    if not visible:
        return np.asarray(samples.mean(axis=1), dtype=np.float64)
    samples.sort(axis=1)
    return np.asarray(samples @ best_of_k_weights(values.size, k), dtype=np.float64)


def percentile_interval(samples: FloatArray, level: float = 0.95) -> tuple[float, float]:
    """The central `level` percentile interval of bootstrap samples."""
    tail = 100.0 * (1.0 - level) / 2.0
    lo, hi = np.percentile(samples, [tail, 100.0 - tail])
    return float(lo), float(hi)


def allocations(time_limits: Sequence[float], budget_s: float) -> list[tuple[float, int]]:
    """Every (tau, k) that fits a total budget: k = floor(budget / tau) >= 1 runs of limit tau."""
    out = []
    for tau in sorted(set(time_limits)):
        k = math.floor(budget_s / tau + 1e-9)  # 1e-9: 4 x 1800 s is exactly 7200 s, not 3.999..
        if k >= 1:
            out.append((tau, k))
    return out


def loglinear_interpolate(
    knot_t: Sequence[float], knot_v: Sequence[float], grid: Sequence[float] | FloatArray
) -> FloatArray:
    """Values at `grid` times, linear in log(t) between knots; 0 before the first knot (no
    score yet), the last value after the last one. Times must be positive and increasing."""
    t = np.asarray(knot_t, dtype=np.float64)
    g = np.asarray(grid, dtype=np.float64)
    if t.size == 0:
        return np.zeros(g.size)
    out = np.interp(np.log(g), np.log(t), np.asarray(knot_v, dtype=np.float64))
    out[g < t[0]] = 0.0
    return np.asarray(out, dtype=np.float64)


def run_trajectory(
    run: Run, grid: Sequence[float] | FloatArray, t_min: float, t_max: float
) -> FloatArray:
    """The run's score-so-far at each grid time, log-linearly interpolated between its score
    events. Event times are clamped into [t_min, t_max]: the t=0 initial score sits at t_min
    (log time has no 0) and the final score, logged a moment after the limit, at t_max."""
    times = sorted({min(max(e.working_s, t_min), t_max) for e in run.events})
    values = [score_at(run, t) if t < t_max else final_score(run) for t in times]
    return loglinear_interpolate(times, values, grid)
