"""The working clock: pauses, offsets, deadlines, persistence."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebench.harness.clock import WorkingClock, load_clock, save_clock


def test_counts_wall_time_minus_pauses() -> None:
    clock = WorkingClock(budget_s=10)
    time.sleep(0.1)
    with clock.paused():
        time.sleep(0.2)
        frozen = clock.working_s()
        time.sleep(0.05)
        assert abs(clock.working_s() - frozen) < 0.01  # stands still while paused
    time.sleep(0.1)
    assert 0.18 < clock.working_s() < 0.3
    assert clock.wall_s() > 0.4


def test_nested_pauses_and_unmatched_unpause() -> None:
    clock = WorkingClock(budget_s=10)
    clock.unpause()  # ignored
    clock.pause()
    clock.pause()
    clock.unpause()
    assert clock.is_paused
    clock.unpause()
    assert not clock.is_paused


def test_not_started_clock_is_frozen_until_start() -> None:
    clock = WorkingClock(budget_s=10, working_offset_s=3.0, started=False)
    time.sleep(0.1)
    assert clock.working_s() == 3.0
    clock.start()
    clock.start()  # a second start changes nothing
    time.sleep(0.1)
    assert 3.05 < clock.working_s() < 3.3
    assert not clock.is_paused


def test_continue_from_takes_the_offsets_before_start_only() -> None:
    clock = WorkingClock(budget_s=10, started=False)
    time.sleep(0.1)
    clock.continue_from(wall_offset_s=50.0, working_offset_s=4.0)
    assert clock.working_s() == 4.0 and 50.0 <= clock.wall_s() < 50.05
    assert clock.is_paused
    clock.start()
    time.sleep(0.1)
    assert 4.05 < clock.working_s() < 4.3
    with pytest.raises(RuntimeError, match="started"):
        clock.continue_from(wall_offset_s=0.0, working_offset_s=0.0)


def test_offsets_continue_and_time_left() -> None:
    clock = WorkingClock(budget_s=5, working_offset_s=4.9, wall_offset_s=100)
    assert clock.wall_s() >= 100
    assert 0 < clock.time_left_s() <= 0.1
    time.sleep(0.15)
    assert clock.expired() and clock.time_left_s() == 0.0


def test_wait_until_expired_wakes_at_the_deadline() -> None:
    clock = WorkingClock(budget_s=0.3)
    start = time.monotonic()
    assert clock.wait_until_expired(threading.Event()) is True
    assert 0.29 < time.monotonic() - start < 0.45


def test_wait_until_expired_stops_on_event() -> None:
    clock = WorkingClock(budget_s=100)
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    assert clock.wait_until_expired(stop) is False


def test_pause_moves_the_deadline() -> None:
    clock = WorkingClock(budget_s=0.2)
    with clock.paused():
        time.sleep(0.3)
    assert not clock.expired()


def test_save_and_load(tmp_path: Path) -> None:
    clock = WorkingClock(budget_s=10, working_offset_s=2.5, wall_offset_s=7.0)
    save_clock(tmp_path / "clock.json", clock)
    wall, working = load_clock(tmp_path / "clock.json")
    assert wall >= 7.0 and working >= 2.5
    assert load_clock(tmp_path / "missing.json") == (0.0, 0.0)
    (tmp_path / "bad.json").write_text("{not json")
    assert load_clock(tmp_path / "bad.json") == (0.0, 0.0)


@given(st.lists(st.booleans(), max_size=30))
def test_pause_depth_never_negative(ops: list[bool]) -> None:
    clock = WorkingClock(budget_s=10)
    depth = 0
    for op in ops:
        if op:
            clock.pause()
            depth += 1
        else:
            clock.unpause()
            depth = max(0, depth - 1)
        assert clock.is_paused == (depth > 0)


def test_credit_gives_back_measured_waits_but_never_more_than_used() -> None:
    clock = WorkingClock(100.0)
    time.sleep(0.2)
    started = time.monotonic()
    before = clock.working_s()
    assert clock.credit(0.1) == 0.1
    after = clock.working_s()
    elapsed = time.monotonic() - started
    assert before - 0.1 - 1e-6 <= after <= before - 0.1 + elapsed + 1e-6
    assert clock.credit(1000.0) <= before  # never more than was used
    assert clock.working_s() >= 0.0
