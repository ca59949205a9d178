"""events.jsonl: writing, truncation, torn lines, reading back."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest

from rebench.harness.clock import WorkingClock
from rebench.harness.events import EventLog, last_clock, read_events, truncate


def test_events_carry_both_clocks_and_fields(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", WorkingClock(budget_s=60, working_offset_s=5))
    log.emit("exec", cmd="ls", returncode=0, stdout="x" * 10_000, score=math.nan)
    (event,) = read_events(tmp_path / "events.jsonl")
    assert event.type == "exec" and event.seq == 0 and event.working_s >= 5
    assert event.data["cmd"] == "ls" and event.data["score"] is None
    assert len(event.data["stdout"]) < 2100 and "characters cut" in event.data["stdout"]


def test_unknown_event_type_is_a_bug(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", WorkingClock(budget_s=60))
    with pytest.raises(ValueError):
        log.emit("made_up")


def test_seq_continues_after_reopen_and_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    clock = WorkingClock(budget_s=60)
    log = EventLog(path, clock)
    log.emit("run_start")
    log.emit("agent_start")
    with path.open("a") as handle:
        handle.write('{"seq": 2, "time": "x", "wal')  # the harness died mid-write
    assert [e.seq for e in read_events(path)] == [0, 1]
    reopened = EventLog(path, clock)  # cuts the torn line, so the next one starts clean
    reopened.emit("run_resume")
    assert [(e.seq, e.type) for e in read_events(path)] == [
        (0, "run_start"), (1, "agent_start"), (2, "run_resume")]


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, WorkingClock(budget_s=60))
    log.emit("run_start")
    with path.open("a") as handle:
        handle.write("garbage\n")
    log.emit("note", text="after")
    with pytest.raises(ValueError):
        read_events(path)


def test_concurrent_writers_keep_lines_whole(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, WorkingClock(budget_s=60))
    threads = [threading.Thread(target=lambda: [log.emit("note", text="y" * 500)
                                                for _ in range(50)]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = path.read_text().splitlines()
    assert len(lines) == 200
    assert sorted(json.loads(line)["seq"] for line in lines) == list(range(200))


def test_last_clock(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    assert last_clock(path) == (0.0, 0.0)
    EventLog(path, WorkingClock(budget_s=60, working_offset_s=12, wall_offset_s=30)).emit(
        "note", text="x")
    wall, working = last_clock(path)
    assert wall >= 30 and working >= 12


def test_truncate_keeps_head_and_tail() -> None:
    text = "a" * 100 + "b" * 5000 + "c" * 100
    cut = truncate(text, 200)
    assert cut.startswith("a" * 100) and cut.endswith("c" * 100)
    assert truncate("short", 200) == "short"


def test_full_disk_is_a_clear_error_and_keeps_earlier_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from rebench.harness.events import EventLogError

    path = tmp_path / "events.jsonl"
    log = EventLog(path, WorkingClock(budget_s=60))
    log.emit("run_start")
    before = path.read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("rebench.harness.events.os.fsync", full)
    with pytest.raises(EventLogError, match="No space left"):
        log.emit("score", fsync=True)
    assert path.read_bytes() == before
