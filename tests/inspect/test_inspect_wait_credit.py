"""A model call that Inspect retried or rate-limited is credited back to the run's clock."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from rebench.harness.clock import WorkingClock
from rebench.harness.records import RunStatus
from rebench.inspect_ext import deadline


def test_waits_reported_by_inspect_are_credited(monkeypatch: pytest.MonkeyPatch) -> None:
    waiting = [0.0]
    monkeypatch.setattr(deadline, "_waiting_time", lambda: waiting[0])
    events: list[tuple[str, dict[str, object]]] = []
    clock = WorkingClock(100.0)
    session = SimpleNamespace(run=SimpleNamespace(clock=clock, record=SimpleNamespace(
        status=RunStatus.RUNNING)), events=SimpleNamespace(emit=lambda t, **f: events.append(
            (t, f))))
    credit = deadline.WaitCredit(session, log_at_s=0.2)  # type: ignore[arg-type]
    time.sleep(0.3)
    before = clock.working_s()
    waiting[0] = 0.25  # Inspect saw a 0.25 s wait
    credit.update()
    assert clock.working_s() == pytest.approx(before - 0.25, abs=0.05)
    assert events and events[0][0] == "clock_pause"
    credit.update()  # nothing new: nothing more credited
    assert len(events) == 1


def test_small_waits_are_logged_together_and_not_called_retries(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Most model calls wait a few ms (a connection slot, time outside the request): 100
    of them were 100 `clock_pause` events labelled "retry or rate limit"."""
    waiting = [0.0]
    monkeypatch.setattr(deadline, "_waiting_time", lambda: waiting[0])
    events: list[tuple[str, dict[str, object]]] = []
    record = SimpleNamespace(status=RunStatus.RUNNING)
    session = SimpleNamespace(run=SimpleNamespace(clock=WorkingClock(100.0), record=record),
                              events=SimpleNamespace(emit=lambda t, **f: events.append((t, f))))
    credit = deadline.WaitCredit(session)  # type: ignore[arg-type]
    time.sleep(0.6)  # a credit is at most the working time used
    for _ in range(100):
        waiting[0] += 0.004
        credit.update()
    assert events == []  # 0.4 s: not logged yet, but credited
    credit.flush()
    ((kind, fields),) = events
    assert kind == "clock_pause" and fields["waits"] == 100
    assert fields["seconds"] == pytest.approx(0.4, abs=0.01)
    assert "retry" not in str(fields["reason"]).split(" ")[0:2]
    assert "connection slot" in str(fields["reason"])
    time.sleep(1.2)
    waiting[0] += 1.1
    credit.update()  # a long wait is logged at once
    assert len(events) == 2 and events[1][1]["waits"] == 1
    record.status = RunStatus.FINISHED
    waiting[0] += 0.1
    credit.update()
    credit.flush()  # nothing after the run's end
    assert len(events) == 2
