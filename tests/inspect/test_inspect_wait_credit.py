"""A model call that Inspect retried or rate-limited is credited back to the run's clock."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from rebench.harness.clock import WorkingClock
from rebench.inspect_ext import deadline


def test_waits_reported_by_inspect_are_credited(monkeypatch: pytest.MonkeyPatch) -> None:
    waiting = [0.0]
    monkeypatch.setattr(deadline, "_waiting_time", lambda: waiting[0])
    events: list[tuple[str, dict[str, object]]] = []
    clock = WorkingClock(100.0)
    session = SimpleNamespace(run=SimpleNamespace(clock=clock),
                              events=SimpleNamespace(emit=lambda t, **f: events.append((t, f))))
    credit = deadline.WaitCredit(session)  # type: ignore[arg-type]
    time.sleep(0.3)
    before = clock.working_s()
    waiting[0] = 0.25  # Inspect saw a 0.25 s rate-limit wait
    credit.update()
    assert clock.working_s() == pytest.approx(before - 0.25, abs=0.05)
    assert events and events[0][0] == "clock_pause"
    credit.update()  # nothing new: nothing more credited
    assert len(events) == 1
