"""Progress of the long CLI steps (prepare, calibrate, reference builds, official scorings)
and the signals that stop them.

A user must be able to tell a long step from a hang, on a terminal and in a log alike:
`Ticker` prints one line per step (`[1m05s] building the reference solution`) and, while a
step lasts, a line with the elapsed time every `REBENCH_PROGRESS_S` seconds (default 20); on
a terminal it also keeps a spinner with the step and its elapsed time. During a run,
`EventFollower` turns the run's events into steps (t=0 score, the agent's turn, the final
score) and lines (each official score), so a scoring that trains a model is named as it
runs. `stop_signals`
turns SIGTERM (what `timeout`, a scheduler or a closed session send) into the same
KeyboardInterrupt as Ctrl-C, so `with` blocks unwind and temporary folders are removed."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
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

    def __init__(self, console: Console, what: str, interval: float | None = None,
                 watch: Callable[[Ticker], None] | None = None, spinner: bool = True) -> None:
        self.console = console
        self.what = what
        self.interval = progress_interval() if interval is None else interval
        self._watch = watch  # polled about once a second, e.g. a run's event log
        # False where another live display (a progress bar) holds the terminal
        self._spinner = spinner
        self._started = time.monotonic()
        self._step = what
        self._step_started = self._started
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._status: Any = None
        self._thread = threading.Thread(target=self._beat, name="cli-progress", daemon=True)

    def __enter__(self) -> Ticker:
        if self.console.is_terminal and self._spinner:
            self._status = self.console.status(self._status_text())
            self._status.__enter__()
        self._line(self.what)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=2)
        self._poll()  # what happened since the last beat (a run's final score)
        if self._status is not None:
            self._status.__exit__(None, None, None)

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def step(self, text: str) -> None:
        """A new step: printed now, repeated with its duration while it lasts."""
        with self._lock:
            self._step, self._step_started = text, time.monotonic()
        self._line(text)

    def quiet_step(self, text: str) -> None:
        """A new step whose start was already printed by the caller; repeated while it
        lasts like any other."""
        with self._lock:
            self._step, self._step_started = text, time.monotonic()

    def note(self, text: str) -> None:
        """A line about the current step (an event in it), which goes on."""
        self._line(text)

    def _poll(self) -> None:
        if self._watch is not None:
            try:
                self._watch(self)
            except Exception:  # progress is a courtesy: it never stops the command
                self._watch = None

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
            self._poll()
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


def batch_summary(states: dict[str, str], total: int) -> str:
    """A batch's state in one line: `batch: 2 of 6 done (1 failed), running: ID ...`."""
    done = sum(s in ("finished", "failed") for s in states.values())
    failed = sum(s == "failed" for s in states.values())
    running = [run_id for run_id, s in states.items() if s == "running"]
    return (f"batch: {done} of {total} done" + (f" ({failed} failed)" if failed else "")
            + (f", running: {' '.join(running)}" if running else ""))


def event_progress(event: dict[str, Any]) -> tuple[str, str] | None:
    """How one event of a run's log shows in its progress: ("step", text) for a new phase,
    ("note", text) for a line within one, None for events that say nothing new (commands,
    files, service calls: an agent makes hundreds)."""
    kind = event.get("type")
    score = event.get("normalized")
    message = event.get("message")
    checked = isinstance(message, dict) and message.get("valid") is True
    # No number but a valid verdict: a check where the environment hides scores.
    shown = (f"normalized {score:.3f}" if isinstance(score, (int, float)) else
             "valid (a check; no score shown)" if checked else "no valid score")
    if kind == "run_start":
        return "step", "the t=0 official score of the starting solution (sandboxed)"
    if kind == "agent_start":
        return "step", f"the agent's turn ({event.get('time_left_s', 0):.0f} s left)"
    if kind == "initial_score":
        return "note", (f"t=0 official score done: {'valid' if event.get('valid') else 'invalid'}"
                        f" ({event.get('seconds', 0):.0f} s)")
    if kind == "score":
        return "note", f"official score #{event.get('index')} asked by the agent: {shown}"
    if kind in ("agent_end", "agent_error"):
        return "step", ("the agent's turn is over"
                        + (" (it raised an error)" if kind == "agent_error" else "")
                        + "; the final official score (the workspace, scored in a sandbox)")
    if kind == "hard_stop":
        return "note", "the budget ran out: the agent's processes were stopped"
    if kind == "harness_error":
        return "note", (f"harness error in the {event.get('during')} scoring (not the "
                        "agent's): tried again")
    if kind == "final_score":
        return "note", f"final official score: {shown}"
    return None


class EventFollower:
    """Follows a run's events.jsonl from where it ends now, and shows its phases and scores
    on a Ticker: a run's long parts are official scorings (a t=0 score that trains a model,
    the final one), which the agent's Ticker alone shows as "still working"."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.is_file() else 0
        self._partial = b""

    def __call__(self, ticker: Ticker) -> None:
        import json

        if not self.path.is_file():
            return
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            try:
                shown = event_progress(json.loads(line))
            except ValueError:
                continue
            if shown is not None:
                (ticker.step if shown[0] == "step" else ticker.note)(shown[1])


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
