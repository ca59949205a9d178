"""Sweep the block size and warp count of the reference's and the expert's Triton kernels
on the GPU at hand (N = 1e8): correctness against the scorer's implementation, then
triton.testing.do_bench (median) and the paper-style in-process time (median of 50 calls).

    PYTHONPATH=src python benchmarks/triton_cumsum_kernel_sweep.py
"""

from __future__ import annotations

import importlib
import json
import os
import statistics
import sys
from pathlib import Path

import torch
import triton.testing

from rebench.environments.triton_cumsum.expected import expected_prefix_sum
from rebench.environments.triton_cumsum.inprocess import paper_style_ms

ENV = Path(__file__).resolve().parent.parent / "src" / "rebench" / "environments" / "triton_cumsum"
N = 100_000_000


def _module(name: str) -> object:
    sys.path.insert(0, str(ENV / name))
    sys.modules.pop("scan_gpu", None)
    module = importlib.import_module("scan_gpu")
    sys.path.pop(0)
    return module


def main() -> int:
    x = torch.randint(-10, 10, (N,), dtype=torch.int32, device="cuda")
    want = expected_prefix_sum(x)
    out = torch.empty_like(x)
    rows = []
    floor = triton.testing.do_bench(lambda: out.copy_(x), return_mode="median")
    print(f"copy 400 MB: {floor:.4f} ms", flush=True)
    grid = {"reference": [(4096, 8)],
            "expert": [(b, w) for b in (512, 1024, 2048, 4096) for w in (1, 2, 4, 8)]}
    if len(sys.argv) > 1 and sys.argv[1] == "--wide":
        grid = {name: [(b, w) for b in (2048, 4096, 8192, 16384) for w in (4, 8, 16)]
                for name in ("reference", "expert")}
    for name, configs in grid.items():
        module = _module(name)
        for block, warps in configs:
            module.BLOCK, module.NUM_WARPS = block, warps  # type: ignore[attr-defined]
            fn = module.prefix_sum_into  # type: ignore[attr-defined]
            try:
                out.fill_(7)
                fn(x, out)
                ok = bool(torch.equal(out, want))
                bench = triton.testing.do_bench(lambda f=fn: f(x, out), return_mode="median")
                paper = statistics.median(paper_style_ms(lambda x, out, f=fn: f(x, out), N,
                                                         "cuda", 50))
            except Exception as exc:  # a configuration that does not compile
                print(f"{name} {block} {warps}: {type(exc).__name__}: {exc}"[:200])
                continue
            rows.append({"solution": name, "block": block, "warps": warps, "ok": ok,
                         "do_bench_ms": round(bench, 4), "paper_ms": round(paper, 4)})
            print(json.dumps(rows[-1]), flush=True)
    Path(os.environ.get("OUT", "."), "kernel_sweep.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
