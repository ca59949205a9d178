"""The report's content: every table computed once, as data, then rendered (HTML, terminal,
JSON) by separate functions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rebench.analysis.budget import (
    BudgetScore,
    EnvScore,
    Trajectory,
    budget_curve,
    default_budgets,
    env_fill_scores,
    group_scores,
    trajectories,
)
from rebench.analysis.cost import CostRow, cost_json, cost_rows
from rebench.analysis.humans import HumanReference, load_human_reference
from rebench.analysis.metrics import final_score
from rebench.analysis.table import RunTable, ScoreScale

# Profiles whose runs may stand beside the paper's human experts (8 hours on an H100): the
# gpu profile is the paper's setting; "" is data that does not say (external CSV rows), shown
# with a caption. The cpu profile is a scaled-down demo (smaller models, minutes): its
# normalized scores are not on the experts' footing, so they get no human marks at all.
PAPER_PROFILES = frozenset({"gpu", ""})
PAPER_SETTING = "paper, H100, gpu setting"


@dataclass(frozen=True)
class ReportSettings:
    """What the user chose: budgets on the curve, the budget of the per-env view, bootstrap."""

    budgets: tuple[float, ...] = ()  # empty: default_budgets of the table's time limits
    focus_budget_s: float | None = None  # None: the longest time limit in the table
    n_boot: int = 1000
    seed: int = 0
    title: str = ""  # a line under the page title: what the data is


@dataclass(frozen=True)
class Report:
    table: RunTable
    settings: ReportSettings
    budgets: tuple[float, ...]
    focus_budget_s: float
    curve: tuple[BudgetScore, ...]
    focus: tuple[BudgetScore, ...]
    # Per-environment scores outside each agent's chosen allocation (see env_fill_scores).
    focus_fill: tuple[EnvScore, ...]
    trajectories: tuple[Trajectory, ...]
    humans: HumanReference
    generated_at: str
    profile: str = ""  # the runs' one profile; "" not recorded; "mixed" (see build_reports)
    hardware: tuple[str, ...] = ()  # where the runs were taken, as their records say
    cost: tuple[CostRow, ...] = ()  # what the runs used (analysis/cost.py)

    @property
    def paper_comparable(self) -> bool:
        """May the paper's human experts be drawn beside these runs (docs/report.md)?"""
        return self.table.scale is ScoreScale.NORMALIZED and self.profile in PAPER_PROFILES

    def setting(self) -> str:
        """"cpu profile, on <hardware>": what every chart and table of this part says."""
        name = f"{self.profile} profile" if self.profile else "profile not recorded"
        where = "; ".join(self.hardware) if self.hardware else "hardware not recorded"
        return f"{name}, on {where}"


def build_reports(table: RunTable, settings: ReportSettings | None = None) -> list[Report]:
    """One report per profile of the table (runs of different profiles are different
    experiments: never averaged or drawn on one axis); one report for an empty table."""
    profiles = table.profiles()
    if len(profiles) <= 1:
        return [build_report(table, settings)]
    # gpu first: the paper's setting leads the page
    ordered = sorted(profiles, key=lambda p: (p != "gpu", p))
    return [build_report(table.only_profile(p), settings) for p in ordered]


def build_report(table: RunTable, settings: ReportSettings | None = None) -> Report:
    """Compute every table of the report (for a table of one profile; see build_reports)."""
    settings = settings or ReportSettings()
    limits = table.time_limits()
    budgets = tuple(sorted(settings.budgets)) or tuple(default_budgets(limits))
    focus_budget = settings.focus_budget_s or (max(limits) if limits else math.nan)
    curve = budget_curve(table, budgets, settings.n_boot, settings.seed)
    focus = [s for s in curve if s.budget_s == focus_budget]
    if not focus and math.isfinite(focus_budget):
        focus = budget_curve(table, [focus_budget], settings.n_boot, settings.seed)
    fill = (env_fill_scores(group_scores(table), focus, table.agents(), focus_budget,
                            settings.n_boot, settings.seed)
            if math.isfinite(focus_budget) else [])
    return Report(
        table=table, settings=settings, budgets=budgets, focus_budget_s=focus_budget,
        curve=tuple(curve), focus=tuple(focus), focus_fill=tuple(fill),
        trajectories=tuple(trajectories(table)),
        humans=load_human_reference(),
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        profile=_one_profile(table), hardware=tuple(table.hardware()),
        cost=tuple(cost_rows(table)),
    )


def _one_profile(table: RunTable) -> str:
    profiles = table.profiles()
    return profiles[0] if len(profiles) == 1 else ("" if not profiles else "mixed")


