"""Trust-boundary costs and attack strength: snapshot time of a 1 MB solution (target
<= 0.5 s), freeze/thaw of a sandbox, and the symlink-swap race against a naive resolve-then-open
implementation (how fast the attack wins) and against safefs (it never does).

    python benchmarks/trust_boundary.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "harness_core"))

from race_attack import SECRET, Arena, Flipper

from rebench.sandbox import Isolation, SandboxConfig, make_sandbox
from rebench.sandbox.safefs import CopyLimits, copy_tree_beneath, read_beneath


def naive_read(root: Path, rel: str) -> bytes:
    """The old way: resolve once, check, then open by path (a TOCTOU window)."""
    resolved = (root / rel).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise PermissionError(rel)
    return resolved.read_bytes()


def race(read: object, seconds: float) -> tuple[int, int, float | None]:
    """(tries, wins, seconds to the first win) of the swap attack on `read`."""
    with tempfile.TemporaryDirectory() as tmp:
        arena = Arena.make(Path(tmp))
        tries = wins = 0
        first = None
        start = time.monotonic()
        with Flipper(arena):
            while time.monotonic() - start < seconds:
                tries += 1
                try:
                    if read(arena.workspace, "d/f.txt") == SECRET:  # type: ignore[operator]
                        wins += 1
                        first = first if first is not None else time.monotonic() - start
                except OSError:
                    pass
        return tries, wins, first


def snapshot_time(repeats: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        (ws / "pkg").mkdir(parents=True)
        for i in range(16):  # 16 files of 64 KiB = 1 MiB
            (ws / "pkg" / f"m{i}.py").write_bytes(os.urandom(64 * 1024))
        times = []
        for i in range(repeats):
            start = time.perf_counter()
            copy_tree_beneath(ws, Path(tmp) / f"snap{i}", ("**/*.py",),
                              CopyLimits(max_bytes=64 * 2**20))
            times.append(time.perf_counter() - start)
        return times


def freeze_time(repeats: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        box = make_sandbox(Isolation.BWRAP, SandboxConfig(workdir=Path(tmp) / "ws"))
        box.create()
        box.exec("sleep 1000 & sleep 1000 &", 10)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            box.freeze()
            box.thaw()
            times.append(time.perf_counter() - start)
        box.destroy()
        return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    snaps = snapshot_time(20)
    print(f"snapshot of a 1 MiB solution (16 files): median {statistics.median(snaps)*1e3:.1f} ms,"
          f" max {max(snaps)*1e3:.1f} ms")
    freezes = freeze_time(20)
    print(f"freeze + thaw of a sandbox with 2 background jobs: median "
          f"{statistics.median(freezes)*1e3:.1f} ms, max {max(freezes)*1e3:.1f} ms")
    for name, fn in (("naive resolve-then-open", naive_read), ("safefs.read_beneath",
                                                               read_beneath)):
        tries, wins, first = race(fn, args.seconds)
        when = f"first after {first:.3f} s" if first is not None else "never"
        print(f"swap race vs {name}: {tries} reads in {args.seconds:.0f} s, {wins} returned "
              f"the protected file ({when})")
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
