"""What a busy machine changes: an environment's official scoring and a short run, first on
the quiet machine, then while a CPU hog (and, with --gpu-hog, a GPU hog outside the run)
keeps it busy. Writes a markdown report (docs/benchmarks/load-test.md holds results).

    python benchmarks/load_test.py --env small_scaling_law --solution reference \
        --hog 8 --out docs/benchmarks/load-test-small_scaling_law.md

--solution is a named solution (built once) or a folder used as the workspace as it is: a
reference workspace with a changed answer, say, so that small_scaling_law's final score
trains (the prepare's own trainings are read, not trained again).

Per phase: the solution's official score (valid, raw, normalized, scorer wall and CPU
seconds, load, contended), then a run whose agent applies the solution and asks for a
score at t=5 s: what the t=0 score cost the harness, how long the agent's score waited
(on a paused clock), whether `rebench verify` passes, and how the run's final score came
out (valid, or a harness error; never the agent's invalid for the harness's slowness).
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebench.agents.replay import ReplayAgent
from rebench.core.calibration import resolve_anchors
from rebench.core.discovery import load_spec
from rebench.core.errors import ScoringHarnessError
from rebench.core.hardware import fingerprint, usable_cores
from rebench.core.normalize import normalize
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.driver import execute_run
from rebench.harness.evaluate import score_folder
from rebench.harness.events import read_events
from rebench.harness.prepare import prepare_environment
from rebench.harness.resume import verify_run
from rebench.harness.run import create_run
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import default_isolation


def _spin() -> None:
    while True:
        pass


def _gpu_spin() -> None:
    import torch

    a = torch.randn(8192, 8192, device="cuda")
    while True:
        a = a @ a
        a = a / a.norm()


@contextmanager
def hogs(cpu: int, gpu: bool) -> Iterator[None]:
    """`cpu` busy-looping processes (and a GPU matmul loop) until the block ends."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_spin, daemon=True) for _ in range(cpu)]
    if gpu:
        procs.append(ctx.Process(target=_gpu_spin, daemon=True))
    for proc in procs:
        proc.start()
    try:
        time.sleep(20 if cpu else 0)  # let the 1-minute load average climb
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.join()


def score_once(spec: EnvironmentSpec, profile: Profile, workspace: Path) -> dict[str, Any]:
    anchors = resolve_anchors(spec, profile)
    try:
        result = score_folder(spec, profile, workspace, default_isolation())
    except ScoringHarnessError as exc:
        return {"harness_error": str(exc).splitlines()[0][:200]}
    details = result.details
    return {"valid": result.valid, "raw": result.raw,
            "normalized": normalize(result.raw, anchors, spec.direction),
            **{k: details.get(k) for k in ("scoring_wall_s", "scorer_cpu_s", "load_before",
                                           "load_after", "contended", "scorer_deadline_s")}}


def run_once(spec: EnvironmentSpec, profile: Profile, solution: Path, budget_s: float,
             root: Path) -> dict[str, Any]:
    """A run whose agent copies the solution in, asks for a score at t=5 s, and stops."""
    actions: list[dict[str, Any]] = []
    for path in sorted(solution.rglob("*")):
        if path.is_file() and path.stat().st_size < 32 << 20:
            actions.append({"action": "write_file", "path": str(path.relative_to(solution)),
                            "content_b64": base64.b64encode(path.read_bytes()).decode()})
    actions.append({"action": "score", "at": 5})
    root.mkdir(parents=True, exist_ok=True)
    replay = root / "actions.jsonl"
    replay.write_text("".join(json.dumps(a) + "\n" for a in actions))
    agent = ReplayAgent(str(replay))
    run = create_run(spec.id, profile.name, agent.name, budget_s, default_isolation(),
                     root=root / "runs")
    outcome: dict[str, Any] = {}
    try:
        execute_run(run, agent)
    except ScoringHarnessError as exc:
        outcome["final_harness_error"] = str(exc).splitlines()[0][:200]
    entries = run.entries()
    events = read_events(run.run_dir / "events.jsonl")
    initial = next((e for e in events if e.type == "initial_score"), None)
    asked = next((e for e in entries if e.kind == "agent"), None)
    final = next((e for e in entries if e.kind == "final"), None)
    report = verify_run(run.run_dir)
    outcome.update({
        "t0_score_s": initial.data.get("seconds") if initial else None,
        "asked_working_s": asked.working_s if asked else None,
        "asked_wait_s": asked.details.get("harness_wait_s", 0.0) if asked else None,
        "asked_valid": asked.valid if asked else None,  # False for a check-only score
        "asked_shown_valid": asked.message.get("valid") if asked else None,
        "final_valid": final.valid if final else None,
        "final_normalized": final.normalized if final else None,
        "harness_errors": sum(e.type == "harness_error" for e in events),
        "verify": "ok" if report.ok else "; ".join(report.problems)[:200],
    })
    return outcome


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True)
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--solution", default="reference",
                        help="a named solution, or a folder to use as the workspace as is")
    parser.add_argument("--hog", type=int, default=4 * usable_cores(),
                        help="busy processes (default: 4 x the cores)")
    parser.add_argument("--gpu-hog", action="store_true")
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    spec = load_spec(args.env)
    profile = spec.profile(args.profile)
    prepare_environment(spec, profile)
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rebench-load-") as tmp:
        given = Path(args.solution)
        if given.is_dir():
            workspace = Path(tmp) / "ws"
            shutil.copytree(given, workspace, symlinks=True)
        else:
            workspace = materialize_solution(spec, profile, args.solution, Path(tmp) / "ws",
                                             default_isolation())
        for phase, hog in (("quiet", 0), (f"hog {args.hog}", args.hog)):
            with hogs(hog, args.gpu_hog and hog > 0):
                began = time.monotonic()
                score = score_once(spec, profile, workspace)
                run = run_once(spec, profile, workspace, args.budget, Path(tmp) / phase)
                rows[phase] = {**score, **run, "phase_s": round(time.monotonic() - began, 1)}
                print(phase, json.dumps(rows[phase], default=str), flush=True)
    keys = sorted({k for row in rows.values() for k in row})
    lines = [f"# Load test: {args.env} ({args.profile}), solution {args.solution}", "",
             f"{datetime.now(UTC):%Y-%m-%d}, {fingerprint(profile.gpus)}, "
             f"{usable_cores()} cores; hog = {args.hog} busy processes"
             f"{' + a GPU matmul loop' if args.gpu_hog else ''}; run budget {args.budget:.0f} s",
             "", "| measure | " + " | ".join(rows) + " |",
             "| --- | " + " | ".join("---" for _ in rows) + " |"]
    lines += [f"| {k} | " + " | ".join(_fmt(row.get(k)) for row in rows.values()) + " |"
              for k in keys]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
