"""Ending the running Inspect sample when the run's working time is up (used by the
deadline watcher, the sandbox and the tools; below all three, so none imports another)."""

from __future__ import annotations

from inspect_ai.util import LimitExceededError

from rebench.harness.session import Session


def end_sample_at_deadline(session: Session) -> None:
    """End the running Inspect sample with a working-limit event (no-op outside a sample
    or when it is already ending)."""
    from inspect_ai.log._samples import sample_active

    active = sample_active()
    if active is None or active.tg is None or active.terminal:
        return
    budget = session.run.record.budget_s
    active.limit_exceeded(LimitExceededError(
        "working", value=round(session.working_s(), 1), limit=budget,
        message=f"The run's working time budget of {budget:.0f} s is used up.",
    ))
