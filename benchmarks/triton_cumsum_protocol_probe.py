"""Where the gpu protocol's time goes: official scorings of triton_cumsum under variants of
the protocol (profile params overridden: batch size; a probe-only scorer that does no GPU
work between batches), beside the paper-style in-process time of the same solutions, and
the cost of the clock's last read alone. Each scoring runs in a fresh process (as the
harness's scorer does), bwrap. Results: docs/benchmarks/triton_cumsum-h200.md.

    PYTHONPATH=$PWD/src python benchmarks/triton_cumsum_protocol_probe.py \
        [--variants b40,b20,noprep] [--runs 4]

Prints one table last; writes the JSON to $OUT (or the current directory).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANTS: dict[str, dict[str, Any]] = {
    "b40": {},  # the profile as shipped
    "b20": {"batch": 20, "timed_calls": 200},
    # Probe only (not a protocol): after the first batch the scorer does no GPU work of its
    # own between batches (same inputs, no poison, no hashing), to see whether the first
    # call of a batch pays for the GPU switching back from the scorer's context.
    "noprep": {"_noprep": True},
}
SAVED = ("timed_ms", "batch_call_ms", "gather_ms", "first_batch_trace_ms", "warmup_ms",
         "prep_ms_max", "prep_waited_ms_max")


def _no_prep_between_batches() -> None:
    from rebench.environments.triton_cumsum import gpu_transport

    cls = gpu_transport.CudaTransport
    real_prepare, real_fingerprints = cls.prepare, cls.fingerprints
    cache: dict[str, Any] = {}

    def prepare(self: Any) -> Any:
        if "prepared" not in cache or not hasattr(self, "flags"):  # __init__'s warm-up
            cache["prepared"] = real_prepare(self)
        return cache["prepared"]

    def fingerprints(self: Any) -> Any:
        cache.setdefault("digests", real_fingerprints(self))
        return cache["digests"]

    cls.prepare, cls.fingerprints = prepare, fingerprints  # type: ignore[method-assign]


def _one(args: argparse.Namespace) -> int:
    """Child mode: one official scoring with the variant's params; prints the result."""
    from rebench.core.discovery import load_spec
    from rebench.core.paths import env_cache_dir
    from rebench.sandbox import Isolation
    from rebench.scoring.context import ScoringContext

    spec = load_spec("triton_cumsum")
    base = spec.profile("gpu")
    overrides = json.loads(args.overrides)
    if overrides.pop("_noprep", False):
        _no_prep_between_batches()
    profile = dataclasses.replace(base, params={**base.params, **overrides})
    scoring = __import__("rebench.environments.triton_cumsum.scoring", fromlist=["score"])
    with tempfile.TemporaryDirectory(prefix="probe-scratch-") as scratch:
        ctx = ScoringContext(spec=spec, profile=profile, solution_dir=Path(args.solution),
                             assets_dir=env_cache_dir(spec.id, "gpu"),
                             scratch_dir=Path(scratch), isolation=Isolation(args.isolation))
        try:
            result = scoring.score(ctx)
        finally:
            ctx.close()
    record = result.to_json()
    record["details"] = {k: record["details"].get(k) for k in SAVED}
    print(json.dumps(record))
    return 0


def _score(solution: Path, overrides: dict[str, Any], isolation: str) -> dict[str, Any]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, __file__, "--one", "--solution", str(solution),
                           "--overrides", json.dumps(overrides), "--isolation", isolation],
                          capture_output=True, text=True, env={**os.environ,
                                                                "REBENCH_PROFILE": "gpu"})
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    result["wall_s"] = round(time.monotonic() - began, 1)
    return result


def _in_process(solution: Path, calls: int) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-m", "rebench.environments.triton_cumsum.inprocess",
         "--solution-dir", str(solution), "--device", "cuda", "--n", "100000000",
         "--calls", str(calls)],
        capture_output=True, text=True, env={**os.environ, "REBENCH_PROFILE": "gpu"})
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    times: list[float] = json.loads(done.stdout.splitlines()[-1])["timed_ms"]
    return times


