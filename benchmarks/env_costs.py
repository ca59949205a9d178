"""What each environment costs a new user on this machine: prepare (from an empty cache), the
starting solution's build and one official scoring, the reference build and one official
scoring; wall seconds and the load average, as a Markdown table for the README (issue 30,
item 10). Run it on an idle machine; it takes as long as the slowest prepare (tens of
minutes on 2 cores).

    .venv/bin/python benchmarks/env_costs.py --profile cpu [ENV ...] > /tmp/costs.md

A fresh cache folder is used unless --cache names one (then prepare is measured only where
that cache lacks the environment)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def measure(env_id: str, profile_name: str) -> str:
    """One Markdown row: prepare, start build, start scoring, reference build, scoring."""
    from rebench.core.discovery import load_spec
    from rebench.harness.evaluate import score_folder
    from rebench.harness.prepare import prepare_environment
    from rebench.harness.workspace import materialize_solution
    from rebench.sandbox import Isolation
    from rebench.sandbox.bwrap import bwrap_available

    iso = Isolation.BWRAP if bwrap_available() else Isolation.LOCAL
    spec = load_spec(env_id)
    profile = spec.profile(profile_name)
    load = os.getloadavg()[0]
    start = time.monotonic()
    prepare_environment(spec, profile)
    prep_s = time.monotonic() - start
    _said(env_id, "prepare", prep_s)
    cells = [f"{prep_s:.0f}"]
    for name in ("starting", "reference"):
        with tempfile.TemporaryDirectory(prefix=f"rebench-cost-{name}-") as tmp:
            start = time.monotonic()
            # rebuild: a build is measured even where the cache keeps one (harness/built.py)
            ws = materialize_solution(spec, profile, name, Path(tmp) / "ws", iso, True)
            build_s = time.monotonic() - start
            _said(env_id, f"{name} build", build_s)
            start = time.monotonic()
            result = score_folder(spec, profile, ws, iso)
            score_s = time.monotonic() - start
            _said(env_id, f"{name} scoring (raw {result.raw})", score_s)
        valid = "" if result.valid else " (invalid)"
        cells += [f"{build_s:.0f}", f"{score_s:.0f}{valid}"]
    load = max(load, os.getloadavg()[0])
    return f"| {env_id} | " + " | ".join(cells) + f" | {load:.1f} |"


def _said(env_id: str, step: str, seconds: float) -> None:
    """A step's time as soon as it is known (a run cut short keeps what it measured)."""
    print(f"{env_id}: {step} {seconds:.1f} s (load {os.getloadavg()[0]:.1f})",
          file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("envs", nargs="*", help="environment ids (default: all)")
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--cache", type=Path, default=None,
                        help="cache folder (default: a fresh one, so prepare is measured)")
    args = parser.parse_args()
    fresh = None if args.cache else tempfile.TemporaryDirectory(prefix="rebench-cost-cache-")
    os.environ["REBENCH_CACHE"] = str(args.cache or Path(fresh.name))  # type: ignore[union-attr]
    from rebench.core.discovery import environment_ids

    print(f"{args.profile} profile, {len(os.sched_getaffinity(0))} cores, seconds (wall); "
          "a build includes copying the workspace")
    print("| environment | prepare | start build | start scoring | reference build | "
          "reference scoring | max load |")
    print("|---|---|---|---|---|---|---|")
    for env_id in args.envs or environment_ids():
        try:
            print(measure(env_id, args.profile), flush=True)
        except Exception as exc:  # one environment's failure must not hide the others
            print(f"| {env_id} | failed: {type(exc).__name__}: {exc} |", flush=True)
            print(f"{env_id}: {exc!r}", file=sys.stderr)
    if fresh is not None:
        fresh.cleanup()


if __name__ == "__main__":
    main()
