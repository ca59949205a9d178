"""Median overhead of one sandboxed exec over a plain subprocess (target: <= 20 ms).

    python benchmarks/sandbox_exec_overhead.py [--runs 50]

Runs `true` through a plain `subprocess.run(["bash", "-c", "true"])`, through
LocalSandbox.exec, through BwrapSandbox.exec (the persistent sandbox; cpu and gpu configs),
through a one-off sandbox from BwrapSandbox.wrap (what scorers' children use), and times
starting a sandbox, running its first command and destroying it; interleaved so machine
noise hits all alike. Prints the medians in milliseconds as a Markdown table.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from rebench.sandbox import LocalSandbox, SandboxConfig
from rebench.sandbox.bwrap import BwrapSandbox, bwrap_available


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def _lifecycle(work: Path) -> None:
    box = BwrapSandbox(SandboxConfig(work))
    box.create()
    box.exec("true", 10)
    box.destroy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "ws"
        work.mkdir()
        cases: dict[str, Callable[[], object]] = {
            "plain subprocess": lambda: subprocess.run(["bash", "-c", "true"], check=True),
            "LocalSandbox.exec": lambda: LocalSandbox(SandboxConfig(work)).exec("true", 10),
        }
        boxes = []
        if bwrap_available():
            cpu = BwrapSandbox(SandboxConfig(work))
            gpu = BwrapSandbox(SandboxConfig(work, gpu=True))
            boxes = [cpu, gpu]
            cases["BwrapSandbox.exec"] = lambda: cpu.exec("true", 10)
            cases["BwrapSandbox.exec (gpu config)"] = lambda: gpu.exec("true", 10)
            one_off = cpu.wrap(["bash", "-c", "true"])
            cases["one-off bwrap (wrap)"] = lambda: subprocess.run(one_off, check=True)
            cases["create, first exec, destroy"] = lambda: _lifecycle(work)
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for fn in cases.values():  # warm-up
            fn()
        for _ in range(args.runs):
            for name, fn in cases.items():
                samples[name].append(timed(fn))
        for box in boxes:
            box.destroy()
    base = statistics.median(samples["plain subprocess"])
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
          f"{platform.processor() or platform.machine()}, {args.runs} runs each\n")
    print("| how | median ms | p90 ms | overhead vs plain, ms |")
    print("| --- | --- | --- | --- |")
    for name, values in samples.items():
        p90 = statistics.quantiles(values, n=10)[-1]
        med = statistics.median(values)
        print(f"| {name} | {med:.2f} | {p90:.2f} | {med - base:+.2f} |")


if __name__ == "__main__":
    main()
