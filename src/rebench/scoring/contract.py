"""The scoring contract every environment implements: score kinds and the protocols its
`scoring.py` and `prepare.py` satisfy (checked by mypy where an environment declares
`SCORER: Scorer = score` and `PREPARER: Preparer = prepare`, and by `rebench validate`)."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rebench.core.score import ScoreResult
    from rebench.scoring.context import PrepareContext, ScoringContext


class ScoreKind(enum.Enum):
    """Why a score is taken. INITIAL: the starting solution at t=0; REQUESTED: the agent
    asked (an environment may make these cheap checks, e.g. validity only, when its score
    is hidden); FINAL: at the end of the run, and for `evaluate`/`calibrate`. The values are
    what the score log records in `kind`."""

    INITIAL = "initial"
    REQUESTED = "agent"
    FINAL = "final"


class Scorer(Protocol):
    """`scoring.score(ctx)`: a ScoreResult; NaN with a message for any bad submission; raise
    core.errors.ScorerFault only when the harness side is at fault."""

    def __call__(self, ctx: ScoringContext) -> ScoreResult: ...


class Preparer(Protocol):
    """`prepare.prepare(ctx)`: build the assets deterministically and idempotently."""

    def __call__(self, ctx: PrepareContext) -> None: ...
