"""What of the agent still runs: the processes in a run's sandbox, listed by the harness just
before an official score (recorded on the score event as `live_processes`)."""

from __future__ import annotations

from rebench.sandbox import Isolation, Sandbox

# Lists "pid cmdline" of every process in the sandbox's pid namespace except the sandbox's
# own (pid 1: bwrap, pid 2: its command server), this shell and its children.
LIST_SCRIPT = (
    'for p in /proc/[0-9]*; do n=${p#/proc/}; [ "$n" -le 2 ] && continue; '
    '[ "$n" = "$$" ] && continue; read -r _ _ _ pp _ < "$p/stat" 2>/dev/null || continue; '
    '[ "$pp" = "$$" ] && continue; c=$(tr "\\0" " " < "$p/cmdline" 2>/dev/null); '
    '[ -n "$c" ] && echo "$n $c"; done'
)
MAX_LISTED = 50
MAX_CMDLINE_CHARS = 200
LIST_TIMEOUT_S = 5.0


def live_processes(sandbox: Sandbox) -> list[str] | None:
    """"pid cmdline" of the agent's processes alive now, or None where that cannot be seen
    (local isolation shares the host's process table; a lost sandbox lists nothing)."""
    if sandbox.isolation is not Isolation.BWRAP:
        return None
    result = sandbox.exec(LIST_SCRIPT, timeout=LIST_TIMEOUT_S)
    if result.returncode != 0 or result.timed_out:
        return None
    lines = [line.strip()[:MAX_CMDLINE_CHARS] for line in result.stdout.splitlines()
             if line.strip()]
    return lines[:MAX_LISTED]