def _num(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _budget_json(score: BudgetScore) -> dict[str, Any]:
    return {
        "agent": score.agent, "budget_s": score.budget_s, "tau_s": score.tau_s, "k": score.k,
        "allocation": score.allocation, "mean": _num(score.mean), "ci95": [score.lo, score.hi],
        "complete": score.complete, "n_envs": len(score.per_env),
        "per_env": {e.env_id: {"score": e.score, "ci95": [e.lo, e.hi], "n_runs": e.n_runs}
                    for e in score.per_env},
    }


def _per_env_json(scores: Sequence[BudgetScore], fill: Sequence[EnvScore]) -> list[
    dict[str, Any]
]:
    """Per (agent, environment): `own_allocation` is True where the agent's chosen
    allocation has no runs on the environment and its best allocation there is shown."""
    pairs = [(e, False) for s in scores for e in s.per_env] + [(e, True) for e in fill]
    return [
        {"agent": e.agent, "env": e.env_id, "budget_s": e.budget_s, "tau_s": e.tau_s, "k": e.k,
         "score": e.score, "ci95": [e.lo, e.hi], "n_runs": e.n_runs,
         "score_visible": e.visible, "own_allocation": own}
        for e, own in pairs
    ]


def humans_json(humans: HumanReference) -> dict[str, Any]:
    """The human reference facts, each with its source key; sources spelled out once."""
    return {
        "sources": {k: {"citation": s.citation, "url": s.url} for k, s in humans.sources.items()},
        "totals": {k: {"value": f.value, "source": f.source} for k, f in humans.totals.items()},
        "group_means": [
            {"group": g.group, "budget_s": g.budget_s, "mean": g.mean.value, "runs": g.runs,
             "source": g.mean.source} for g in humans.group_means
        ],
        "headlines": [{"budget_s": h.budget_s, "text": h.text, "source": h.source}
                      for h in humans.headlines],
        "environments": {
            env_id: {
                "human_runs": e.human_runs.value if e.human_runs else None,
                "best": e.best.value if e.best else None,
                "week_ceiling": [e.week_ceiling.low, e.week_ceiling.high] if e.week_ceiling
                else None,
                "mean_raw_7_9h": e.mean_raw.value if e.mean_raw else None,
                "mean_normalized_7_9h": e.mean_normalized,
                "sources": sorted({f.source for f in (e.human_runs, e.best, e.mean_raw) if f}
                                  | ({e.week_ceiling.source} if e.week_ceiling else set())),
            }
            for env_id, e in humans.environments.items()
        },
    }


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float replaced by None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def report_json(report: Report) -> dict[str, Any]:
    """Every computed table as one JSON-safe object (`rebench report --json`)."""
    return dict(json_safe(_report_dict(report)))


def reports_json(reports: Sequence[Report]) -> dict[str, Any]:
    """One report as report_json; several (one per profile) as their common facts and
    `profiles`, one report_json each."""
    if len(reports) == 1:
        return report_json(reports[0])
    parts = [report_json(r) for r in reports]
    table = reports[0].table
    return {"source": table.source, "title": reports[0].settings.title,
            "generated_at": reports[0].generated_at,
            "n_runs": sum(p["n_runs"] for p in parts),
            "profiles": parts, "problems": list(table.problems)}


def _report_dict(report: Report) -> dict[str, Any]:
    table = report.table
    return {
        "source": table.source,
        "title": report.settings.title,
        "generated_at": report.generated_at,
        "n_runs": len(table.runs),
        "n_events": len(table.events()),
        "environments": table.env_ids(),
        "agents": table.agents(),
        "time_limits_s": table.time_limits(),
        "profile": report.profile,
        "hardware": list(report.hardware),
        "paper_comparable": report.paper_comparable,
        "settings": {"n_boot": report.settings.n_boot, "seed": report.settings.seed,
                     "interval": "percentile bootstrap 95%, runs resampled within environments"},
        "budgets_s": list(report.budgets),
        "focus_budget_s": _num(report.focus_budget_s),
        "score_at_k": [_budget_json(s) for s in report.curve],
        "per_environment": _per_env_json(report.focus, report.focus_fill),
        "runs": [
            {"run_id": r.run_id, "env": r.env_id, "agent": r.agent, "profile": r.profile,
             "hardware": r.hardware, "time_limit_s":
             r.time_limit_s, "aggregation": r.rule.aggregation.value,
             "final_score": final_score(r), "n_events": len(r.events),
             "usage": None if r.cost is None else r.cost.to_json()}
            for r in table.runs
        ],
        "cost": cost_json(report.cost, table),
        "humans": humans_json(report.humans),
        "problems": list(table.problems),
    }
