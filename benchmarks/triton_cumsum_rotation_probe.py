"""Where the official gpu protocol's extra time per call comes from: the reference (and the
start) timed in-process, paper-style, with one buffer pair reused (fresh values each call)
against batches of fresh inputs drawn beforehand into K buffer pairs and run back to back
(synchronize after each call), as the official protocol does across processes.

    PYTHONPATH=src python benchmarks/triton_cumsum_rotation_probe.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from rebench.environments.triton_cumsum.buffers import draw_input, fresh_seed, poison
from rebench.environments.triton_cumsum.inprocess import load_prefix_sum

ENV = Path(__file__).resolve().parent.parent / "src" / "rebench" / "environments" / "triton_cumsum"
N = 100_000_000


def _batches(fn: object, slots: int, batches: int, out_arg: bool) -> list[float]:
    xs = [torch.empty(N, dtype=torch.int32, device="cuda") for _ in range(slots)]
    outs = [torch.empty_like(x) for x in xs]
    per_call = []
    for _ in range(batches + 1):
        for x, out in zip(xs, outs, strict=True):
            seed = fresh_seed()
            draw_input(x, seed)
            poison(out, seed)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for x, out in zip(xs, outs, strict=True):
            y = fn(x, out=out) if out_arg else fn(x)  # type: ignore[operator]
            if not out_arg:
                out.copy_(y)
            torch.cuda.synchronize()
        per_call.append((time.perf_counter() - start) * 1e3 / slots)
    return per_call[1:]


def main() -> int:
    os.environ["REBENCH_PROFILE"] = "gpu"
    report = {}
    for name, out_arg in (("reference", True), ("starting", False), ("expert", True)):
        fn = load_prefix_sum(ENV / name)
        sys.path.pop(0)
        for slots in (1, 2, 10):
            times = _batches(fn, slots, max(10, 100 // slots), out_arg)
            report[f"{name} slots={slots}"] = round(statistics.median(times), 4)
            print(f"{name} slots={slots}: median ms per call {statistics.median(times):.4f}",
                  flush=True)
    Path(os.environ.get("OUT", "."), "rotation_probe.json").write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
