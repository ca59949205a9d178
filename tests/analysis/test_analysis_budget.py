"""Score@k over budgets: the best allocation, coverage, equal-weight means and the bootstrap."""

from __future__ import annotations

import math

import pytest

from rebench.analysis.budget import (
    agent_budget_score,
    budget_curve,
    default_budgets,
    group_scores,
    trajectories,
)
from rebench.analysis.metrics import expected_score_at_k
from rebench.analysis.table import EnvRule, Run, RunTable, ScoreEvent, make_run, paper_rule


def final_only(env_id: str, agent: str, tau: float, score: float, i: int) -> Run:
    event = ScoreEvent(env_id, "1", "cpu", agent, f"{env_id}-{agent}-{tau}-{i}", tau, tau, tau,
                       score, score, True, "final")
    return make_run([event], paper_rule(env_id))


def table_of(spec: dict[tuple[str, str, float], list[float]]) -> RunTable:
    runs = [final_only(env, agent, tau, s, i)
            for (env, agent, tau), scores in spec.items() for i, s in enumerate(scores)]
    return RunTable(tuple(runs))


SPEC = {
    ("triton_cumsum", "a", 1800.0): [0.0, 0.2, 1.0, 0.1],
    ("fix_embedding", "a", 1800.0): [0.0, 0.0, 0.3],
    ("small_scaling_law", "a", 1800.0): [0.2, 0.9],
    ("triton_cumsum", "a", 7200.0): [0.5, 0.6],
    ("fix_embedding", "a", 7200.0): [0.4],
    ("small_scaling_law", "a", 7200.0): [0.5],
}


def slow_best(spec: dict[tuple[str, str, float], list[float]], budget: float) -> float:
    """Every limit that fits, every environment, the obvious way."""
    envs = sorted({e for e, _, _ in spec})
    best = -math.inf
    for tau in sorted({t for _, _, t in spec}):
        k = int(budget // tau)
        if k < 1:
            continue
        per_env = [expected_score_at_k(spec[(e, "a", tau)], k, e != "small_scaling_law")
                   for e in envs]
        best = max(best, sum(per_env) / len(per_env))
    return best


@pytest.mark.parametrize("budget", [1800.0, 3600.0, 7200.0, 14400.0, 28800.0])
def test_best_allocation_matches_slow(budget: float) -> None:
    result = agent_budget_score(group_scores(table_of(SPEC)), "a", budget, n_boot=200)
    assert result is not None
    assert result.mean == pytest.approx(slow_best(SPEC, budget))
    assert result.complete
    assert result.k == int(budget // result.tau_s)
    assert result.lo <= result.mean <= result.hi


def test_allocation_is_named_and_hidden_env_uses_mean() -> None:
    result = agent_budget_score(group_scores(table_of(SPEC)), "a", 7200.0, n_boot=200)
    assert result is not None
    by_env = {e.env_id: e for e in result.per_env}
    # At 2 h: 4 x 30 min gives mean(0.740, 0.241, 0.55) = 0.510 > 1 x 2 h: mean(0.55, 0.4, 0.5).
    assert (result.tau_s, result.k, result.allocation) == (1800.0, 4, "4 x 30m")
    assert by_env["small_scaling_law"].score == pytest.approx(0.55)  # mean, not best of 4
    assert not by_env["small_scaling_law"].visible


def test_no_allocation_below_the_shortest_limit() -> None:
    assert agent_budget_score(group_scores(table_of(SPEC)), "a", 900.0) is None


def test_partial_coverage_is_flagged_and_full_coverage_preferred() -> None:
    spec = {("triton_cumsum", "a", 600.0): [1.0], ("triton_cumsum", "a", 60.0): [0.1],
            ("fix_embedding", "a", 60.0): [0.1]}
    full = agent_budget_score(group_scores(table_of(spec)), "a", 600.0, n_boot=200)
    assert full is not None and full.complete and full.tau_s == 60.0  # 1.0 only covers one env
    only_partial = {("triton_cumsum", "a", 60.0): [0.4], ("fix_embedding", "b", 60.0): [0.1]}
    result = agent_budget_score(group_scores(table_of(only_partial)), "a", 60.0, n_boot=200)
    assert result is not None and not result.complete and len(result.per_env) == 1


def test_mean_weights_environments_equally_and_bootstrap_is_seeded() -> None:
    spec = {("triton_cumsum", "a", 60.0): [1.0] * 20, ("fix_embedding", "a", 60.0): [0.0, 0.5]}
    one = budget_curve(table_of(spec), [60.0], n_boot=300, seed=3)
    two = budget_curve(table_of(spec), [60.0], n_boot=300, seed=3)
    assert one == two
    assert one[0].mean == pytest.approx((1.0 + 0.25) / 2)


def test_bootstrap_interval_does_not_depend_on_other_agents() -> None:
    spec = {("triton_cumsum", "a", 60.0): [0.0, 0.3, 0.9]}
    alone = budget_curve(table_of(spec), [120.0], n_boot=300)
    spec[("triton_cumsum", "b", 60.0)] = [0.5]
    with_b = [s for s in budget_curve(table_of(spec), [120.0], n_boot=300) if s.agent == "a"]
    assert alone == with_b


def test_default_budgets() -> None:
    assert default_budgets([1800.0, 7200.0, 28800.0]) == [
        1800.0 * 2**j for j in range(7)]  # 30 min .. 32 h, as in the paper
    assert default_budgets([120.0, 600.0]) == [120.0, 240.0, 480.0, 600.0, 960.0, 1920.0]
    assert default_budgets([]) == []


def test_trajectories_average_runs() -> None:
    rule = EnvRule(paper_rule("triton_cumsum").aggregation, True)
    runs = []
    for i, value in enumerate((0.2, 0.6)):
        events = [ScoreEvent("triton_cumsum", "1", "cpu", "a", f"r{i}", 100.0, t, t, v, v, True,
                             "agent") for t, v in ((0.0, 0.0), (100.0, value))]
        runs.append(make_run(events, rule))
    (traj,) = trajectories(RunTable(tuple(runs)), points=5)
    assert traj.n_runs == 2
    assert traj.times[0] == pytest.approx(1.0) and traj.times[-1] == pytest.approx(100.0)
    assert traj.mean[0] == 0.0 and traj.mean[-1] == pytest.approx(0.4)
