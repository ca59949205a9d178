"""Normalization: the one function that maps raw scores to 0 = start, 1 = reference."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from rebench.core.spec import Aggregation, Direction


class AnchorSource(enum.Enum):
    """Where the anchors used for normalization came from."""

    CALIBRATION = "calibration"
    PREPARE = "prepare"  # measured on the prepared setting by the environment's prepare
    PROFILE_DEFAULT = "profile-default"


@dataclass(frozen=True)
class Anchors:
    """Raw scores of the starting and the reference solution, and where they were measured."""

    starting_raw: float
    reference_raw: float
    source: AnchorSource
    hardware: str

    def to_json(self) -> dict[str, object]:
        return {
            "starting_raw": self.starting_raw,
            "reference_raw": self.reference_raw,
            "source": self.source.value,
            "hardware": self.hardware,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Anchors:
        return cls(
            starting_raw=float(data["starting_raw"]),  # type: ignore[arg-type]
            reference_raw=float(data["reference_raw"]),  # type: ignore[arg-type]
            source=AnchorSource(data["source"]),
            hardware=str(data["hardware"]),
        )


def normalize(raw: float, anchors: Anchors, direction: Direction) -> float:
    """(raw - start) / (reference - start), floored at 0, not capped; NaN for invalid raw.

    The direction only documents intent: the formula is direction-free, since for a
    lower-is-better score the reference anchor is below the starting one. A direction that
    disagrees with the anchors is a spec error, so it is checked here.
    """
    span = anchors.reference_raw - anchors.starting_raw
    if (span < 0) != (direction is Direction.LOWER) or span == 0:
        raise ValueError(
            f"anchors {anchors.starting_raw} -> {anchors.reference_raw} disagree with "
            f"direction {direction.value}"
        )
    if not math.isfinite(raw):
        return math.nan
    return max(0.0, (raw - anchors.starting_raw) / span)


def aggregate(normalized: list[float], aggregation: Aggregation) -> float:
    """The run's score from its logged normalized scores: best (or last) valid one; 0 if none."""
    valid = [s for s in normalized if math.isfinite(s)]
    if not valid:
        return 0.0
    return max(valid) if aggregation is Aggregation.BEST else valid[-1]
