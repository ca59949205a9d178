"""Progress of the long CLI steps (prepare, calibrate, reference builds, official scorings)
and the signals that stop them.

A user must be able to tell a long step from a hang, on a terminal and in a log alike:
`Ticker` prints one line per step (`[1m05s] building the reference solution`) and, while a
step lasts, a line with the elapsed time every `REBENCH_PROGRESS_S` seconds (default 20); on
a terminal it also keeps a spinner with the step and its elapsed time. `stop_signals`
turns SIGTERM (what `timeout`, a scheduler or a closed session send) into the same
KeyboardInterrupt as Ctrl-C, so `with` blocks unwind and temporary folders are removed."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from rich.console import Console

DEFAULT_INTERVAL_S = 20.0


def progress_interval() -> float:
    """Seconds between two "still working" lines ($REBENCH_PROGRESS_S, default 20)."""
    try:
        value = float(os.environ.get("REBENCH_PROGRESS_S", DEFAULT_INTERVAL_S))
    except ValueError:
        return DEFAULT_INTERVAL_S
    return value if value > 0 else DEFAULT_INTERVAL_S


def fmt_elapsed(seconds: float) -> str:
    """0s, 45s, 3m05s, 1h02m: short, fixed-order, easy to read in a log."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Ticker:
    """What a long command is doing now, shown as it changes and repeated while it lasts.

    `step(text)` starts a step (a line is printed at once); a background thread prints
    `[elapsed] text (step for Ns)` every `interval` seconds while nothing changes. Lines go
    to `console` (stderr), so a command's stdout stays its result alone."""

    def __init__(self, console: Console, what: str, interval: float | None = None) -> None:
        self.console = console
        self.what = what
        self.interval = progress_interval() if interval is None else interval
        self._started = time.monotonic()
        self._step = what
        self._step_started = self._started
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._status: Any = None
        self._thread = threading.Thread(target=self._beat, name="cli-progress", daemon=True)

    def __enter__(self) -> Ticker:
        if self.console.is_terminal:
            self._status = self.console.status(self._status_text())
            self._status.__enter__()
        self._line(self.what)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=2)
        if self._status is not None:
            self._status.__exit__(None, None, None)

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def step(self, text: str) -> None:
        """A new step: printed now, repeated with its duration while it lasts."""
        with self._lock:
            self._step, self._step_started = text, time.monotonic()
        self._line(text)

    def warn(self, text: str) -> None:
        """A warning line (bold red), not a step."""
        from rich.markup import escape

        self.console.print(f"[bold red]{escape(text)}[/]", soft_wrap=True, highlight=False)

    def _line(self, text: str) -> None:
        from rich.markup import escape

        self.console.print(f"[dim]\\[{fmt_elapsed(self.elapsed())}][/] {escape(text)}",
                           soft_wrap=True, highlight=False)

    def _status_text(self) -> str:
        from rich.markup import escape

        step_for = time.monotonic() - self._step_started
        return f"{escape(self._step)} ({fmt_elapsed(step_for)})"

    def _beat(self) -> None:
        next_line = time.monotonic() + self.interval
        while not self._done.wait(1.0 if self._status is not None else
                                  max(0.05, min(1.0, self.interval))):
            with self._lock:
                step, since = self._step, self._step_started
            if self._status is not None:
                self._status.update(self._status_text())
            now = time.monotonic()
            if since > next_line - self.interval:  # a new step restarts the count
                next_line = max(next_line, since + self.interval)
            if now >= next_line:
                self._line(f"{step} (still working, {fmt_elapsed(now - since)} in this step)")
                next_line = now + self.interval


class Stopped(KeyboardInterrupt):
    """A KeyboardInterrupt raised for SIGTERM or SIGHUP (Ctrl-C raises the plain one)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_name(exc: BaseException) -> str:
    """How a stop is described in messages and run notes: "Ctrl-C" or "SIGTERM"."""
    return signal.Signals(exc.signum).name if isinstance(exc, Stopped) else "Ctrl-C"


def exit_status(exc: BaseException) -> int:
    """128 + the signal number, as a shell reports a process ended by it."""
    return 128 + (exc.signum if isinstance(exc, Stopped) else signal.SIGINT)


def _raise_stopped(signum: int, _frame: FrameType | None) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise `Stopped` (a KeyboardInterrupt) in the main thread while the
    body runs, so they end a command as Ctrl-C does. Outside the main thread (a test
    runner's worker) nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for signum, old in saved.items():
        if old is not signal.SIG_IGN:  # nohup's choice stands
            signal.signal(signum, _raise_stopped)
    try:
        yield
    finally:
        for signum, old in saved.items():
            signal.signal(signum, old)


class NotStarted(Exception):
    """Raised where a batch would start an attempt after a stop was asked for."""


@contextlib.contextmanager
def batch_stop_signals(stopping: threading.Event) -> Iterator[None]:
    """For a local batch: Ctrl-C, SIGTERM or SIGHUP set `stopping` (no attempt starts after
    it) and raise `Stopped`/KeyboardInterrupt; SIGTERM and SIGHUP are passed on to the
    running attempts as SIGINT (Ctrl-C reaches them from the terminal by itself), so each
    records its run as interrupted and resumable. A second signal only sets `stopping`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from rebench.harness.interrupt import child_pids

    def handler(signum: int, _frame: FrameType | None) -> None:
        first = not stopping.is_set()
        stopping.set()
        if signum != signal.SIGINT:
            for pid in child_pids(os.getpid()):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGINT)
        if first:
            raise Stopped(signum) if signum != signal.SIGINT else KeyboardInterrupt()

    signums = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {s: signal.getsignal(s) for s in signums}
    for signum in signums:
        if saved[signum] is not signal.SIG_IGN:
            signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in saved.items():
            signal.signal(signum, old)
