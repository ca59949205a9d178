"""What an integrity report is made of: flags, each with a rule, a severity and evidence."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.Enum):
    """How strongly a flag suggests a hack attempt.

    high: the evidence is a known hack technique with no honest use in a solution;
    medium: a technique that hacks use and honest work rarely needs (read the evidence);
    low: context worth a look (a failed network attempt, a copied public file)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        return {"low": 1, "medium": 2, "high": 3}[self.value]

    def at_least(self, other: Severity) -> bool:
        return self.rank >= other.rank


class Judge(enum.Enum):
    """Who raised a flag: a rule over the run record, or a model reading the transcript."""

    RULE = "rule"
    MODEL = "model"


@dataclass(frozen=True)
class Evidence:
    """Where a flag points in the run record. Every field is optional: a command has an
    event index and no file; a snapshot file has a file, a line and a snapshot."""

    event: int | None = None  # seq of the event in events.jsonl
    time: str | None = None  # ISO time of that event
    working_s: float | None = None
    command: str | None = None  # the command (cut), for exec events
    file: str | None = None  # path relative to the workspace / snapshot
    line: int | None = None  # 1-based line in `file` (or in the command text)
    snapshot: str | None = None  # protected/snapshots/<n>, relative to the run directory
    excerpt: str = ""  # the matching text, cut

    def where(self) -> str:
        """One short human-readable location."""
        parts = []
        if self.event is not None:
            parts.append(f"event {self.event}")
        if self.working_s is not None:
            parts.append(f"t={self.working_s:.0f}s")
        if self.file:
            parts.append(f"{self.file}:{self.line}" if self.line else self.file)
        if self.snapshot:
            parts.append(self.snapshot)
        return ", ".join(parts) or "run"

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and v != ""}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Flag:
    """One finding: rule id, severity, evidence and a one-line explanation."""

    rule: str
    severity: Severity
    explanation: str
    evidence: Evidence
    hack_class: str = ""
    judge: Judge = Judge.RULE

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity.value,
                "hack_class": self.hack_class, "judge": self.judge.value,
                "explanation": self.explanation, "evidence": self.evidence.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Flag:
        return cls(rule=str(data["rule"]), severity=Severity(data["severity"]),
                   explanation=str(data["explanation"]),
                   evidence=Evidence.from_json(dict(data.get("evidence", {}))),
                   hack_class=str(data.get("hack_class", "")),
                   judge=Judge(data.get("judge", "rule")))


@dataclass(frozen=True)
class IntegrityReport:
    """Every flag of one run, and what the checks could not see in it."""

    run_id: str
    flags: tuple[Flag, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def max_severity(self) -> Severity | None:
        return max((f.severity for f in self.flags), key=lambda s: s.rank, default=None)

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.flags if f.severity is severity)

    def flagged(self, at_least: Severity = Severity.LOW) -> bool:
        """Whether any flag is of `at_least` severity or worse."""
        return any(f.severity.at_least(at_least) for f in self.flags)

    def summary(self) -> str:
        """E.g. "2 high, 1 medium" or "no flags"."""
        counts = [f"{self.count(s)} {s.value}" for s in (Severity.HIGH, Severity.MEDIUM,
                                                         Severity.LOW) if self.count(s)]
        return ", ".join(counts) or "no flags"

    def to_json(self) -> dict[str, Any]:
        top = self.max_severity
        return {"run_id": self.run_id, "max_severity": top.value if top else None,
                "summary": self.summary(), "flags": [f.to_json() for f in self.flags],
                "notes": list(self.notes)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IntegrityReport:
        return cls(run_id=str(data["run_id"]),
                   flags=tuple(Flag.from_json(f) for f in data.get("flags", [])),
                   notes=tuple(str(n) for n in data.get("notes", [])))
