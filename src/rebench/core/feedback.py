"""What a score tells the agent: a fixed schema per environment.

An official score's `message` is the only thing of a scoring that reaches the agent, and
code that ran on held-out data can choose parts of it (its exit code, its stderr, the text
of its exception, its timing). Each environment therefore declares a `Feedback` schema: the
reasons an invalid score can give (codes, each with one fixed sentence) and the numbers a
valid or invalid score may show, each rounded to what a researcher needs. The harness
renders every scorer's message through it (`Feedback.render`) before anything is logged or
shown: an undeclared key is dropped, an undeclared reason becomes `invalid`, a string
where a number belongs is dropped. What the scorer said in full stays private (the score
log's `details`, for the operator).

    FEEDBACK = Feedback(
        reasons={"no_model": "model.py is missing from the submission"},
        numbers={"loss": 4, "score": 4},
    )
    ScoreResult.invalid("no_model")                 # the agent sees reason + its sentence
    ScoreResult(raw, message={"loss": 3.21987, "score": 0.54321})
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Reasons every environment has: the untrusted runner's named failures
# (scoring/runner.ChildFailure) and the generic fallback. Their sentences name no number
# that the child could choose.
COMMON_REASONS: Mapping[str, str] = {
    "invalid": "the submission is invalid (the reason is not shown to the agent)",
    "timeout": "the solution did not finish within its time limit",
    "memory": "the solution ran out of memory (the profile's limit)",
    "output_cap": "the solution wrote more output than allowed",
    "crash": "the solution failed (its output and exit status are not shown)",
    "bad_output": "the solution's output could not be read as the expected data",
    "snapshot": "the solution could not be snapshotted (too large, or the workspace is gone)",
}

# Keys every rendered message may carry besides the declared numbers.
RESERVED_KEYS = ("valid", "reason", "text")


class FeedbackError(ValueError):
    """A schema that cannot be honoured (a spec bug, raised when the spec loads)."""


@dataclass(frozen=True)
class Feedback:
    """The fixed schema of an environment's agent-visible score messages.

    `reasons`: reason code -> the one sentence the agent sees for it (added to
    COMMON_REASONS; a code may not redefine a common one). `numbers`: message key -> the
    decimal places kept; only numbers that are functions of public inputs or of the
    score itself belong here (never an exact distance to a secret, a timing or an exit
    status of code that ran on held-out data). `flags`: boolean message keys (e.g. a
    check that passed) that are functions of the score or of public inputs."""

    reasons: Mapping[str, str] = field(default_factory=dict)
    numbers: Mapping[str, int] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    # Decimal places of the raw and normalized score the agent is shown beside the message.
    score_places: int = 4

    def __post_init__(self) -> None:
        clash = sorted(set(self.reasons) & set(COMMON_REASONS))
        if clash:
            raise FeedbackError(f"reasons {clash} redefine common reasons")
        keys = [*self.numbers, *self.flags]
        bad = sorted(k for k in keys if k in RESERVED_KEYS or keys.count(k) > 1)
        if bad:
            raise FeedbackError(f"message keys {bad} are reserved or declared twice")
        for key, places in self.numbers.items():
            if not isinstance(places, int) or isinstance(places, bool) or not 0 <= places <= 6:
                raise FeedbackError(f"number {key!r}: decimal places must be an int in 0..6")
        for code, text in self.reasons.items():
            if not code.isidentifier() or not text:
                raise FeedbackError(f"reason {code!r} needs an identifier code and a sentence")

    @property
    def all_reasons(self) -> Mapping[str, str]:
        return {**COMMON_REASONS, **self.reasons}

    def render(self, message: Mapping[str, Any], *, valid: bool) -> dict[str, Any]:
        """The message as the agent may see it: `valid`; for an invalid score `reason`
        (a declared code, else `invalid`) and its fixed `text`; declared numbers, finite
        and rounded; declared flags as booleans. Nothing else survives."""
        out: dict[str, Any] = {"valid": bool(valid)}
        if not valid:
            code = message.get("reason", message.get("error"))
            reasons = self.all_reasons
            code = code if isinstance(code, str) and code in reasons else "invalid"
            out["reason"] = code
            out["text"] = reasons[code]
        for key, places in self.numbers.items():
            value = message.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if math.isfinite(value):
                out[key] = round(float(value), places) if places else round(value)
        for key in self.flags:
            value = message.get(key)
            if isinstance(value, bool):
                out[key] = value
        return out

    def conforms(self, message: Mapping[str, Any]) -> bool:
        """Whether `message` is already in rendered form (what tests assert of every
        message an agent can see)."""
        valid = message.get("valid")
        return isinstance(valid, bool) and dict(message) == self.render(message, valid=valid)


# The schema of an environment that declares none: only `valid` and the common reasons.
NO_FEEDBACK = Feedback()
