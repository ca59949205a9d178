"""Score@k over total time budgets, with the best allocation per agent, bootstrap intervals,
and mean score-over-time trajectories: the tables behind the report."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rebench.analysis.metrics import (
    FloatArray,
    allocations,
    bootstrap_score_at_k,
    expected_score_at_k,
    final_score,
    percentile_interval,
    run_trajectory,
)
from rebench.analysis.table import RunTable

GroupKey = tuple[str, str, float]  # (agent, env_id, time limit in seconds)


@dataclass(frozen=True)
class EnvScore:
    """Expected best-of-k score of one agent on one environment, with a 95% interval."""

    env_id: str
    agent: str
    budget_s: float
    tau_s: float
    k: int
    score: float
    lo: float
    hi: float
    n_runs: int
    visible: bool


@dataclass(frozen=True)
class BudgetScore:
    """An agent's mean score over environments at a total budget, at its best allocation
    (k runs of limit tau), with a 95% bootstrap interval. `complete` is False when the
    allocation lacks runs on some environment of the table (the mean is then over fewer)."""

    agent: str
    budget_s: float
    tau_s: float
    k: int
    mean: float
    lo: float
    hi: float
    complete: bool
    per_env: tuple[EnvScore, ...]

    @property
    def allocation(self) -> str:
        from rebench.analysis.units import format_duration

        return f"{self.k} x {format_duration(self.tau_s)}"


@dataclass(frozen=True)
class Groups:
    """Final scores of runs grouped by (agent, environment, limit), and each env's visibility."""

    scores: dict[GroupKey, FloatArray]
    visible: dict[str, bool]
    env_ids: tuple[str, ...]


def group_scores(table: RunTable) -> Groups:
    """Group the runs' final scores for score@k."""
    lists: dict[GroupKey, list[float]] = {}
    visible: dict[str, bool] = {}
    for run in table.runs:
        lists.setdefault((run.agent, run.env_id, run.time_limit_s), []).append(final_score(run))
        visible[run.env_id] = run.rule.score_visible
    scores = {key: np.asarray(v, dtype=np.float64) for key, v in lists.items()}
    return Groups(scores, visible, tuple(table.env_ids()))


def _best_allocation(
    groups: Groups, agent: str, budget_s: float
) -> tuple[float, int, list[str]] | None:
    """The (tau, k, environments) with the highest mean; full coverage beats partial."""
    taus = sorted({tau for (a, _, tau) in groups.scores if a == agent})
    best: tuple[bool, float, float, int, list[str]] | None = None
    for tau, k in allocations(taus, budget_s):
        covered = [e for e in groups.env_ids if (agent, e, tau) in groups.scores]
        if not covered:
            continue
        point = float(np.mean([
            expected_score_at_k(groups.scores[(agent, e, tau)], k, groups.visible[e])
            for e in covered
        ]))
        candidate = (len(covered) == len(groups.env_ids), point, tau, k, covered)
        if best is None or candidate[:3] > best[:3]:
            best = candidate
    return None if best is None else (best[2], best[3], best[4])


def _rng(seed: int, agent: str, budget_s: float) -> np.random.Generator:
    """A generator per (agent, budget): results do not depend on which other agents exist."""
    return np.random.default_rng([seed, zlib.crc32(f"{agent}|{budget_s!r}".encode())])


def agent_budget_score(
    groups: Groups, agent: str, budget_s: float, n_boot: int = 1000, seed: int = 0
) -> BudgetScore | None:
    """The agent's score@k at `budget_s`, or None if no allocation fits the budget.

    The allocation is chosen on the point estimate and held fixed in the bootstrap, which
    resamples runs within each environment and averages environments with equal weight.
    """
    chosen = _best_allocation(groups, agent, budget_s)
    if chosen is None:
        return None
    tau, k, covered = chosen
    rng = _rng(seed, agent, budget_s)
    per_env = []
    boot_sum = np.zeros(n_boot)
    for env_id in covered:
        scores = groups.scores[(agent, env_id, tau)]
        visible = groups.visible[env_id]
        boot = bootstrap_score_at_k(scores, k, visible, rng, n_boot)
        boot_sum += boot
        lo, hi = percentile_interval(boot)
        per_env.append(EnvScore(env_id, agent, budget_s, tau, k,
                                expected_score_at_k(scores, k, visible), lo, hi,
                                int(scores.size), visible))
    lo, hi = percentile_interval(boot_sum / len(covered))
    mean = float(np.mean([e.score for e in per_env]))
    complete = len(covered) == len(groups.env_ids)
    return BudgetScore(agent, budget_s, tau, k, mean, lo, hi, complete, tuple(per_env))


