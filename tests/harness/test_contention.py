"""What competed with a scoring for the CPU (rebench/harness/contention.py): the rules on
made-up samples, and the watcher on real processes. Another test's work may run beside
these (two pytest-xdist workers on two cores), so the live tests assert lower bounds only:
work of their own that the watcher must see, never a quiet machine."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from rebench.harness import contention
from rebench.harness.contention import (
    Contention,
    online_cpus,
    parse_cpu_ticks,
    parse_procs_running,
    runnable_in_tree,
)
from rebench.harness.scorer_process import watch_scorer

_STAT = """cpu  4199117 9608 722776 1976472 41250 0 9594 17096 0 0
cpu0 2099558 4804 361388 988236 20625 0 4797 8548 0 0
cpu1 2099559 4804 361388 988236 20625 0 4797 8548 0 0
intr 1 2 3
ctxt 12
procs_running 3
procs_blocked 0
"""

_SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass"


def test_proc_stat_is_read() -> None:
    ticks = parse_cpu_ticks(_STAT)
    assert ticks is not None and ticks.steal == 17096
    assert ticks.total == 4199117 + 9608 + 722776 + 1976472 + 41250 + 0 + 9594 + 17096
    assert parse_procs_running(_STAT) == 3
    assert online_cpus(_STAT) == 2
    assert parse_cpu_ticks("intr 1\n") is None and parse_procs_running("") is None


@pytest.mark.parametrize(("own", "others", "steal", "found", "why"), [
    (2.0, 0.0, 0.0, False, "a scoring alone on its cores"),
    (6.0, 0.3, 0.0, False, "a scoring that oversubscribes the cores by itself"),
    (1.0, 1.0, 0.0, False, "one thread of other work beside a one-thread scoring"),
    (1.0, 1.11, 0.0, False, "the same, with the sampling's noise"),
    (2.0, 0.6, 0.0, False, "less than three quarters of a thread of other work"),
    (2.0, 1.0, 0.0, True, "one busy loop beside a two-thread scoring"),
    (1.5, 2.0, 0.0, True, "two busy loops"),
    (2.0, 0.0, 0.3, True, "the hypervisor taking 30% of the time"),
])
def test_contention_rules(own: float, others: float, steal: float, found: bool,
                          why: str) -> None:
    seen = Contention(own=own, others=others, steal_share=steal, cpus=2, samples=40)
    assert seen.found is found, why


def _spinners(count: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", _SPIN.format(s=seconds)])
            for _ in range(count)]


@pytest.fixture
def outside_work() -> Iterator[None]:
    """Two busy loops that are not the scorer's."""
    hogs = _spinners(2, 30)
    yield
    for hog in hogs:
        hog.kill()
        hog.wait()


def _scorer_with_two_busy_processes(seconds: float) -> subprocess.Popen[bytes]:
    """A stand-in scorer: it spins, and so does a child of its (the solution's process)."""
    code = (f"import subprocess, sys\nchild = subprocess.Popen([sys.executable, '-c', "
            f"{_SPIN.format(s=seconds)!r}])\n{_SPIN.format(s=seconds)}\nchild.wait()")
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True)


def test_the_scorers_tree_counts_its_descendants_threads() -> None:
    proc = _scorer_with_two_busy_processes(3)
    try:
        time.sleep(0.5)  # both are spinning by now
        seen = max(runnable_in_tree(proc.pid) for _ in range(5))
    finally:
        proc.kill()
        proc.wait()
    assert seen >= 2  # the stand-in scorer and its child, runnable whether or not on a core


def test_other_work_beside_a_scoring_is_contention(outside_work: None) -> None:
    time.sleep(0.3)
    usage = watch_scorer(_scorer_with_two_busy_processes(2.5), timeout_s=30, memory_mb=4096)
    details = usage.to_details()
    # Several samples, not a count: the watcher polls less often when each sample costs
    # more, and a busy 2-core CI machine gave 4 in 2.8 s where an idle one gives 5 or more.
    assert usage.contention.samples >= 3
    assert usage.contention.own >= 1.5, details
    assert usage.contention.others >= 1.5, details  # the two busy loops, at least
    assert usage.contended and details["contended"] is True
    assert {"runnable_own", "runnable_others", "steal_share", "online_cpus"} <= set(details)


def test_a_missing_proc_stat_leaves_the_load_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contention, "_read_stat", lambda: "")
    for load, contended in ((0.5, False), (9.0, True)):
        monkeypatch.setattr("os.getloadavg", lambda load=load: (load, load, load))
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
        usage = watch_scorer(proc, timeout_s=30, memory_mb=4096)
        assert usage.contention.samples == 0 and not usage.contention.found
        assert usage.contention.steal_share == 0.0
        assert usage.contended is contended, load


def test_a_sampled_scoring_is_judged_by_its_samples_not_the_load(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1-minute load counts the scorings before this one: a high load with no other
    work seen while the scorer ran is not contention."""
    monkeypatch.setattr("os.getloadavg", lambda: (9.0, 9.0, 9.0))
    monkeypatch.setattr(contention, "runnable_in_tree", lambda root: 5)  # all of it ours
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    usage = watch_scorer(proc, timeout_s=30, memory_mb=4096)
    assert usage.contention.samples >= 1 and usage.contention.others == 0.0
    assert not usage.contended


def test_a_costly_sample_spaces_out_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host with thousands of processes samples less often, not at a higher cost."""
    class Clock:
        now = 0.0
        cpu = 0.0

        def monotonic(self) -> float:
            return self.now

        def thread_time(self) -> float:
            self.cpu += 0.05  # each reading: a sample costs 50 ms of CPU
            return self.cpu

    clock = Clock()
    monkeypatch.setattr(contention, "time", clock)
    watch = contention.ContentionWatch(1)
    taken = []
    for step in range(40):  # 10 s of polls every 0.25 s
        clock.now = step * 0.25
        before = watch._samples
        watch.sample()
        taken.append(watch._samples > before)
    assert taken[0] and sum(taken) == 4  # every 50 x 50 ms = 2.5 s
