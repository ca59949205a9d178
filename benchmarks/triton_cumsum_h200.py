"""Side by side: the paper-style in-process time and the official time of the starting,
reference and expert solutions of triton_cumsum, `--runs` scorings each (gpu by default;
`--profile cpu` for the cpu profile). Every round scores the solution officially
(`official_score`, bwrap isolation by default) and then times it in-process in a fresh
process (`inprocess.py`: synchronize, clock, call, synchronize, clock; as many timed calls
on fresh inputs as the official protocol makes). Prints the table last and writes JSON to
$OUT (or the current directory).

    PYTHONPATH=$PWD/src python benchmarks/triton_cumsum_h200.py [--runs 10] [--hog]
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parent.parent
ENV_DIR = ROOT / "src" / "rebench" / "environments" / "triton_cumsum"
HOG = ("import torch\na = torch.randn(8192, 8192, device='cuda')\n"
       "while True:\n    a = (a @ a).clamp_(-1, 1)\n")


def _official(spec: Any, profile: Any, workspace: Path, isolation: Any,
              tag: str) -> dict[str, Any]:
    from rebench.harness.scoring import official_score, snapshot_solution

    snap = workspace.parent / f"snap-{tag}"
    snapshot_solution(spec, workspace, snap)
    began = time.monotonic()
    result = official_score(spec, profile, snap, isolation).to_json()
    result["wall_s"] = round(time.monotonic() - began, 2)
    return result


def _params(profile: Any) -> Any:
    return profile.typed


def _in_process(solution_dir: Path, profile: Any) -> dict[str, Any]:
    params = _params(profile)
    done = subprocess.run(
        [sys.executable, "-m", "rebench.environments.triton_cumsum.inprocess",
         "--solution-dir", str(solution_dir), "--device", params.device,
         "--n", str(params.n), "--calls", str(params.timed_calls)],
        capture_output=True, text=True, env={**os.environ, "REBENCH_PROFILE": profile.name},
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    record: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return record


def _batch_summary(official: list[dict[str, Any]]) -> dict[str, float | None]:
    """Medians over every timed batch of every scoring: the first call, the others, and
    the clock's last read (the scorer's gather)."""
    first, others, gathers = [], [], []
    for result in official:
        for calls in result["details"].get("batch_call_ms") or []:
            first.append(calls[0])
            others.append(statistics.median(calls[1:]))
        gathers += result["details"].get("gather_ms") or []
    med = (lambda xs: round(statistics.median(xs), 4) if xs else None)  # noqa: E731
    return {"first_call_ms": med(first), "other_calls_ms": med(others),
            "gather_ms": med(gathers)}


def _sd(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def _solution(spec: Any, profile: Any, name: str, runs: int, isolation: Any,
              work: Path) -> dict[str, Any]:
    from rebench.harness.workspace import materialize_solution
    from rebench.sandbox import Isolation

    workspace = materialize_solution(spec, profile, name, work / name, Isolation.LOCAL)
    statistic = min if _params(profile).statistic == "min" else statistics.median
    official, inproc = [], []
    for i in range(runs):
        result = _official(spec, profile, workspace, isolation, f"{name}-{i}")
        timing = _in_process(workspace, profile)
        timing["stat_ms"] = statistic(timing["timed_ms"])
        official.append(result)
        inproc.append(timing)
        print(f"  {name} #{i + 1}: official {result['message']} wall {result['wall_s']} s; "
              f"in-process {timing['stat_ms']:.4f} ms", flush=True)
    raws = [r["raw"] for r in official if r["raw"] is not None]
    ins = [t["stat_ms"] for t in inproc]
    return {
        "runs": runs, "valid": len(raws),
        "official_ms": math.exp(statistics.median(raws)) if raws else None,
        "official_raw_sd": _sd(raws), "official_raws": raws,
        "in_process_ms": statistics.median(ins),
        "in_process_raw_sd": _sd([math.log(t) for t in ins]), "in_process_ms_all": ins,
        "wall_s": [r["wall_s"] for r in official],
        "prep_ms_max": [r["details"].get("prep_ms_max") for r in official],
        "prep_waited_ms_max": [r["details"].get("prep_waited_ms_max") for r in official],
        "load": [r["details"].get("load_after") for r in official],
        "official_timed_ms_first_run": official[0]["details"].get("timed_ms"),
        "first_batch_call_ms": official[0]["details"].get("first_batch_call_ms"),
        "first_batch_trace_ms": official[0]["details"].get("first_batch_trace_ms"),
        **_batch_summary(official),
        "in_process_timed_ms_first_run": inproc[0]["timed_ms"],
        "errors": [r["message"] for r in official if r["raw"] is None][:3],
    }


def _hog_probe(spec: Any, profile: Any, isolation: Any, work: Path) -> dict[str, Any]:
    """The reference scored while another process keeps the GPU busy."""
    from rebench.harness.workspace import materialize_solution
    from rebench.sandbox import Isolation

    workspace = materialize_solution(spec, profile, "reference", work / "hog",
                                     Isolation.LOCAL)
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    try:
        time.sleep(3)
        result = _official(spec, profile, workspace, isolation, "hog")
    finally:
        hog.kill()
        hog.wait()
    return {"raw": result["raw"], "message": result["message"],
            "prep": {k: result["details"].get(k)
                     for k in ("prep_ms_max", "prep_waited_ms_max", "prep_limit_ms")}}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--profile", choices=("cpu", "gpu"), default="gpu")
    parser.add_argument("--isolation", choices=("local", "bwrap"), default="bwrap")
    parser.add_argument("--solutions", default="starting,reference,expert")
    parser.add_argument("--hog", action="store_true", help="also score with a GPU hog")
    args = parser.parse_args()
    os.environ.setdefault("REBENCH_CACHE", tempfile.mkdtemp(prefix="rebench-cache-"))
    from rebench.core.discovery import load_spec
    from rebench.core.hardware import fingerprint
    from rebench.harness.prepare import prepare_environment
    from rebench.sandbox import Isolation

    spec = load_spec("triton_cumsum")
    profile = spec.profile(args.profile)
    isolation = Isolation(args.isolation)
    prepare_environment(spec, profile)
    work = Path(tempfile.mkdtemp(prefix="tc-bench-"))
    report: dict[str, Any] = {
        "hardware": fingerprint(profile.gpus), "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                     time.gmtime()),
        "isolation": args.isolation, "profile": args.profile, "n": _params(profile).n,
        "timed_calls": _params(profile).timed_calls, "spec_version": spec.version,
        "load_start": os.getloadavg()[0], "solutions": {},
    }
    for name in args.solutions.split(","):
        report["solutions"][name] = _solution(spec, profile, name, args.runs, isolation, work)
    if args.hog:
        report["hog"] = _hog_probe(spec, profile, isolation, work)
    report["load_end"] = os.getloadavg()[0]
    out_dir = Path(os.environ.get("OUT", "."))
    (out_dir / f"triton_cumsum_{args.profile}.json").write_text(json.dumps(report, indent=1))
    _print_table(report)
    return 0


def _fmt(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _print_table(report: dict[str, Any]) -> None:
    print(f"\n{report['hardware']}  profile={report['profile']}  n={report['n']}  "
          f"timed calls={report['timed_calls']}  {report['date']}  "
          f"isolation={report['isolation']}  load {report['load_start']:.2f}"
          f"->{report['load_end']:.2f}")
    print("| solution | in-process ms | official ms | official - in-process | "
          "SD raw (official) | SD ln (in-process) | valid | first call / others / gather ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, s in report["solutions"].items():
        diff = None if s["official_ms"] is None else s["official_ms"] - s["in_process_ms"]
        print(f"| {name} | {_fmt(s['in_process_ms'])} | {_fmt(s['official_ms'])} | "
              f"{_fmt(diff)} | {_fmt(s['official_raw_sd'])} | {_fmt(s['in_process_raw_sd'])} "
              f"| {s['valid']}/{s['runs']} | {s.get('first_call_ms')} / "
              f"{s.get('other_calls_ms')} / {s.get('gather_ms')} |")
    if "hog" in report:
        print("hog:", json.dumps(report["hog"])[:300])


if __name__ == "__main__":
    sys.exit(main())
