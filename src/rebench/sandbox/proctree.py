"""Freezing, resuming and killing an untrusted process tree from the trusted side, by
walking /proc (fast enough to sit inside a timed region, unlike a cgroup freeze).

A trusted process that makes itself a child subreaper has every orphan of its children
re-parented to it instead of init: walking its descendants in /proc then finds every
process an untrusted child started, double-forked, `setsid`-ed or not.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterable
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
# A fork bomb could in principle outrun the walk; give up (and kill) after this many rounds.
MAX_STOP_ROUNDS = 50


class TreeNotStoppedError(RuntimeError):
    """The process tree kept growing while it was being frozen."""


def set_child_subreaper() -> bool:
    """Adopt orphaned descendants (Linux prctl); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def parent_map(proc: Path = Path("/proc")) -> dict[int, int]:
    """pid -> parent pid for every process visible in /proc."""
    parents: dict[int, int] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(os.path.join(entry.path, "stat"), "rb") as fh:
                stat = fh.read()
        except OSError:  # the process ended while we looked
            continue
        # The command name may hold spaces or ')': the fields after the last ')' are fixed.
        fields = stat[stat.rfind(b")") + 2 :].split(b" ", 2)
        parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(root: int, parents: dict[int, int] | None = None) -> set[int]:
    """Every process below `root` (excluding `root` itself)."""
    parents = parent_map() if parents is None else parents
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def stop_tree(root_pid: int) -> list[int]:
    """SIGSTOP `root_pid` and all its descendants, repeating until no new ones appear
    (a stopped process cannot fork). Returns the stopped pids."""
    stopped: list[int] = []
    for _ in range(10):
        new = [p for p in sorted(descendants(root_pid) | {root_pid}) if p not in stopped]
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
    return stopped


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


class ChildTree:
    """The processes of one untrusted child: its group, and every descendant of the scorer
    that did not exist before the child was started."""

    def __init__(self, root_pid: int, baseline: set[int]) -> None:
        self.root_pid = root_pid
        self.baseline = baseline  # descendants of the scorer before the child existed
        self.known: set[int] = {root_pid}

    def members(self) -> set[int]:
        """The current tree, found by walking /proc from the scorer."""
        return (descendants(os.getpid()) - self.baseline) | {self.root_pid}

    def stop_fast(self) -> None:
        """SIGSTOP the child's process group and every process seen before: a few system
        calls, cheap enough to sit inside the timed region."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.root_pid, signal.SIGSTOP)
        _signal_all(self.known, signal.SIGSTOP)

    def stop_all(self) -> bool:
        """Freeze every member, walking /proc until no unfrozen process is left.

        Returns True if a process the fast stop had missed was found (it may have run
        during the walk, so the caller must count the walk as the solution's time).
        """
        missed = False
        for _ in range(MAX_STOP_ROUNDS):
            new = self.members() - self.known
            if not new:
                return missed
            missed = True
            _signal_all(new, signal.SIGSTOP)
            self.known |= new
        raise TreeNotStoppedError("the solution's process tree kept growing")

    def resume(self) -> None:
        """SIGCONT everything that was stopped."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.root_pid, signal.SIGCONT)
        _signal_all(self.known, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL the whole tree (frozen first, so nothing forks while it dies) and reap
        the adopted orphans."""
        with contextlib.suppress(TreeNotStoppedError):
            self.stop_fast()
            self.stop_all()
        for _ in range(3):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.root_pid, signal.SIGKILL)
            _signal_all(self.known | self.members(), signal.SIGKILL)
        self._reap_orphans()

    def _reap_orphans(self) -> None:
        parents = parent_map()
        for pid in self.known - {self.root_pid}:
            if parents.get(pid) == os.getpid():
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, 0)
