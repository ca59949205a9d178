"""The report's cost table (issue 32): per environment, agent and time limit, what a run
used, as the medians of the runs whose records say it. A figure no run recorded is "not
recorded" (null in JSON), never 0: runs written before usage was recorded have none."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rebench.analysis.metrics import final_score
from rebench.analysis.table import Run, RunCost, RunTable
from rebench.analysis.units import format_duration

NOT_RECORDED = "not recorded"
# A run with a usage record but no agent CPU figure: its sandbox kept no group with CPU
# accounting (local isolation).
NOT_COUNTED = "not counted (local isolation)"


@dataclass(frozen=True)
class Median:
    """The median of a figure over the runs that recorded it (`runs` of them)."""

    value: float | None
    runs: int

    def to_json(self) -> dict[str, Any]:
        return {"median": self.value, "runs": self.runs}


# The table's figures: name -> how to read it off one run's record.
METRICS: dict[str, Callable[[RunCost], float | None]] = {
    "agent_cpu_s": lambda c: c.agent_cpu_s,
    "scoring_cpu_s": lambda c: c.scoring_cpu_s,
    "wall_s": lambda c: c.wall_s,
    "scorings": lambda c: None if c.scorings is None else float(c.scorings),
    "input_tokens": lambda c: _float(c.input_tokens),
    "output_tokens": lambda c: _float(c.output_tokens),
    "cached_tokens": lambda c: _float(c.cached_tokens),
    "total_tokens": lambda c: _float(c.total_tokens),
    "dollars": lambda c: c.dollars,
}


def _float(value: int | None) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class CostRow:
    """One (environment, agent, time limit) of one profile's runs."""

    env_id: str
    agent: str
    profile: str
    time_limit_s: float
    runs: int
    usage_recorded: int  # runs whose record has `usage` (the rest are older runs)
    medians: dict[str, Median]

    def missing_text(self, metric: str) -> str:
        """What the table says where no run of the row has `metric`."""
        if metric == "agent_cpu_s" and self.usage_recorded:
            return NOT_COUNTED
        return NOT_RECORDED

    def to_json(self) -> dict[str, Any]:
        return {"env": self.env_id, "agent": self.agent, "profile": self.profile,
                "time_limit_s": self.time_limit_s, "runs": self.runs,
                "usage_recorded": self.usage_recorded,
                **{name: m.to_json() for name, m in self.medians.items()}}


def median_of(runs: Sequence[Run], metric: str) -> Median:
    """The median of `metric` over the runs that recorded it."""
    read = METRICS[metric]
    values = [v for v in (read(r.cost) for r in runs if r.cost is not None) if v is not None]
    return Median(statistics.median(values) if values else None, len(values))


def cost_rows(table: RunTable) -> list[CostRow]:
    """The cost table of `table`'s runs, sorted by environment, agent and time limit."""
    groups: dict[tuple[str, str, str, float], list[Run]] = {}
    for run in table.runs:
        groups.setdefault((run.env_id, run.agent, run.profile, run.time_limit_s), []).append(run)
    return [
        CostRow(env_id, agent, profile, limit, len(runs),
                sum(1 for r in runs if r.cost is not None and r.cost.usage_recorded),
                {name: median_of(runs, name) for name in METRICS})
        for (env_id, agent, profile, limit), runs in sorted(groups.items())
    ]


@dataclass(frozen=True)
class CostPoint:
    """One run on the score-versus-cost chart."""

    env_id: str
    agent: str
    run_id: str
    time_limit_s: float
    score: float  # the run's final score (best valid, or last, per its rule)
    cost: float | None  # on the chart's axis; None: not recorded (not drawn)


def cost_axis(table: RunTable) -> str:
    """The chart's x axis: "agent_cpu_s" where any run recorded its agent's CPU-seconds,
    else "wall_s" (every run of a run directory has its wall clock)."""
    if any(r.cost is not None and r.cost.agent_cpu_s is not None for r in table.runs):
        return "agent_cpu_s"
    return "wall_s"


AXIS_LABELS = {"agent_cpu_s": "agent CPU-seconds (the sandbox's cgroup, log)",
               "wall_s": "wall time of the run (log)"}


def cost_points(table: RunTable, axis: str | None = None) -> list[CostPoint]:
    """One point per run: its final score against `axis` (default: cost_axis)."""
    axis = axis or cost_axis(table)
    read = METRICS[axis]
    return [CostPoint(r.env_id, r.agent, r.run_id, r.time_limit_s, final_score(r),
                      None if r.cost is None else read(r.cost))
            for r in table.runs]


def cost_json(rows: Sequence[CostRow], table: RunTable) -> dict[str, Any]:
    """The cost table and the chart's points as report.json's `cost`."""
    axis = cost_axis(table)
    points = cost_points(table, axis)
    return {
        "rows": [row.to_json() for row in rows],
        "chart": {"axis": axis, "points": [
            {"env": p.env_id, "agent": p.agent, "run_id": p.run_id,
             "time_limit_s": p.time_limit_s, "score": p.score, "cost": p.cost}
            for p in points]},
        "runs_without_usage": sum(1 for r in table.runs
                                  if r.cost is None or not r.cost.usage_recorded),
        "gpu_s": "not measured",
    }


# The table's columns: (metric, heading). Token columns come only where a run has tokens.
COLUMNS = (("agent_cpu_s", "agent CPU-s"), ("scoring_cpu_s", "scoring CPU-s"),
           ("wall_s", "wall time"), ("scorings", "scorings per run"))
TOKEN_COLUMNS = (("total_tokens", "tokens"), ("dollars", "dollars"))


def columns(rows: Sequence[CostRow]) -> list[tuple[str, str]]:
    """The columns of a table of `rows`: the token ones only where some run has tokens
    (with none, the table says so in a note rather than with empty columns)."""
    return list(COLUMNS) + (list(TOKEN_COLUMNS) if has_tokens(rows) else [])


def has_tokens(rows: Sequence[CostRow]) -> bool:
    """Whether any run of `rows` recorded model tokens."""
    return any(r.medians["total_tokens"].runs for r in rows)


def format_value(metric: str, value: float) -> str:
    """A median as the table prints it."""
    if metric == "wall_s":
        return format_duration(value)
    if metric == "dollars":
        return f"${value:.2f}"
    if metric.endswith("_tokens"):
        return f"{value:,.0f}"
    if metric == "scorings":
        return f"{value:g}"
    return f"{value:.1f}"


# Figures of the usage record: a row's "usage recorded" count already says how many runs
# have them, so their cells note only a count that differs from it.
USAGE_METRICS = frozenset({"agent_cpu_s", "scoring_cpu_s", "scorings"})


def cell_text(row: CostRow, metric: str) -> tuple[str, str]:
    """(value, note) of one cell: the median, with "k of n runs" where fewer runs recorded
    it than the row's "usage recorded" count (usage figures) or its runs (the others);
    "not recorded" (or "not counted") where none did."""
    median = row.medians[metric]
    if median.value is None:
        return row.missing_text(metric), ""
    implied = row.usage_recorded if metric in USAGE_METRICS else row.runs
    note = "" if median.runs == implied else f"{median.runs} of {row.runs} runs"
    return format_value(metric, median.value), note


def token_detail(row: CostRow) -> list[str]:
    """The tokens cell's detail lines: the medians of input, output and cached tokens."""
    medians = [(name, row.medians[metric].value) for name, metric in
               (("in", "input_tokens"), ("out", "output_tokens"), ("cached", "cached_tokens"))]
    return [f"{name} {value:,.0f}" for name, value in medians if value is not None]
