"""Calibrate triton_cumsum on the machine at hand (written for the H200; `--profile cpu`
measures the cpu profile's anchors the same way, without the kernel-only timings).

Scores the starting, reference and expert solutions with `official_score` (local isolation),
the reference many times for the SD of raw, a few cheats (each must be NaN or no better than
the start), and times each solution's kernels alone with triton.testing.do_bench next to
the memory floor (a device-to-device copy of the same bytes). Prints a table and writes
JSON to $OUT (or the current directory).

    PYTHONPATH=src python benchmarks/triton_cumsum_h200.py [--reference-runs 10]
    python benchmarks/triton_cumsum_h200.py --profile cpu --isolation bwrap
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHEATS = ROOT / "tests" / "environments" / "triton_cumsum" / "cheats"
GPU_CHEATS = ("patched_timers.py", "early_done_thread.py", "stack_walk.py",
              "lying_tensor.py", "cached_outputs.py")


def _score(spec: Any, profile: Any, workspace: Path, runs: int,
           isolation: Any) -> list[dict[str, Any]]:
    from rebench.harness.scoring import official_score, snapshot_solution

    results = []
    for i in range(runs):
        snap = workspace.parent / f"snap-{workspace.name}-{i}"
        snapshot_solution(spec, workspace, snap)
        began = time.monotonic()
        result = official_score(spec, profile, snap, isolation)
        entry = result.to_json()
        entry["wall_s"] = round(time.monotonic() - began, 3)
        results.append(entry)
        print(f"  {workspace.name} #{i + 1}: raw={entry['raw']} wall={entry['wall_s']} s "
              f"msg={json.dumps(entry['message'])[:300]}", flush=True)
    return results


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    raws = [r["raw"] for r in results if r["raw"] is not None]
    walls = [r["wall_s"] for r in results]
    return {
        "valid": len(raws), "runs": len(results),
        "raw_median": statistics.median(raws) if raws else None,
        "ms_median": math.exp(statistics.median(raws)) if raws else None,
        "raw_sd": statistics.stdev(raws) if len(raws) > 1 else None,
        "raws": raws, "wall_s_median": statistics.median(walls),
        "wall_s_max": max(walls),
        "messages": [r["message"] for r in results][:3],
        "details": [r["details"] for r in results],
    }


def _kernel_times(n: int) -> dict[str, float]:
    """Milliseconds of each solution's prefix_sum alone (no protocol), and the floor."""
    import torch
    import triton.testing

    env_dir = ROOT / "src" / "rebench" / "environments" / "triton_cumsum"
    x = torch.randint(-10, 10, (n,), dtype=torch.int32, device="cuda")
    out = torch.empty_like(x)
    times = {
        "copy_400MB": triton.testing.do_bench(lambda: out.copy_(x), return_mode="median"),
        "torch_cumsum": triton.testing.do_bench(lambda: torch.cumsum(x, 0),
                                                return_mode="median"),
    }
    for name in ("starting", "reference", "expert"):
        sys.path.insert(0, str(env_dir / name))
        for mod in ("solution", "scan_gpu", "scan_cpu"):
            sys.modules.pop(mod, None)
        solution = importlib.import_module("solution")
        fn = solution.prefix_sum
        call = (lambda f=fn: f(x)) if name == "starting" else (lambda f=fn: f(x, out=out))
        times[name] = triton.testing.do_bench(call, return_mode="median")
        sys.path.pop(0)
    return times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference-runs", type=int, default=10)
    parser.add_argument("--other-runs", type=int, default=3)
    parser.add_argument("--profile", choices=("cpu", "gpu"), default="gpu")
    parser.add_argument("--isolation", choices=("local", "bwrap"), default="local")
    parser.add_argument("--no-cheats", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("REBENCH_CACHE", tempfile.mkdtemp(prefix="rebench-cache-"))
    os.environ["REBENCH_PROFILE"] = args.profile
    from rebench.core.discovery import load_spec
    from rebench.core.hardware import fingerprint
    from rebench.harness.prepare import prepare_environment
    from rebench.harness.workspace import materialize_solution
    from rebench.sandbox import Isolation

    spec = load_spec("triton_cumsum")
    profile = spec.profile(args.profile)
    isolation = Isolation(args.isolation)
    prepare_environment(spec, profile)
    work = Path(tempfile.mkdtemp(prefix="tc-bench-"))
    report: dict[str, Any] = {"hardware": fingerprint(profile.gpus),
                              "date": time.strftime("%Y-%m-%d"), "isolation": args.isolation,
                              "n": profile.params["n"], "spec_version": spec.version}
    runs = {"starting": args.other_runs, "reference": args.reference_runs,
            "expert": args.other_runs}
    for name, count in runs.items():
        ws = materialize_solution(spec, profile, name, work / name, Isolation.LOCAL)
        report[name] = _summary(_score(spec, profile, ws, count, isolation))
    cheats = {}
    for cheat in () if args.no_cheats else GPU_CHEATS:
        ws = work / f"cheat-{cheat[:-3]}"
        ws.mkdir()
        (ws / "solution.py").write_text((CHEATS / cheat).read_text())
        cheats[cheat] = _score(spec, profile, ws, 1, isolation)[0]
    report["cheats"] = {k: {"raw": v["raw"], "message": v["message"]} for k, v in cheats.items()}
    if profile.gpus:
        report["kernel_ms"] = _kernel_times(int(profile.params["n"]))
    out_dir = Path(os.environ.get("OUT", "."))
    name = "triton_cumsum_h200.json" if profile.gpus else "triton_cumsum_cpu.json"
    (out_dir / name).write_text(json.dumps(report, indent=2))
    _print_table(report)
    return 0


def _print_table(report: dict[str, Any]) -> None:
    print(f"\n{report['hardware']}  n={report['n']}  {report['date']}")
    for name in ("starting", "reference", "expert"):
        s = report[name]
        print(f"{name:10s} raw={s['raw_median']} ms={s['ms_median']} sd={s['raw_sd']} "
              f"valid={s['valid']}/{s['runs']} wall={s['wall_s_median']}/{s['wall_s_max']} s")
    for cheat, r in report["cheats"].items():
        print(f"cheat {cheat:24s} raw={r['raw']} {json.dumps(r['message'])[:160]}")
    if "kernel_ms" in report:
        kernel = {k: round(v, 4) for k, v in report["kernel_ms"].items()}
        print("kernel-only ms:", json.dumps(kernel))


if __name__ == "__main__":
    sys.exit(main())
