"""Durations for budgets: `90s`, `30m`, `8h`, `1h30m`, `2d`, or plain seconds."""

from __future__ import annotations

import math
import re

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str) -> float:
    """Seconds in `text`; raises ValueError with the accepted syntax on anything else."""
    s = text.strip().lower().replace(" ", "")
    try:
        value = float(s)
    except ValueError:
        pos, value = 0, 0.0
        for match in _PART.finditer(s):
            if match.start() != pos:
                break
            value += float(match.group(1)) * _UNITS[match.group(2)]
            pos = match.end()
        if pos != len(s) or not s:
            raise ValueError(
                f"bad duration {text!r}: use e.g. 90s, 30m, 8h, 1h30m or seconds"
            ) from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"bad duration {text!r}: must be positive")
    return value


def format_duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    h, rem = divmod(round(seconds), 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")
