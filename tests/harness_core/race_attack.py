"""The symlink-swap attack on host-side file operations, shared by the race tests and
benchmarks/race_attacks.py.

The agent's process swaps a workspace folder with a symlink to a protected folder in a tight
loop (renameat2 RENAME_EXCHANGE: both names always exist, so any check-then-open on the host
can be raced). Host-side reads, writes and snapshots of `<workspace>/d/...` must never reach
the protected folder.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SECRET = b"held-out secret"

# Runs as a separate process (the agent): swap d <-> swap until killed.
_FLIPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = sys.argv[1].encode(), sys.argv[2].encode()
sys.stdout.write("ready\n"); sys.stdout.flush()
while True:
    libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
"""


@dataclass
class Arena:
    """A workspace with `d/` (a real folder holding f.txt) and `swap` (a link to the
    protected folder holding f.txt with the secret), plus the protected folder."""

    workspace: Path
    protected: Path

    @classmethod
    def make(cls, root: Path) -> Arena:
        workspace, protected = root / "workspace", root / "protected"
        (workspace / "d").mkdir(parents=True)
        protected.mkdir()
        (workspace / "d" / "f.txt").write_bytes(b"agent file")
        (protected / "f.txt").write_bytes(SECRET)
        (workspace / "swap").symlink_to(protected)
        return cls(workspace, protected)

    def secret_intact(self) -> bool:
        return (self.protected / "f.txt").read_bytes() == SECRET


class Flipper:
    """The swapping process; use as a context manager."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Flipper:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _FLIPPER, str(self.arena.workspace / "d"),
             str(self.arena.workspace / "swap")], stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # "ready": the loop is about to start
        time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
