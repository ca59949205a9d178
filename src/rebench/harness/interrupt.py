"""A run whose harness is stopped by the operator (Ctrl-C, an Inspect eval cancelled).

Such a run is recorded as `interrupted`, not finished: it has no final score, the report leaves
it out of score@k, and `rebench resume RUN` continues it with the time it has left. The
harness also ends the processes it started (the trusted scorer runs in its own session, so
the terminal's Ctrl-C does not reach it), so no scorer outlives the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from rebench.harness.records import Outcome, RunRecord, RunStatus

PROC = Path("/proc")


def mark_interrupted(record: RunRecord, working_s: float, reason: str) -> bool:
    """Set an unfinished record's status to INTERRUPTED (in memory; the caller saves it).
    Returns False, changing nothing, when the run is already finished."""
    if record.status is RunStatus.FINISHED:
        return False
    record.status = RunStatus.INTERRUPTED
    record.outcome = Outcome.ABORTED
    record.working_s_used = round(max(record.working_s_used, working_s), 3)
    record.note = reason
    return True


def _stat_fields(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of `pid` from /proc, or None if it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    rest = text[text.rfind(")") + 2:].split()
    return int(rest[1]), int(rest[2])


def child_pids(parent: int) -> list[int]:
    """Direct children of `parent` (Linux /proc; empty where there is none)."""
    out = []
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] == parent:
                out.append(int(entry.name))
    return out


def end_child_processes(parent: int | None = None) -> list[int]:
    """SIGKILL every direct child of `parent` (default: this process), with its whole process
    group where it leads one (the scorer and the sandboxes start their own sessions).
    Returns the pids it signalled."""
    parent = os.getpid() if parent is None else parent
    own_group = os.getpgid(0)
    ended = []
    for pid in child_pids(parent):
        fields = _stat_fields(pid)
        if fields is None:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if fields[1] == pid and pid != own_group:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
            ended.append(pid)
    return ended
