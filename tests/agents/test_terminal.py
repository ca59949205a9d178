"""The participant's terminal: warnings, window sizes passed on, restored at the end."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import termios
import threading
import time

from rebench.agents.terminal import (
    LEAVE_ALTERNATE,
    RESET_MODES,
    RelayHooks,
    ScreenState,
    Warner,
    relay,
    restore_bytes,
    set_window_size,
    warning_text,
)


def test_warner_says_each_mark_once_and_not_those_already_passed() -> None:
    left = [4000.0]
    warner = Warner(lambda: left[0])
    assert warner.due() is None
    left[0] = 3599
    assert warner.due() == 3600
    assert warner.due() is None
    left[0] = 250  # 15 min and 5 min crossed between two looks: the nearer one is said
    assert warner.due() == 300
    left[0] = 59
    assert warner.due() == 60
    late = Warner(lambda: 100.0)  # opened with 100 s left: only the 1-minute mark is ahead
    assert late.due() is None
    assert "1 min of working time left" in warning_text(60)
    assert "1 hour" in warning_text(3600) and "Scoring counts" in warning_text(60)


def test_screen_state_tracks_the_alternate_screen_across_reads() -> None:
    screen = ScreenState()
    screen.feed(b"plain")
    assert restore_bytes(screen) == RESET_MODES
    screen.feed(b"vim starts \x1b[?10")
    screen.feed(b"49h\x1b[?1000h drawing")  # the sequence split between two reads
    assert screen.alternate
    restored = restore_bytes(screen)
    assert restored.startswith(LEAVE_ALTERNATE)
    for mode in (b"\x1b[?1000l", b"\x1b[?1006l", b"\x1b[?25h", b"\x1b[0m", b"\x1b[?1l",
                 b"\x1b>"):
        assert mode in restored
    screen.feed(b"\x1b[?1049l back")
    assert not screen.alternate


def read_until(fd: int, needle: bytes, timeout: float = 20) -> bytes:
    data = b""
    end = time.monotonic() + timeout
    while needle not in data and time.monotonic() < end:
        if select.select([fd], [], [], 0.1)[0]:
            data += os.read(fd, 4096)
    return data


def test_relay_passes_window_size_changes_on() -> None:
    user_master, user_slave = os.openpty()  # the participant's terminal
    master, slave = os.openpty()  # the shell's
    proc = subprocess.Popen(
        # The shell prints its terminal's size whenever it changes: polled, so the test
        # does not depend on when bash runs a WINCH trap (it can miss one while a child
        # is being forked); the kernel's SIGWINCH on the size change is not what is tested.
        ["bash", "-c", 'echo ready; p=; while :; do s=$(stty size); '
                       '[ "$s" != "$p" ] && echo "$s" && p=$s; sleep 0.05; done'],
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    hooks = RelayHooks()
    thread = threading.Thread(target=relay, args=(master, user_slave, user_slave,
                                                  lambda: proc.poll() is None, hooks,
                                                  ScreenState()), daemon=True)
    thread.start()
    try:
        assert b"ready" in read_until(user_master, b"ready")
        set_window_size(user_slave, struct.pack("HHHH", 24, 80, 0, 0))
        assert b"24 80" in read_until(user_master, b"24 80")
        set_window_size(user_slave, struct.pack("HHHH", 50, 132, 0, 0))
        assert b"50 132" in read_until(user_master, b"50 132")
    finally:
        hooks.stop.set()
        thread.join(5)
        proc.kill()
        proc.wait()
        for fd in (master, user_master, user_slave):
            os.close(fd)
