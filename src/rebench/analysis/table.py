"""The tidy table: one row per official score event, grouped into runs.

Everything in the analysis works on these rows; where they came from (run directories, the
SQLite run index, a CSV of external runs) is the business of `rebench.analysis.sources`.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, fields
from typing import Any

from rebench.core.errors import RebenchError
from rebench.core.spec import Aggregation

# The paper's rule for environments this installation does not have (e.g. rows of a CSV):
# Scaling Law counts the last valid score, and the agent cannot see its score.
PAPER_LAST_AGGREGATION = frozenset({"small_scaling_law"})
PAPER_HIDDEN_SCORE = frozenset({"small_scaling_law"})


@dataclass(frozen=True)
class ScoreEvent:
    """One official score of one run: a row of the tidy table."""

    env_id: str
    env_version: str
    profile: str
    agent: str
    run_id: str
    time_limit_s: float
    wall_s: float
    working_s: float
    raw: float  # NaN when invalid or unknown
    normalized: float  # NaN when invalid
    valid: bool
    kind: str  # "initial", "agent", "final" (or "external" for CSV rows without a kind)

    def to_json(self) -> dict[str, Any]:
        """The row as JSON-safe values (NaN becomes null)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = None if isinstance(value, float) and not math.isfinite(value) else value
        return out


COLUMNS = tuple(f.name for f in fields(ScoreEvent))


@dataclass(frozen=True)
class EnvRule:
    """How an environment's runs are scored: which score counts, and can the agent see it."""

    aggregation: Aggregation
    score_visible: bool


def paper_rule(env_id: str) -> EnvRule:
    """The paper's rule, by environment id."""
    aggregation = Aggregation.LAST if env_id in PAPER_LAST_AGGREGATION else Aggregation.BEST
    return EnvRule(aggregation, env_id not in PAPER_HIDDEN_SCORE)


def installed_rule(env_id: str) -> EnvRule:
    """The rule from the installed environment's spec, or the paper's rule if it is unknown."""
    from rebench.core.discovery import load_spec  # an import of every spec only when needed

    try:
        spec = load_spec(env_id)
    except (RebenchError, ImportError):
        return paper_rule(env_id)
    return EnvRule(spec.aggregation, spec.score_visible_to_agent)


@dataclass(frozen=True)
class RunCost:
    """What one run used, as its record says (issue 32), for the report's cost table and
    score-versus-cost chart. None is "not recorded", never 0: runs written before usage was
    recorded have `usage_recorded` False and no CPU figures; a run of an agent that called
    no model (or a non-Inspect agent) has no tokens."""

    wall_s: float | None = None  # from the run's start to its last score (the score log)
    usage_recorded: bool = False  # run.json has `usage` (records.RunUsage)
    agent_cpu_s: float | None = None  # None also where not counted (local isolation)
    scoring_cpu_s: float | None = None
    scoring_wall_s: float | None = None
    scorings: int | None = None
    # The model's tokens summed over its models (run.json `cost`, Inspect's usage records).
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None  # cache reads and writes
    total_tokens: int | None = None
    dollars: float | None = None  # None where a model had no price (or no table)
    models: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The record as JSON (null: not recorded)."""
        return {f.name: list(self.models) if f.name == "models" else getattr(self, f.name)
                for f in fields(self)}


@dataclass(frozen=True)
class Run:
    """One run: its identity, time limit, scoring rule and score events (by working time)."""

    run_id: str
    env_id: str
    agent: str
    time_limit_s: float
    rule: EnvRule
    events: tuple[ScoreEvent, ...]
    hardware: str = ""  # where the run was taken (the run record's); "" when not recorded
    cost: RunCost | None = None  # what it used; None for rows that do not say (CSV)

    @property
    def profile(self) -> str:
        return self.events[0].profile if self.events else ""


class ScoreScale(enum.Enum):
    """What a table's scores are. NORMALIZED: the paper's normalized score (0 = starting,
    1 = reference, not capped), the scale of rebench runs and of the published human facts.
    METR_CAPPED: METR's 0-1 capped transform from its time-horizon data, which cannot be
    converted back; a report on it draws no paper-scale reference on its charts."""

    NORMALIZED = "normalized"
    METR_CAPPED = "metr_capped"

    @property
    def label(self) -> str:
        return ("normalized score (paper's scale)" if self is ScoreScale.NORMALIZED
                else "METR's capped 0-1 score")


@dataclass(frozen=True)
class RunTable:
    """All runs of an analysis, and what could not be read (shown in the report)."""

    runs: tuple[Run, ...]
    problems: tuple[str, ...] = ()
    source: str = ""
    scale: ScoreScale = ScoreScale.NORMALIZED

    def events(self) -> list[ScoreEvent]:
        """The tidy table: every score event of every run."""
        return [event for run in self.runs for event in run.events]

    def env_ids(self) -> list[str]:
        return sorted({run.env_id for run in self.runs})

    def agents(self) -> list[str]:
        return sorted({run.agent for run in self.runs})

    def time_limits(self) -> list[float]:
        return sorted({run.time_limit_s for run in self.runs})

    def profiles(self) -> list[str]:
        """The profiles of the runs ("" for rows that do not say, e.g. external CSV)."""
        return sorted({run.profile for run in self.runs})

    def hardware(self) -> list[str]:
        """Where the runs were taken, as their records say (recorded ones only)."""
        return sorted({run.hardware for run in self.runs if run.hardware})

    def only_profile(self, profile: str) -> RunTable:
        """The runs of one profile; the problems and the source stay."""
        return RunTable(tuple(r for r in self.runs if r.profile == profile), self.problems,
                        self.source, self.scale)


def make_run(events: list[ScoreEvent], rule: EnvRule) -> Run:
    """A run from its events (all of one run_id), sorted by working time then log order."""
    if not events:
        raise ValueError("a run needs at least one event to take its identity from")
    first = events[0]
    ordered = tuple(sorted(events, key=lambda e: e.working_s))  # stable: keeps log order on ties
    return Run(first.run_id, first.env_id, first.agent, first.time_limit_s, rule, ordered)
