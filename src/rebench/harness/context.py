"""Former home of the scoring contexts; they live in `rebench.scoring` now."""

from rebench.scoring.context import (
    PrepareContext,
    ProgressFn,
    ScoringContext,
    no_progress,
    profile_limits,
)

__all__ = ["PrepareContext", "ProgressFn", "ScoringContext", "no_progress", "profile_limits"]
