"""Whether other work competed with a scoring for the CPU, measured while it ran.

The 1-minute load average says little about one scoring: it trails the machine by about a
minute and counts the scoring's own threads. On the 2-core VM (2026-12-06) two busy loops
started beside an official scoring of optimize_llm_foundry's reference left it at 1.4-1.6,
so the score said `contended: false`, while the reference ran 1.6 times slower than it
does alone. So the scorer's watcher also samples, at each poll:

- the runnable threads of the whole machine (/proc/stat's `procs_running`, less the
  watcher itself), and those of the scorer's own process tree (the sandboxed solution
  included): the rest are other work's;
- the CPU time the hypervisor took from this machine over the scoring (/proc/stat's
  `steal`): a virtual machine's busy neighbours, which no count of threads here shows.

A scoring was crowded when, on average, at least three quarters of a thread of other work
was ready to run and the scoring's threads and the others' together were more than the
CPUs (by a quarter of a thread, for the sampling's noise): a scoring that oversubscribes
the cores by itself is not called contended, and one thread of other work beside a
one-thread scoring on two cores takes nothing from it. Where the harness is
pinned to fewer cores than the machine has (taskset, a container's cpuset), other work on
the other cores is counted too, and the rule compares with every online CPU, so it errs
towards not calling a scoring contended.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from rebench.core.hardware import usable_cores

# At least this many runnable threads of other work, on average over a scoring. Alone on
# the idle 2-core VM (2026-12-06) the seven references' scorings saw 0.0-0.23 (the most for
# rust_codecontests_inference, whose scaffold starts a compiler and a test binary per
# attempt: 0.41 before the two counts around the walk); one busy loop beside a scoring is
# 1.0-1.4.
OTHERS_LIMIT = 0.75
# The scorer's and other work's threads together more than the CPUs by this much: one
# busy loop beside small_scaling_law's one-thread scoring on 2 cores made 2.11 (and
# nanogpt_chat_rl's 2.0), neither slower than alone; beside the two-thread scorings of the
# other references 2.3-2.5 (docs/benchmarks/contention.md).
CROWD_MARGIN = 0.25
# More than this share of the machine's CPU time taken by the hypervisor.
STEAL_LIMIT = 0.10

_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuTicks:
    """The machine's CPU time so far (/proc/stat's first line, in clock ticks)."""

    steal: int
    total: int


def parse_cpu_ticks(stat_text: str) -> CpuTicks | None:
    """The first `cpu` line of /proc/stat's text: user, nice, system, idle, iowait, irq,
    softirq, steal (guest time is already counted in user)."""
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            ticks = [int(v) for v in line.split()[1:9]]
            steal = ticks[7] if len(ticks) > 7 else 0
            return CpuTicks(steal=steal, total=sum(ticks))
    return None


def parse_procs_running(stat_text: str) -> int | None:
    for line in stat_text.splitlines():
        if line.startswith("procs_running "):
            return int(line.split()[1])
    return None


def online_cpus(stat_text: str) -> int:
    """The CPUs /proc/stat counts (`cpuN` lines), the cores this process may use where it
    has none."""
    count = sum(1 for line in stat_text.splitlines()
                if line.startswith("cpu") and line[3:4].isdigit())
    return count or usable_cores()


def _read_stat() -> str:
    try:
        return _STAT.read_text()
    except OSError:
        return ""


def _stat_fields(pid_path: str) -> list[str]:
    """The fields of a /proc stat file after the command name (which may hold spaces and
    parentheses): [state, ppid, ...]. Empty where the process is gone."""
    try:
        with open(pid_path) as handle:
            text = handle.read()
        return text[text.rindex(")") + 2:].split()
    except (OSError, ValueError):
        return []


def _runnable_tasks(pid: int) -> int:
    count = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tasks:
        fields = _stat_fields(f"/proc/{pid}/task/{tid}/stat")
        count += bool(fields) and fields[0] == "R"
    return count


def runnable_in_tree(root: int) -> int:
    """Threads ready to run (state R) in process `root` and all its descendants."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(f"/proc/{name}/stat")
            if len(fields) > 1:
                children.setdefault(int(fields[1]), []).append(int(name))
    count, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        stack.extend(children.get(pid, ()))
        count += _runnable_tasks(pid)
    return count


@dataclass(frozen=True)
class Contention:
    """What competed with one scoring for the CPU: means over the watcher's samples."""

    own: float  # runnable threads of the scorer's process tree
    others: float  # runnable threads of everything else (the watcher not counted)
    steal_share: float  # share of the machine's CPU time the hypervisor took (0: unknown)
    cpus: int
    samples: int

    @property
    def crowded(self) -> bool:
        return (self.others >= OTHERS_LIMIT
                and self.own + self.others > self.cpus + CROWD_MARGIN)

    @property
    def stolen(self) -> bool:
        return self.steal_share > STEAL_LIMIT

    @property
    def found(self) -> bool:
        return self.crowded or self.stolen

    def to_details(self) -> dict[str, object]:
        return {"runnable_own": round(self.own, 2), "runnable_others": round(self.others, 2),
                "steal_share": round(self.steal_share, 3), "online_cpus": self.cpus}


# A sample is skipped until this many times its CPU cost has passed since the last: the watcher
# spends at most about 2% of a core (a sample read 75 processes in 2.5 ms on the 2-core VM;
# a host with thousands of processes samples less often instead of spending more).
_COST_RATIO = 50


class ContentionWatch:
    """Samples, while a scorer runs, the runnable threads in and outside its process tree,
    and the steal over the whole watch."""

    def __init__(self, root: int) -> None:
        self.root = root
        text = _read_stat()
        self.cpus = online_cpus(text)
        self._start = parse_cpu_ticks(text)
        self._own = self._others = 0.0
        self._samples = 0
        self._next = 0.0

    def sample(self) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        cpu = time.thread_time()  # its cost in CPU time: a busy machine's waits are not
        try:
            self._sample()
        finally:
            self._next = now + _COST_RATIO * (time.thread_time() - cpu)

    def _sample(self) -> None:
        before = parse_procs_running(_read_stat())
        if before is None:
            return
        own = runnable_in_tree(self.root)
        after = parse_procs_running(_read_stat()) or before
        # The fewer of the two counts around the walk: a short-lived process of the
        # scorer's (a compiler, a test binary) counted at one instant and gone at the next
        # is not other work. The watcher reading /proc/stat is one of them.
        self._own += own
        self._others += max(0, min(before, after) - 1 - own)
        self._samples += 1

    def result(self) -> Contention:
        end = parse_cpu_ticks(_read_stat())
        steal = 0.0
        if self._start is not None and end is not None and end.total > self._start.total:
            steal = (end.steal - self._start.steal) / (end.total - self._start.total)
        n = max(1, self._samples)
        return Contention(own=self._own / n, others=self._others / n,
                          steal_share=max(0.0, steal), cpus=self.cpus,
                          samples=self._samples)
