"""Watching the trusted scorer process: its memory, its deadline and what the machine was
doing meanwhile.

The scorer is trusted code, but some of what it does is driven by the submission (a graph
to evaluate, weights to load, an answer to train), so it runs under limits of its own:
its resident memory is bounded by the profile (the same bound as untrusted code: trusted
work the submission drives may not spend more than the submission itself could), and its
wall-clock deadline stretches with the machine's load, so a busy machine is not taken for
a slow submission. Going past either is the harness's failure (ScoringHarnessError
subclasses), never the agent's NaN: the trusted side should have bounded the work before
spending it, and the caller retries or records an infrastructure error.

What the machine was doing is recorded beside every score (`ScorerUsage`): the load
average before and after, the scorer's CPU seconds (its own and its waited-for
children's), its peak memory, and what competed with it for the CPU while it ran
(harness/contention.py: other work's runnable threads, the hypervisor's steal); a score
taken under contention says so.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass

from rebench.core.errors import ScoringHarnessError
from rebench.core.hardware import load_stretch, usable_cores
from rebench.harness.contention import Contention, ContentionWatch
from rebench.sandbox.local import kill_group

_POLL_S = 0.25


class TrustedTimeoutError(ScoringHarnessError):
    """The trusted scorer ran past its (load-stretched) deadline."""


class TrustedMemoryError(ScoringHarnessError):
    """The trusted scorer's own memory passed its bound."""


@dataclass(frozen=True)
class ScorerUsage:
    """What one scoring cost and what the machine was doing meanwhile."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    load_before: float
    load_after: float
    cores: int
    deadline_s: float
    contention: Contention

    @property
    def contended(self) -> bool:
        """Whether other work competed for the cores while the scorer ran: other work's
        threads crowding the CPUs, or the hypervisor taking their time
        (harness/contention.py). Where /proc could not be sampled, the load average above
        the cores at either end: a poorer sign, which trails by a minute and counts this
        scoring's own threads and the scorings before it."""
        if self.contention.samples:
            return self.contention.found
        return max(self.load_before, self.load_after) > self.cores

    def to_details(self) -> dict[str, object]:
        return {"scoring_wall_s": round(self.wall_s, 3), "scorer_cpu_s": round(self.cpu_s, 3),
                "scorer_peak_rss_mb": round(self.peak_rss_mb, 1),
                "load_before": round(self.load_before, 2),
                "load_after": round(self.load_after, 2), "cores": self.cores,
                "scorer_deadline_s": round(self.deadline_s, 1),
                **self.contention.to_details(), "contended": self.contended}


def _rss_mb(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of `pid` in MB, from /proc (0 when gone)."""
    now = peak = 0.0
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    now = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return now, peak


def watch_scorer(proc: subprocess.Popen[bytes], *, timeout_s: float,
                 memory_mb: float) -> ScorerUsage:
    """Wait for the scorer process, stopping its whole session when it passes its memory
    bound (TrustedMemoryError) or its deadline (TrustedTimeoutError); the deadline is
    `timeout_s` stretched by the load seen while it runs. Returns its usage."""
    cores = usable_cores()
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    deadline_s = timeout_s * load_stretch(cores)
    peak = 0.0
    watch = ContentionWatch(proc.pid)
    while True:
        try:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere: nothing more to learn
            cpu = 0.0
            break
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            # its own CPU and that of the children it waited for (untrusted ones included)
            cpu = rusage.ru_utime + rusage.ru_stime
            break
        now_mb, hwm = _rss_mb(proc.pid)
        peak = max(peak, hwm, now_mb)
        watch.sample()
        elapsed = time.monotonic() - start
        deadline_s = max(deadline_s, timeout_s * load_stretch(cores))
        if now_mb > memory_mb:
            kill_group(proc.pid)
            proc.wait()
            raise TrustedMemoryError(
                f"the trusted scorer used {now_mb:.0f} MB, above its bound of "
                f"{memory_mb:.0f} MB (the profile's memory); a trusted step spent memory "
                "the submission drove without bounding it first")
        if elapsed > deadline_s:
            kill_group(proc.pid)
            proc.wait()
            raise TrustedTimeoutError(
                f"the trusted scorer ran past its deadline of {deadline_s:.0f} s (the "
                f"profile's {timeout_s:.0f} s stretched by the load, {os.getloadavg()[0]:.1f} "
                f"on {cores} cores); not the submission's fault")
        time.sleep(_POLL_S)
    return ScorerUsage(wall_s=time.monotonic() - start, cpu_s=cpu, peak_rss_mb=peak,
                       load_before=load_before, load_after=os.getloadavg()[0], cores=cores,
                       deadline_s=deadline_s, contention=watch.result())
