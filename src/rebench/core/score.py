"""The result of one official scoring."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScoreResult:
    """`raw` is NaN for any invalid submission. `message` is shown to the agent; `details`
    stay private (score log and run records only)."""

    raw: float
    message: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return math.isfinite(self.raw)

    @classmethod
    def invalid(cls, reason: str, **details: Any) -> ScoreResult:
        """A NaN score with `reason` as the agent-visible message."""
        return cls(raw=math.nan, message={"error": reason}, details=dict(details))

    def to_json(self) -> dict[str, Any]:
        """JSON-safe: non-finite numbers anywhere in message or details become strings
        ("nan", "inf"), so a submission's odd values can never break the score log."""
        return {
            "raw": self.raw if self.valid else None,
            "valid": self.valid,
            "message": json_safe(self.message),
            "details": json_safe(self.details),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScoreResult:
        raw = data.get("raw")
        return cls(
            raw=math.nan if raw is None else float(raw),
            message=dict(data.get("message") or {}),
            details=dict(data.get("details") or {}),
        )


def json_safe(value: Any) -> Any:
    """`value` with non-finite floats replaced by their names and unknown objects by their
    str(), recursively (dict keys become strings)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)
