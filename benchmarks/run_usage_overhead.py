"""What the run-usage accounting (issue 32) costs a run, against a 5-minute run's wall time.

    python benchmarks/run_usage_overhead.py [--reps 200] [--entries 200] [--ab 15]

The accounting adds, per run: the sandbox's group in the cpuacct hierarchy (cgroup v1; v2
counts CPU in every group anyway), one read of the group's CPU counter per session, one
pass over the score log summing the scorers' CPU and wall seconds (the log is read at the
end of a run in any case), and one `usage` event. This times each of those, then the
kernel's accounting itself: the same workloads run in a group with and without cpuacct,
in alternating pairs, timed in CPU-seconds (user + system) of the workload's processes.
Prints a Markdown table (milliseconds), the share of 300 s, and the workloads' median paired
slowdown with cpuacct (a compute loop; ping-pong, the worst case: all switches). Needs
root (it creates cgroups).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rebench.harness.clock import WorkingClock
from rebench.harness.events import EventLog
from rebench.harness.records import RunUsage, ScoreEntry
from rebench.harness.score_log import append_entry, last_hash, read_log
from rebench.sandbox import limits
from rebench.sandbox.limits import Limits, ProcessGroup

RUN_S = 300.0  # the 5-minute run
SESSIONS = 1  # a run's sessions (one unless it was resumed)

# A child that joins the group, then ping-pongs `n` bytes with a forked child over pipes.
PINGPONG = """
import os, resource, sys
for f in sys.argv[2:]:
    open(f, "w").write(str(os.getpid()))
n = int(sys.argv[1])
os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})  # both on one core: 2 switches a trip
a_r, a_w = os.pipe(); b_r, b_w = os.pipe()
if os.fork() == 0:
    for _ in range(n):
        os.read(a_r, 1); os.write(b_w, b"x")
    os._exit(0)
for _ in range(n):
    os.write(a_w, b"x"); os.read(b_r, 1)
os.wait()
me, child = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(me.ru_utime + me.ru_stime + child.ru_utime + child.ru_stime)
"""
# A child that joins the group, then computes alone (no context switches to account).
BUSY = """
import os, sys, time
for f in sys.argv[2:]:
    open(f, "w").write(str(os.getpid()))
n = int(sys.argv[1])
start = time.process_time()
total = 0
for i in range(n):
    total += i * i
print(time.process_time() - start)
"""


def ms(fn: Callable[[], object], reps: int) -> float:
    """The median of `reps` timings of fn, in milliseconds."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def group(controllers: tuple[str, ...]) -> ProcessGroup:
    """A group made as the sandbox makes it, with v1 `controllers`."""
    saved = limits._V1_CONTROLLERS
    limits._V1_CONTROLLERS = controllers
    try:
        return ProcessGroup.create(Limits(memory_bytes=2 << 30, pids=512))
    finally:
        limits._V1_CONTROLLERS = saved


def score_log(folder: Path, n: int) -> Path:
    log = folder / "score_log.jsonl"
    for i in range(n):
        append_entry(log, ScoreEntry(
            index=i, wall_time="2026-12-03T00:00:00+00:00", wall_s=float(i), working_s=float(i),
            raw=1.0, normalized=0.5, valid=True, kind="agent", message={},
            details={"scorer_cpu_s": 1.25, "scoring_wall_s": 2.5, "contended": False},
            snapshot=f"protected/snapshots/{i:04d}", prev_hash=last_hash(log)))
    return log


