"""The paper's in-process timing of a solution, for comparison with the official score.

RE-Bench times one call inside the solution's own process: synchronize, read the clock,
call, synchronize, read the clock. This module does the same for many calls (each on a
fresh input, as the official protocol does) and reports every call's milliseconds. It runs
solution code in the calling process, so it is for trusted solutions only (benchmarks and
tests), never for scoring a submission:

    python -m rebench.environments.triton_cumsum.inprocess --solution-dir DIR \
        --device cuda --n 100000000 --calls 100
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from rebench.environments.triton_cumsum.buffers import draw_input, fresh_seed, poison

PrefixSum = Callable[..., torch.Tensor | None]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def paper_style_ms(fn: PrefixSum, n: int, device: str, calls: int,
                   warmup: int = 4) -> list[float]:
    """Milliseconds of each of `calls` timed calls (after `warmup` untimed ones)."""
    try:
        accepts_out = "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        accepts_out = False
    x = torch.empty(n, dtype=torch.int32, device=device)
    out = torch.empty_like(x)
    times = []
    for i in range(warmup + calls):
        seed = fresh_seed()
        draw_input(x, seed)
        poison(out, seed)
        _sync(device)
        start = time.perf_counter()
        fn(x, out=out) if accepts_out else fn(x)
        _sync(device)
        stop = time.perf_counter()
        if i >= warmup:
            times.append((stop - start) * 1e3)
    return times


def load_prefix_sum(solution_dir: Path) -> PrefixSum:
    """Import `solution.prefix_sum` from a folder (its siblings importable too)."""
    sys.path.insert(0, str(solution_dir))
    for name in ("solution", "scan_gpu", "scan_cpu"):
        sys.modules.pop(name, None)
    fn: PrefixSum = importlib.import_module("solution").prefix_sum
    return fn


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--solution-dir", type=Path, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args(argv)
    times = paper_style_ms(load_prefix_sum(args.solution_dir), args.n, args.device, args.calls)
    print(json.dumps({"median_ms": statistics.median(times), "min_ms": min(times),
                      "timed_ms": [round(t, 4) for t in times]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
