"""Human expert reference data (paper and METR's released runs), loaded from data with sources."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from rebench.core.errors import RebenchError


class ReferenceDataError(RebenchError):
    """The human reference data file is malformed or a fact lacks a known source."""


@dataclass(frozen=True)
class Source:
    key: str
    citation: str
    url: str


@dataclass(frozen=True)
class Fact:
    """One published number and where it comes from."""

    value: float
    source: str
    note: str = ""


@dataclass(frozen=True)
class RangeFact:
    low: float
    high: float
    source: str


@dataclass(frozen=True)
class GroupMean:
    """Mean normalized score of a group of human runs at a time budget."""

    group: str
    budget_s: float
    mean: Fact
    runs: int


@dataclass(frozen=True)
class Headline:
    budget_s: float
    text: str
    source: str


@dataclass(frozen=True)
class EnvReference:
    """Human facts for one environment; any of them may be unknown."""

    env_id: str
    human_runs: Fact | None
    best: Fact | None
    week_ceiling: RangeFact | None
    mean_raw: Fact | None
    starting_raw: float | None
    reference_raw: float | None
    anchors_source: str

    @property
    def mean_normalized(self) -> float | None:
        """METR's mean raw score of 7-9 h human runs, normalized with the paper's anchors."""
        if self.mean_raw is None or self.starting_raw is None or self.reference_raw is None:
            return None
        span = self.reference_raw - self.starting_raw
        return max(0.0, (self.mean_raw.value - self.starting_raw) / span)


@dataclass(frozen=True)
class HumanReference:
    sources: dict[str, Source]
    totals: dict[str, Fact]
    group_means: tuple[GroupMean, ...]
    headlines: tuple[Headline, ...]
    environments: dict[str, EnvReference]

    def overall_mean(self) -> GroupMean | None:
        """The mean over all expert runs (the paper's headline human point)."""
        return next((g for g in self.group_means if g.group == "all experts"), None)


def _fact(data: Any, sources: dict[str, Source], where: str) -> Fact | None:
    if data is None:
        return None
    if not isinstance(data, dict) or data.get("source") not in sources:
        raise ReferenceDataError(f"{where}: every fact needs a known `source`")
    return Fact(float(data["value"]), str(data["source"]), str(data.get("note", "")))


def _env(env_id: str, data: dict[str, Any], sources: dict[str, Source]) -> EnvReference:
    ceiling = data.get("week_ceiling")
    range_fact = None
    if ceiling is not None:
        if ceiling.get("source") not in sources:
            raise ReferenceDataError(f"{env_id}.week_ceiling: needs a known `source`")
        range_fact = RangeFact(float(ceiling["low"]), float(ceiling["high"]), ceiling["source"])
    anchors = data.get("anchors") or {}
    if anchors and anchors.get("source") not in sources:
        raise ReferenceDataError(f"{env_id}.anchors: needs a known `source`")
    return EnvReference(
        env_id=env_id,
        human_runs=_fact(data.get("human_runs"), sources, f"{env_id}.human_runs"),
        best=_fact(data.get("best"), sources, f"{env_id}.best"),
        week_ceiling=range_fact,
        mean_raw=_fact(data.get("mean_raw_7_9h"), sources, f"{env_id}.mean_raw_7_9h"),
        starting_raw=float(anchors["starting_raw"]) if anchors else None,
        reference_raw=float(anchors["reference_raw"]) if anchors else None,
        anchors_source=str(anchors.get("source", "")),
    )


def parse_reference(data: dict[str, Any]) -> HumanReference:
    """Typed reference data from the parsed YAML; raises ReferenceDataError if malformed."""
    try:
        sources = {
            key: Source(key, " ".join(str(v["citation"]).split()), str(v.get("url", "")))
            for key, v in data["sources"].items()
        }
        totals = {
            key: fact for key, v in data["human_runs"].items()
            if (fact := _fact(v, sources, f"human_runs.{key}")) is not None
        }
        groups = tuple(
            GroupMean(str(g["group"]), float(g["budget_h"]) * 3600.0,
                      Fact(float(g["value"]), _known(g, sources)), int(g["runs"]))
            for g in data["group_means"]
        )
        headlines = tuple(
            Headline(float(h["budget_h"]) * 3600.0, " ".join(str(h["text"]).split()),
                     _known(h, sources))
            for h in data["headlines"]
        )
        envs = {k: _env(k, v, sources) for k, v in data["environments"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReferenceDataError(f"human reference data malformed: {exc!r}") from exc
    return HumanReference(sources, totals, groups, headlines, envs)


def _known(item: dict[str, Any], sources: dict[str, Source]) -> str:
    if item.get("source") not in sources:
        raise ReferenceDataError(f"{item}: needs a known `source`")
    return str(item["source"])


def load_human_reference() -> HumanReference:
    """The shipped human reference data (rebench/analysis/data/human_reference.yaml)."""
    text = resources.files("rebench.analysis.data").joinpath("human_reference.yaml").read_text()
    return parse_reference(yaml.safe_load(text))
