"""The scoring contract: what an environment's scorer and preparer get and return.

    from rebench.scoring import ScoringContext, ScoreKind, ScoreResult, ScorerFault
"""

from rebench.core.errors import ScorerFault, ScoringHarnessError
from rebench.core.score import ScoreResult
from rebench.scoring.context import (
    PrepareContext,
    ProgressFn,
    ScoreKind,
    ScoringContext,
    no_progress,
    profile_limits,
)
from rebench.scoring.contract import Preparer, Scorer

__all__ = [
    "PrepareContext",
    "Preparer",
    "ProgressFn",
    "ScoreKind",
    "ScoreResult",
    "Scorer",
    "ScorerFault",
    "ScoringContext",
    "ScoringHarnessError",
    "no_progress",
    "profile_limits",
]
