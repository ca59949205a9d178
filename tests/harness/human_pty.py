"""A participant at a pseudo-terminal, for the human agent's tests."""

from __future__ import annotations

import contextlib
import os
import re
import struct
import threading
import time

from rebench.agents.terminal import set_window_size


class Terminal:
    """The participant's side of a pty: the agent gets `slave`, the test types and reads."""

    def __init__(self, rows: int = 30, cols: int = 100) -> None:
        self.master, self.slave = os.openpty()
        self.resize(rows, cols)
        self._buf = b""
        self._pos = 0
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._buf += chunk

    def resize(self, rows: int, cols: int) -> None:
        set_window_size(self.slave, struct.pack("HHHH", rows, cols, 0, 0))

    def type(self, text: str | bytes) -> None:
        os.write(self.master, text.encode() if isinstance(text, str) else text)

    def expect(self, pattern: str, timeout: float = 30) -> str:
        """Wait for `pattern` (a regex) in the output after the last match; the text up to
        and including it."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                text = self._buf[self._pos:].decode(errors="replace")
                match = re.search(pattern, text)
                if match:
                    self._pos += len(text[:match.end()].encode(errors="replace"))
                    return text[:match.end()]
            time.sleep(0.05)
        with self._lock:
            tail = self._buf[self._pos:][-3000:].decode(errors="replace")
        raise AssertionError(f"{pattern!r} not seen in {timeout} s; output:\n{tail}")

    @property
    def output(self) -> bytes:
        with self._lock:
            return self._buf

    def close(self) -> None:
        for fd in (self.slave, self.master):
            with contextlib.suppress(OSError):
                os.close(fd)
