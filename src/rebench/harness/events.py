"""events.jsonl: every agent action and harness event of a run, with wall and working seconds.

One JSON object a line: `seq`, `time` (ISO 8601 UTC), `wall_s`, `working_s`, `type` and the
event's fields. Lines are flushed as written, so a harness killed with SIGKILL loses at most
the line it was writing; a torn last line is skipped on reading. Long texts (command output)
are truncated: the log is for reading and replaying, not a copy of the workspace.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebench.core.errors import RebenchError
from rebench.harness.clock import WorkingClock

# Characters kept of each text field (stdout, stderr, messages) in an event.
MAX_TEXT_CHARS = 2000
# Bytes of a written file kept in its event (so replays can re-create small files).
MAX_CONTENT_BYTES = 64_000

EVENT_TYPES = frozenset({
    "run_start", "run_resume", "agent_start", "agent_end", "agent_error", "exec",
    "write_file", "read_file", "score", "time_left", "sleep", "deadline", "hard_stop",
    "final_score", "run_end", "clock_pause", "clock_unpause", "note",
    # the human agent: a shell opened or closed (with its recording), a command it ran
    "shell_start", "shell_end", "shell_command",
    # a scoring the harness failed (not the agent's score); run-scoped trusted services
    "harness_error", "service_call", "service_event",
    # the harness's t=0 score done (it runs beside the agent, on the harness's time)
    "initial_score",
    # what the run's model calls cost (tokens per model, dollars from the user's prices)
    "cost",
    # what the run used of the machine (records.RunUsage), at its end
    "usage",
})


class EventLogError(RebenchError):
    """events.jsonl cannot be written (e.g. the disk is full)."""


def truncate(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` cut to `limit` characters, keeping head and tail, with a note of the cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null, long strings are truncated."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return truncate(value)
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


@dataclass(frozen=True)
class Event:
    """One line of events.jsonl."""

    seq: int
    time: str
    wall_s: float
    working_s: float
    type: str
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "time": self.time, "wall_s": self.wall_s,
                "working_s": self.working_s, "type": self.type, **self.data}

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> Event:
        core = {"seq", "time", "wall_s", "working_s", "type"}
        return cls(seq=int(payload["seq"]), time=str(payload["time"]),
                   wall_s=float(payload["wall_s"]), working_s=float(payload["working_s"]),
                   type=str(payload["type"]),
                   data={k: v for k, v in payload.items() if k not in core})


class EventLog:
    """Appends events to a run's events.jsonl; safe to call from several threads."""

    def __init__(self, path: Path, clock: WorkingClock) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        _drop_torn_tail(path)
        existing = read_events(path)
        self._seq = existing[-1].seq + 1 if existing else 0

    def emit(self, type_: str, *, fsync: bool = False, **data: Any) -> Event:
        """Write one event (flushed; with `fsync`, also on disk before returning)."""
        if type_ not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type_!r}")
        with self._lock:
            event = Event(seq=self._seq, time=datetime.now(UTC).isoformat(timespec="milliseconds"),
                          wall_s=round(self.clock.wall_s(), 3),
                          working_s=round(self.clock.working_s(), 3), type=type_,
                          data=_clean(data))
            line = json.dumps(event.to_json(), allow_nan=False) + "\n"
            size_before = self.path.stat().st_size if self.path.is_file() else 0
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(line)
                    handle.flush()
                    if fsync:
                        os.fsync(handle.fileno())
            except OSError as exc:  # disk full: stop the run clearly; it can be resumed
                with contextlib.suppress(OSError), self.path.open("r+b") as handle:
                    handle.truncate(size_before)  # no half-written or unsynced event stays
                raise EventLogError(f"cannot write {self.path}: {exc}") from exc
            self._seq += 1
        return event


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line left unfinished by a harness that died mid-write, so the next line
    starts clean (that event was never complete, so nothing is lost)."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def read_events(path: Path) -> list[Event]:
    """Every complete event of `path` (none if it does not exist); a torn last line, left
    by a harness killed mid-write, is skipped."""
    if not path.is_file():
        return []
    events = []
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(Event.from_json(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            if lineno >= len(lines) - 1:
                break
            raise ValueError(f"{path}: line {lineno} is not a valid event") from None
    return events


def last_clock(path: Path) -> tuple[float, float]:
    """(wall_s, working_s) of the last event in `path`, (0, 0) if none: where a resumed run's
    clock continues from."""
    events = read_events(path)
    if not events:
        return 0.0, 0.0
    return max(e.wall_s for e in events), max(e.working_s for e in events)
