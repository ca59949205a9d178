"""The scoring contract every environment implements: the protocols its `scoring.py` and
`prepare.py` satisfy (checked by mypy where an environment declares `SCORER: Scorer = score`
and `PREPARER: Preparer = prepare`, and by `rebench validate`), over what they receive
(scoring/context.py, which also defines the score kinds: a scoring context carries its kind)."""

from __future__ import annotations

from typing import Protocol

from rebench.core.score import ScoreResult
from rebench.scoring.context import PrepareContext, ScoreKind, ScoringContext

__all__ = ["Preparer", "ScoreKind", "Scorer"]


class Scorer(Protocol):
    """`scoring.score(ctx)`: a ScoreResult; NaN with a message for any bad submission; raise
    core.errors.ScorerFault only when the harness side is at fault."""

    def __call__(self, ctx: ScoringContext) -> ScoreResult: ...


class Preparer(Protocol):
    """`prepare.prepare(ctx)`: build the assets deterministically and idempotently."""

    def __call__(self, ctx: PrepareContext) -> None: ...
