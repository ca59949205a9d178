"""The working clock of a run: wall seconds and working seconds, with pauses.

Working time is what the agent's budget is charged: all wall time the agent has, minus
harness-side waits (model API retries, harness setup) declared with `paused()`. Both clocks
continue across a resume from the offsets recorded before the harness died.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class WorkingClock:
    """Wall and working seconds since a run began, continued from earlier offsets.

    Thread-safe: the agent's thread acts while the harness's watchdog reads the clock.
    Pauses nest; the clock stands still while at least one is open.
    """

    def __init__(self, budget_s: float, working_offset_s: float = 0.0,
                 wall_offset_s: float = 0.0, *, started: bool = True) -> None:
        self.budget_s = budget_s
        self._working_offset = working_offset_s
        self._wall_offset = wall_offset_s
        self._started = time.monotonic()
        self._paused_total = 0.0
        self._pause_depth = 0
        self._pause_began = self._started
        self._lock = threading.Lock()
        self._not_started = not started
        if self._not_started:
            self._pause_depth = 1  # frozen until start(): setup is not the agent's time

    def start(self) -> None:
        """Begin charging working time (for clocks created with `started=False`)."""
        with self._lock:
            started = self._not_started
            self._not_started = False
        if started:
            self.unpause()

    def continue_from(self, wall_offset_s: float, working_offset_s: float) -> None:
        """Continue from what an earlier harness left (resume), as if made now with these
        offsets; only before `start`, so the clock object (which the run's scorer and
        event log hold) stays the same. RuntimeError once started."""
        with self._lock:
            if not self._not_started:
                raise RuntimeError("a started clock cannot be continued from other offsets")
            self._wall_offset, self._working_offset = wall_offset_s, working_offset_s
            self._started = self._pause_began = time.monotonic()
            self._paused_total = 0.0

    def wall_s(self) -> float:
        """Seconds since the run began, pauses included (and earlier sessions' wall time)."""
        return self._wall_offset + (time.monotonic() - self._started)

    def working_s(self) -> float:
        """Working seconds used: wall time minus pauses, plus what earlier sessions used."""
        now = time.monotonic()
        with self._lock:
            paused = self._paused_total
            if self._pause_depth:
                paused += now - self._pause_began
        return self._working_offset + (now - self._started) - paused

    def time_left_s(self) -> float:
        """Working seconds left of the budget (never negative)."""
        return max(0.0, self.budget_s - self.working_s())

    def expired(self) -> bool:
        return self.time_left_s() <= 0.0

    @property
    def is_paused(self) -> bool:
        with self._lock:
            return self._pause_depth > 0

    def pause(self) -> None:
        """Stop charging working time (until the matching `unpause`)."""
        with self._lock:
            if self._pause_depth == 0:
                self._pause_began = time.monotonic()
            self._pause_depth += 1

    def unpause(self) -> None:
        """End one `pause`; unmatched calls are ignored."""
        with self._lock:
            if self._pause_depth == 0:
                return
            self._pause_depth -= 1
            if self._pause_depth == 0:
                self._paused_total += time.monotonic() - self._pause_began

    def credit(self, seconds: float) -> float:
        """Give back `seconds` of working time that someone else measured as a wait (an
        Inspect model call retried or rate-limited); at most the working time used, never
        negative. Returns what was credited."""
        with self._lock:
            used = self._working_offset + (time.monotonic() - self._started) - self._paused_total
            amount = max(0.0, min(seconds, used))
            self._paused_total += amount
        return amount

    @contextmanager
    def paused(self) -> Iterator[None]:
        """A harness-side wait: working time stands still inside the block."""
        self.pause()
        try:
            yield
        finally:
            self.unpause()

    def snapshot(self) -> dict[str, float]:
        """What a resumed run continues from: wall and working seconds now."""
        return {"wall_s": round(self.wall_s(), 3), "working_s": round(self.working_s(), 3)}

    def wait_until_expired(self, stop: threading.Event, poll_s: float = 0.05) -> bool:
        """Block until the budget is used up (True) or `stop` is set (False).

        Sleeps in short steps: a pause moves the deadline, so it is re-read each step.
        """
        while not stop.is_set():
            left = self.time_left_s()
            if left <= 0.0:
                return True
            stop.wait(min(left, poll_s) if not self.is_paused else poll_s)
        return False


def save_clock(path: Path, clock: WorkingClock) -> None:
    """Write the clock's wall and working seconds to `path` atomically (the harness does so
    every few seconds, so a resume after SIGKILL charges the agent all but that much)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(clock.snapshot()))
    os.replace(tmp, path)


def load_clock(path: Path) -> tuple[float, float]:
    """(wall_s, working_s) saved in `path`; (0, 0) if missing or unreadable."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        data = json.loads(path.read_text())
        return float(data["wall_s"]), float(data["working_s"])
    return 0.0, 0.0
