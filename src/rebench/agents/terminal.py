"""The participant's terminal: relaying it to the shell's pseudo-terminal, passing window
size changes on, warning before the deadline, and putting it back in order at the end.

Window sizes are polled (every POLL_S) rather than taken from SIGWINCH: the relay runs in
the agent's thread, where Python cannot install signal handlers, and an attached terminal
(`rebench attach`) belongs to another process whose signals the harness never gets.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import termios
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

POLL_S = 0.1
_EOT = b"\x04"
# Working seconds left at which the participant is warned.
WARN_MARKS_S: tuple[float, ...] = (3600.0, 900.0, 300.0, 60.0)

# Everything a full-screen program (vim, less, htop) may have switched on, switched off,
# so that what is printed after the shell is gone lands on a usable terminal.
RESET_MODES = (
    b"\x1b[?1l\x1b>"  # normal cursor keys, numeric keypad
    b"\x1b[?9l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l"  # mouse
    b"\x1b[?1004l"  # focus events
    b"\x1b[?2004l"  # bracketed paste
    b"\x1b(B\x1b[0m"  # ASCII character set, plain attributes
    b"\x1b[?7h"  # line wrapping
    b"\x1b[?25h"  # cursor shown
)
# Leaving the alternate screen (sent only when a program entered it: leaving restores the
# cursor, which on a plain screen could move it). The scrolling region is reset first,
# while still on the alternate screen, since resetting it homes the cursor.
LEAVE_ALTERNATE = b"\x1b[r\x1b[?1049l"
_ALT_ON = (b"\x1b[?1049h", b"\x1b[?1047h", b"\x1b[?47h")
_ALT_OFF = (b"\x1b[?1049l", b"\x1b[?1047l", b"\x1b[?47l")


def _left(mark_s: float) -> str:
    if mark_s >= 3600:
        return f"{int(mark_s // 3600)} hour"
    return f"{int(mark_s // 60)} min" if mark_s >= 60 else f"{int(mark_s)} s"


def warning_text(mark_s: float) -> str:
    """The warning as lines of the shell's output (on the plain screen)."""
    return (f"\r\n\a\x1b[1m--- rebench: {_left(mark_s)} of working time left. Scoring counts "
            "against it; at 0 the shell is stopped and the final score runs. ---\x1b[0m\r\n")


def status_line(mark_s: float, size: bytes | None) -> str:
    """The warning over a full-screen program (vim, less): a bell and one line in reverse
    video on the bottom row, the cursor saved and put back, so nothing scrolls and the
    program's screen is intact but for that row (its next redraw repaints it)."""
    rows, cols = struct.unpack("HHHH", size)[:2] if size and len(size) == 8 else (0, 0)
    rows, cols = rows or 24, cols or 80  # a terminal that gives no size
    text = f" rebench: {_left(mark_s)} of working time left; at 0 the shell is stopped "
    text = text[:cols]
    return f"\a\x1b7\x1b[{rows};1H\x1b[2K\x1b[7m{text}\x1b[0m\x1b8"


@dataclass
class Warner:
    """Says once when the time left drops below each mark (marks already passed when the
    terminal opened stay quiet: the banner said the time)."""

    time_left: Callable[[], float]
    marks: Sequence[float] = WARN_MARKS_S
    _done: set[float] = field(default_factory=set)

    def __post_init__(self) -> None:
        left = self.time_left()
        self._done = {m for m in self.marks if left <= m}

    def due(self) -> float | None:
        """The mark just crossed (the smallest, if several), or None."""
        left = self.time_left()
        crossed = [m for m in self.marks if left <= m and m not in self._done]
        self._done.update(crossed)
        return min(crossed) if crossed else None


class ScreenState:
    """Whether the output so far left the terminal on the alternate screen."""

    def __init__(self) -> None:
        self.alternate = False
        self._tail = b""

    def feed(self, data: bytes) -> None:
        window = self._tail + data
        on = max(window.rfind(s) for s in _ALT_ON)
        off = max(window.rfind(s) for s in _ALT_OFF)
        if on >= 0 or off >= 0:
            self.alternate = on > off
        self._tail = window[-8:]  # a sequence cut between two reads is still seen


def restore_bytes(state: ScreenState) -> bytes:
    """What puts the terminal back in order after the shell (and its vim) is gone."""
    return (LEAVE_ALTERNATE if state.alternate else b"") + RESET_MODES


def window_size(fd: int) -> bytes | None:
    with contextlib.suppress(OSError):
        size: bytes = fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8)
        return size
    return None


def set_window_size(fd: int, size: bytes) -> None:
    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, size)


@dataclass
class RelayHooks:
    """What the relay checks on every turn: when to stop, and warnings to show. `say`
    writes a warning where the shell's recording sees it (returns False where it cannot:
    the relay then writes to the participant's terminal itself); `warned` is told of each
    warning (the run's event log)."""

    stop: threading.Event = field(default_factory=threading.Event)
    warner: Warner | None = None
    say: Callable[[bytes], bool] = lambda _data: False
    warned: Callable[[float, bool], None] = lambda _mark, _full_screen: None


def relay(master: int, in_fd: int, out_fd: int, alive: Callable[[], bool],
          hooks: RelayHooks, screen: ScreenState) -> None:
    """Copy the participant's input to the shell's terminal and its output back until the
    shell is gone or `hooks.stop` is set; pass window size changes on; show warnings."""
    watched = [master, in_fd]
    size = window_size(out_fd) or window_size(in_fd)
    pending: list[float] = []  # warnings shown over a full-screen program, said again after

    def show(data: bytes) -> None:
        if not hooks.say(data):
            _write_all(out_fd, data)

    while not hooks.stop.is_set():
        ready, _, _ = select.select(watched, [], [], POLL_S)
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the shell and everything on its terminal are gone
                data = b""
            if not data:
                return
            screen.feed(data)
            _write_all(out_fd, data)
            if pending and not screen.alternate:  # back at the prompt: the full text
                show(warning_text(pending.pop()).encode())
                pending.clear()
        if in_fd in ready:
            try:
                data = os.read(in_fd, 65536)
            except OSError:  # the participant's terminal went away
                data = b""
            if data:
                _write_all(master, data)
            else:  # end of input (a script, not a person): end the shell's input too
                watched.remove(in_fd)
                os.write(master, _EOT)
        new_size = window_size(out_fd) or window_size(in_fd)
        if new_size is not None and new_size != size:
            size = new_size
            set_window_size(master, new_size)  # the kernel sends SIGWINCH inside
        mark = hooks.warner.due() if hooks.warner else None
        if mark is not None:
            hooks.warned(mark, screen.alternate)
            if screen.alternate:
                show(status_line(mark, size).encode())
                pending.append(mark)
            else:
                show(warning_text(mark).encode())
        if not alive() and master not in select.select([master], [], [], 0)[0]:
            return


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], POLL_S)
            continue
        view = view[n:]
