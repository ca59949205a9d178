"""Analysis: the tidy table of score events, score@k over time budgets, human baselines, report.

A pipeline of pure functions over one table (see docs/report.md):

    table = from_run_dirs(runs_root())           # or from_index(db), from_csv(path)
    report = build_report(table, ReportSettings(n_boot=1000, seed=0))
    report_json(report)                          # every computed table as JSON-safe data

Plotting (`rebench.analysis.plots`) needs the optional extra `rebench[report]` (matplotlib).
"""

from rebench.analysis.budget import (
    BudgetScore,
    EnvScore,
    Trajectory,
    agent_budget_score,
    budget_curve,
    default_budgets,
    group_scores,
    trajectories,
)
from rebench.analysis.humans import HumanReference, load_human_reference
from rebench.analysis.metr import convert_metr_runs
from rebench.analysis.metrics import (
    allocations,
    bootstrap_score_at_k,
    expected_score_at_k,
    final_score,
    loglinear_interpolate,
    run_trajectory,
    score_at,
)
from rebench.analysis.report import Report, ReportSettings, build_report, report_json
from rebench.analysis.sources import from_csv, from_index, from_run_dirs, write_csv
from rebench.analysis.table import EnvRule, Run, RunTable, ScoreEvent, paper_rule

__all__ = [
    "BudgetScore",
    "EnvRule",
    "EnvScore",
    "HumanReference",
    "Report",
    "ReportSettings",
    "Run",
    "RunTable",
    "ScoreEvent",
    "Trajectory",
    "agent_budget_score",
    "allocations",
    "bootstrap_score_at_k",
    "budget_curve",
    "build_report",
    "convert_metr_runs",
    "default_budgets",
    "expected_score_at_k",
    "final_score",
    "from_csv",
    "from_index",
    "from_run_dirs",
    "group_scores",
    "load_human_reference",
    "loglinear_interpolate",
    "paper_rule",
    "report_json",
    "run_trajectory",
    "score_at",
    "trajectories",
    "write_csv",
]