def timed_child(g: ProcessGroup, code: str, n: int) -> float:
    """CPU-seconds the child reports (its loop's, or with its forked partner, the whole
    ping-pong's: user and system time, so other load on the machine counts less than in
    wall time), measured inside the group."""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(n),
                           *g.procs_files()], check=True, capture_output=True, text=True)
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--entries", type=int, default=200, help="scores in the log")
    parser.add_argument("--ab", type=int, default=15, help="workload runs per arm")
    parser.add_argument("--pings", type=int, default=50000, help="ping-pong round trips")
    parser.add_argument("--loops", type=int, default=2_000_000, help="cpu loop iterations")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (it creates cgroups)")
    with_acct = limits._V1_CONTROLLERS
    without = tuple(c for c in with_acct if c != "cpuacct")
    rows: list[tuple[str, float, str]] = []

    def create_remove(controllers: tuple[str, ...]) -> None:
        group(controllers).remove()

    made = group(with_acct)
    if "v2" not in made.dirs and "cpuacct" not in made.dirs:
        sys.exit(f"no cgroup with CPU accounting here ({sorted(made.dirs)})")
    per_run: list[float] = []
    v1_acct = "cpuacct" in made.dirs
    if v1_acct:  # v1: the cpuacct group is the accounting's own
        a = ms(lambda: create_remove(with_acct), args.reps)
        b = ms(lambda: create_remove(without), args.reps)
        rows += [("group create + remove, with cpuacct", a, "per session"),
                 ("group create + remove, without cpuacct", b, "per session")]
        per_run.append(max(0.0, a - b) * SESSIONS)
    read = ms(made.cpu_seconds, args.reps * 5)
    rows.append(("read the group's CPU counter (cpu_seconds)", read, "per session"))
    per_run.append(read * SESSIONS)
    made.remove()

    with tempfile.TemporaryDirectory() as tmp:
        log = score_log(Path(tmp), args.entries)
        entries = read_log(log)
        usage = RunUsage(12.5)
        sums = ms(lambda: usage.with_scores(entries), args.reps)
        rows.append((f"sum the score log ({args.entries} scores; already read)", sums,
                     "per run"))
        events = EventLog(Path(tmp) / "events.jsonl", WorkingClock(RUN_S))
        emit = ms(lambda: events.emit("usage", **usage.with_scores(entries).to_json()),
                  args.reps)
        rows.append(("emit the usage event", emit, "per run"))
        per_run += [sums, emit]

    # the kernel's accounting: the same workloads with and without a cpuacct group
    ratios: dict[str, list[float]] = {}
    if v1_acct:
        for workload, code, n in (("ping-pong", PINGPONG, args.pings),
                                  ("cpu loop", BUSY, args.loops)):
            ratios[workload] = []
            for i in range(args.ab):  # pairs, alternating which arm goes first
                times = {}
                for name, controllers in ((("with", with_acct), ("without", without))
                                          if i % 2 == 0 else
                                          (("without", without), ("with", with_acct))):
                    g = group(controllers)
                    times[name] = timed_child(g, code, n)
                    g.remove()
                ratios[workload].append(times["with"] / times["without"] - 1)
    total_ms = sum(per_run)
    print(f"# run usage accounting overhead, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}, "
          f"load {os.getloadavg()[0]:.2f}\n")
    print("| step | median ms | how often |\n| --- | ---: | --- |")
    for name, value, often in rows:
        print(f"| {name} | {value:.3f} | {often} |")
    print(f"\nadded per run ({SESSIONS} session): {total_ms:.3f} ms = "
          f"{total_ms / 1000 / RUN_S:.2e} of a {RUN_S:.0f} s run")
    for workload, diffs in ratios.items():
        q = statistics.quantiles(diffs, n=4)
        lo, hi = median_ci(diffs)
        print(f"\n{workload}, {len(diffs)} pairs (with / without cpuacct - 1): median "
              f"{statistics.median(diffs):+.2%} (95% bootstrap interval {lo:+.2%} .. "
              f"{hi:+.2%}), quartiles {q[0]:+.2%} .. {q[2]:+.2%}")


def median_ci(values: list[float], n_boot: int = 2000) -> tuple[float, float]:
    """A percentile bootstrap 95% interval of the median (seeded)."""
    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(values, k=len(values)))
                     for _ in range(n_boot))
    return medians[int(0.025 * n_boot)], medians[int(0.975 * n_boot) - 1]

if __name__ == "__main__":
    main()