def env_fill_scores(
    groups: Groups, focus: Sequence[BudgetScore], agents: Sequence[str], budget_s: float,
    n_boot: int = 1000, seed: int = 0,
) -> list[EnvScore]:
    """Per-environment scores at `budget_s` for each (agent, environment) that the agent's
    chosen allocation does not cover, each at the environment's own best allocation.

    An agent with runs of different limits on different environments (a human 8 h run on one,
    30 min runs on another) would otherwise vanish from the per-environment table wherever
    its chosen limit has no runs."""
    chosen = {s.agent: {e.env_id for e in s.per_env} for s in focus}
    out = []
    for agent in agents:
        for env_id in groups.env_ids:
            if env_id in chosen.get(agent, set()):
                continue
            best: EnvScore | None = None
            taus = sorted({t for (a, e, t) in groups.scores if a == agent and e == env_id})
            for tau, k in allocations(taus, budget_s):
                scores = groups.scores[(agent, env_id, tau)]
                visible = groups.visible[env_id]
                point = expected_score_at_k(scores, k, visible)
                if best is None or point > best.score:
                    rng = _rng(seed, f"{agent}|{env_id}", budget_s)
                    lo, hi = percentile_interval(
                        bootstrap_score_at_k(scores, k, visible, rng, n_boot))
                    best = EnvScore(env_id, agent, budget_s, tau, k, point, lo, hi,
                                    int(scores.size), visible)
            if best is not None:
                out.append(best)
    return out


def env_set(score: BudgetScore) -> tuple[str, ...]:
    """The environments a curve point averages (points over different sets are not joined)."""
    return tuple(sorted(e.env_id for e in score.per_env))


def budget_curve(
    table: RunTable, budgets: Sequence[float], n_boot: int = 1000, seed: int = 0
) -> list[BudgetScore]:
    """Score@k for every agent at every budget that some allocation of its runs fits."""
    groups = group_scores(table)
    out = []
    for agent in table.agents():
        for budget in sorted(budgets):
            result = agent_budget_score(groups, agent, budget, n_boot, seed)
            if result is not None:
                out.append(result)
    return out


def default_budgets(time_limits: Sequence[float], span: int = 4) -> list[float]:
    """The shortest limit times 1, 2, 4, ... up to `span` x the longest (the paper: 30 min to
    32 h), plus every limit itself so that each has its single-run point."""
    if not time_limits:
        return []
    top = max(time_limits) * span * (1 + 1e-9)
    out = set(time_limits)
    budget = min(time_limits)
    while budget <= top:
        out.add(budget)
        budget *= 2
    return sorted(out)


@dataclass(frozen=True)
class Trajectory:
    """Mean score-so-far over working time of one agent's runs of one limit on one env."""

    env_id: str
    agent: str
    tau_s: float
    times: tuple[float, ...]
    mean: tuple[float, ...]
    n_runs: int


def trajectories(table: RunTable, points: int = 60, start_fraction: float = 0.01) -> list[
    Trajectory
]:
    """Mean trajectories on a log grid from `start_fraction` x tau to tau. Groups whose runs
    all have a single score (external data with final scores only) have no trajectory."""
    groups: dict[GroupKey, list[int]] = {}
    for i, run in enumerate(table.runs):
        groups.setdefault((run.agent, run.env_id, run.time_limit_s), []).append(i)
    out = []
    for (agent, env_id, tau), members in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0])):
        if all(len(table.runs[i].events) < 2 for i in members):
            continue
        t_min = tau * start_fraction
        grid = np.geomspace(t_min, tau, points)
        curves = [run_trajectory(table.runs[i], grid, t_min, tau) for i in members]
        mean = np.mean(curves, axis=0)
        out.append(Trajectory(env_id, agent, tau, tuple(float(t) for t in grid),
                              tuple(float(v) for v in mean), len(members)))
    return out
