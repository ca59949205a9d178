"""Durations as people write them (the syntax of `rebench run --budget`: 90s, 30m, 2h, 1h30m,
or seconds) and as the report prints them (short: 45s, 30m, 1.5h, 32h)."""

from __future__ import annotations

import math

from rebench.core import duration
from rebench.core.errors import RebenchError


class DurationError(RebenchError):
    """A duration string that is not a positive duration."""


def parse_duration(text: str) -> float:
    """Seconds in `text`, as `rebench run --budget` reads it; DurationError otherwise."""
    try:
        return duration.parse_duration(text)
    except ValueError as exc:
        raise DurationError(str(exc)) from None


def format_duration(seconds: float) -> str:
    """Short human form: 45s, 30m, 2h, 1.5h, 32h; whole units where they fit."""
    if not math.isfinite(seconds):
        return "-"
    for unit, size in (("h", 3600.0), ("m", 60.0)):
        if seconds >= size:
            value = seconds / size
            whole = abs(value - round(value)) < 1e-6
            return f"{value:.0f}{unit}" if whole else f"{value:.3g}{unit}"
    return f"{seconds:.3g}s"