def _gather_cost() -> dict[str, float]:
    """The clock's last read alone (no child): 20 outputs, each mode, median of 30."""
    import torch

    from rebench.environments.triton_cumsum.gpu_transport import CudaTransport

    report = {}
    for mode in ("copy",):  # strided copies of gpu_transport.py's lattice
        transport = CudaTransport(100_000_000, 20)
        times = []
        for _ in range(30):
            prepared = transport.prepare()
            start = time.perf_counter()
            transport.gather(prepared)
            times.append((time.perf_counter() - start) * 1e3)
        report[mode] = round(statistics.median(times), 4)
        transport.close()
        del transport
        torch.cuda.empty_cache()
    return report


def _official_summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    raws = [r["raw"] for r in results if r["raw"] is not None]
    first_calls, tails = [], []
    for r in results:
        for calls in r["details"].get("batch_call_ms", []):
            first_calls.append(calls[0])
            tails.append(statistics.median(calls[1:]))
    return {
        "valid": f"{len(raws)}/{len(results)}",
        "ms": [round(math.exp(v), 4) for v in raws],
        "median_ms": round(math.exp(statistics.median(raws)), 4) if raws else None,
        "sd_raw": round(statistics.stdev(raws), 4) if len(raws) > 1 else None,
        "first_call_ms": round(statistics.median(first_calls), 4) if first_calls else None,
        "other_calls_ms": round(statistics.median(tails), 4) if tails else None,
        "wall_s": [r["wall_s"] for r in results],
        "gather_ms": round(statistics.median(g for r in results
                                             for g in r["details"].get("gather_ms") or [0])
                           , 4),
        "errors": [r["message"] for r in results if r["raw"] is None][:2],
        "scorings": [{"ms": r["message"].get("ms"), **r["details"]} for r in results],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", action="store_true")
    parser.add_argument("--solution")
    parser.add_argument("--overrides", default="{}")
    parser.add_argument("--isolation", default="bwrap")
    parser.add_argument("--variants", default="b40,b20,noprep")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--other-runs", type=int, default=1)
    parser.add_argument("--in-process-runs", type=int, default=4)
    parser.add_argument("--solutions", default="reference,expert,starting")
    args = parser.parse_args()
    if args.one:
        return _one(args)
    os.environ.setdefault("REBENCH_CACHE", tempfile.mkdtemp(prefix="rebench-cache-"))
    from rebench.core.discovery import load_spec
    from rebench.harness.prepare import prepare_environment
    from rebench.harness.workspace import materialize_solution
    from rebench.sandbox import Isolation

    spec = load_spec("triton_cumsum")
    profile = spec.profile("gpu")
    prepare_environment(spec, profile)
    work = Path(tempfile.mkdtemp(prefix="probe-"))
    sols = {name: materialize_solution(spec, profile, name, work / name, Isolation.LOCAL)
            for name in args.solutions.split(",")}
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "gather_cost_ms": _gather_cost(), "in_process": {},
                              "official": {}}
    print("gather cost (ms, 20 outputs):", report["gather_cost_ms"], flush=True)
    for name, path in sols.items():
        count = args.in_process_runs if name == "reference" else 1
        runs = [statistics.median(_in_process(path, 100)) for _ in range(count)]
        report["in_process"][name] = [round(t, 4) for t in runs]
        print(f"in-process {name}: {runs}", flush=True)
    for variant in args.variants.split(","):
        for name, path in sols.items():
            runs = args.runs if name == "reference" else args.other_runs
            if variant != "b40" and name != "reference":
                continue
            results = [_score(path, VARIANTS[variant], args.isolation) for _ in range(runs)]
            summary = _official_summary(results)
            report["official"][f"{variant}/{name}"] = summary
            print(f"{variant}/{name}: {json.dumps(summary)}", flush=True)
    out = Path(os.environ.get("OUT", "."))
    (out / "protocol_probe.json").write_text(json.dumps(report, indent=1))
    _table(report)
    return 0


def _table(report: dict[str, Any]) -> None:
    print("\n| variant/solution | in-process ms | official median ms | diff | SD raw | "
          "first call ms | other calls ms | gather ms | valid |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, s in report["official"].items():
        name = key.split("/")[1]
        inproc = statistics.median(report["in_process"][name])
        diff = None if s["median_ms"] is None else s["median_ms"] - inproc
        print(f"| {key} | {inproc:.4f} | {s['median_ms']} | "
              f"{'-' if diff is None else f'{diff:+.4f}'} | {s['sd_raw']} | "
              f"{s['first_call_ms']} | {s['other_calls_ms']} | {s['gather_ms']} | "
              f"{s['valid']} |")


if __name__ == "__main__":
    sys.exit(main())
