"""Measure one environment's anchors end to end on one profile, the way `rebench calibrate`
does but with every step timed and the build output streamed: prepare (forced rebuild),
the starting solution built and scored officially, then the reference solution built and
scored (bwrap isolation by default, as users score). The summary JSON is rewritten after
every step, so a run stopped by a time limit still leaves what it measured.

    PYTHONPATH=src python benchmarks/gpu_anchors.py --env fix_embedding --profile gpu \
        --out summary.json

Used for docs/benchmarks/<env>-h200.md (the gpu anchors in each environment.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from rebench.core.discovery import load_spec
from rebench.core.hardware import fingerprint
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import (
    check_recipe_result,
    copy_solution_files,
    populate_workspace,
    recipe_command,
    recipe_services,
)
from rebench.sandbox import Isolation, SandboxConfig, make_sandbox
from rebench.scoring.context import profile_limits

_LOG = ".gpu_anchors_build.log"  # the recipe's output, moved out of the workspace afterwards


def _follow(path: Path, stop: threading.Event, prefix: str) -> None:
    """Print the lines appended to `path` until `stop` is set (the build's progress)."""
    offset = 0
    while True:
        done = stop.is_set()
        if path.is_file():
            with path.open("rb") as f:
                f.seek(offset)
                chunk = f.read()
            offset += len(chunk)
            for line in chunk.decode(errors="replace").splitlines():
                print(f"{prefix}{line}", flush=True)
        if done:
            return
        stop.wait(2.0)


def build(spec: EnvironmentSpec, profile: Profile, name: str, ws: Path,
          isolation: Isolation) -> Path:
    """The workspace of solution `name`, as materialize_solution builds it (recipe run in a
    sandbox under the profile's limits), with the recipe's output streamed as it runs."""
    populate_workspace(spec, profile, ws)
    recipe = copy_solution_files(spec, name, ws)
    if not recipe.run:
        return ws
    services = recipe_services(spec, profile)
    config = SandboxConfig(
        workdir=ws, writable=True, network=profile.network, gpu=profile.gpus > 0,
        env={"REBENCH_PROFILE": profile.name, "REBENCH_ENV": spec.id},
        limits=profile_limits(profile), services_dir=services.socket_dir,
    )
    sandbox = make_sandbox(isolation, config)
    stop = threading.Event()
    follower = threading.Thread(target=_follow, args=(ws / _LOG, stop, f"  [{name}] "))
    follower.start()
    try:
        sandbox.create()
        # Unbuffered, so a recipe's Python prints reach the log as they happen.
        result = sandbox.exec(f"PYTHONUNBUFFERED=1 {recipe_command(recipe)} > {_LOG} 2>&1",
                              timeout=recipe.run_timeout_s)
    finally:
        sandbox.destroy()
        services.close()
        stop.set()
        follower.join()
    (ws / _LOG).replace(ws.parent / f"{name}-build.log")
    check_recipe_result(spec, name, result)
    return ws


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", required=True)
    parser.add_argument("--profile", default="gpu")
    parser.add_argument("--isolation", choices=("bwrap", "local"), default="bwrap")
    parser.add_argument("--repeats", type=int, default=1, help="official scorings per solution")
    parser.add_argument("--solutions", default="starting,reference",
                        help="comma-separated, in order (e.g. only `reference` when the "
                        "start was measured in an earlier call)")
    parser.add_argument("--reuse-prepared", action="store_true",
                        help="use the assets an earlier call prepared in the same cache "
                        "(REBENCH_CACHE) instead of preparing again; --solutions '' only "
                        "prepares")
    parser.add_argument("--out", default="summary.json")
    args = parser.parse_args()
    spec = load_spec(args.env)
    profile = spec.profile(args.profile)
    isolation = Isolation.BWRAP if args.isolation == "bwrap" else Isolation.LOCAL
    out = Path(args.out)
    summary: dict[str, object] = {
        "env": spec.id, "version": spec.version, "profile": profile.name,
        "isolation": isolation.value, "hardware": fingerprint(profile.gpus),
        "python": sys.version.split()[0], "cpus": os.cpu_count(),
    }

    def save() -> None:
        out.write_text(json.dumps(summary, indent=2, default=str))

    t0 = time.monotonic()
    assets = prepare_environment(
        spec, profile, force=not args.reuse_prepared,
        progress=lambda m, f: print(f"[{time.monotonic() - t0:7.1f}s] {m}", flush=True),
    )
    summary["prepare_s"] = round(time.monotonic() - t0, 1)
    for name in ("prepared.json", "protected/eval.json",  # prepare's own measurements
                 "protected/anchors.json", "protected/lstar.json", "protected/trained.json"):
        if (assets / name).is_file():
            summary[name] = json.loads((assets / name).read_text())
    save()
    with tempfile.TemporaryDirectory() as tmp:
        for name in filter(None, args.solutions.split(",")):
            t1 = time.monotonic()
            ws = build(spec, profile, name, Path(tmp) / name / "ws", isolation)
            built = time.monotonic() - t1
            snap = Path(tmp) / name / "snap"
            snapshot_solution(spec, ws, snap)
            scorings = []
            for _ in range(args.repeats):
                t2 = time.monotonic()
                result = official_score(spec, profile, snap, isolation)
                scorings.append({"score_s": round(time.monotonic() - t2, 1), "raw": result.raw,
                                 "valid": result.valid, "message": result.message,
                                 "details": result.details})
                print(f"[{time.monotonic() - t0:7.1f}s] {name}: {result.to_json()}", flush=True)
            summary[name] = {"build_s": round(built, 1), "scorings": scorings}
            save()
    summary["total_s"] = round(time.monotonic() - t0, 1)
    save()
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
