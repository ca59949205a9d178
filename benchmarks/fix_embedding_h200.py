"""Measure fix_embedding end to end on one profile: prepare (timed), the starting and the
reference solution built and scored officially (local isolation), anchors and losses.

    PYTHONPATH=src python benchmarks/fix_embedding_h200.py --profile gpu --out summary.json

Used for docs/benchmarks/fix_embedding-h200.md (gpu) and the cpu anchors.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rebench.core.discovery import environment_dir, load_spec
from rebench.core.hardware import fingerprint
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution, populate_workspace
from rebench.sandbox import Isolation


def _python_on_path() -> None:
    """The reference recipe runs `python fix.py`; some machines only have `python3`."""
    shim = Path(tempfile.mkdtemp(prefix="pyshim-"))
    # A script, not a symlink: a symlinked venv interpreter would not find its pyvenv.cfg.
    (shim / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (shim / "python").chmod(0o755)
    os.environ["PATH"] = f"{shim}:{os.environ.get('PATH', '')}"


def _build(spec: EnvironmentSpec, profile: Profile, name: str, ws: Path) -> Path:
    """The solution's workspace, as materialize_solution builds it, but with the recipe's
    output streamed (the reference prints its losses phase by phase)."""
    if name == "starting":
        return materialize_solution(spec, profile, name, ws, Isolation.LOCAL)
    populate_workspace(spec, profile, ws)
    recipe = spec.solutions[name]
    for path in (environment_dir(spec.id) / recipe.folder).iterdir():
        if path.is_file():
            shutil.copyfile(path, ws / path.name)
    env = {**os.environ, "REBENCH_PROFILE": profile.name, "REBENCH_ENV": spec.id}
    subprocess.run(list(recipe.run), cwd=ws, env=env, check=True)
    return ws


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="gpu")
    parser.add_argument("--out", default="summary.json")
    args = parser.parse_args()
    _python_on_path()
    spec = load_spec("fix_embedding")
    profile = spec.profile(args.profile)
    summary: dict[str, object] = {"profile": profile.name, "hardware": fingerprint(profile.gpus),
                                  "python": sys.version.split()[0]}
    t0 = time.monotonic()
    assets = prepare_environment(
        spec, profile, force=True,
        progress=lambda m, f: print(f"[{time.monotonic() - t0:7.1f}s] {m}", flush=True),
    )
    summary["prepare_s"] = round(time.monotonic() - t0, 1)
    summary["eval"] = json.loads((assets / "protected" / "eval.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("starting", "reference"):
            t1 = time.monotonic()
            ws = _build(spec, profile, name, Path(tmp) / name)
            built = time.monotonic() - t1
            snap = Path(tmp) / f"{name}-snap"
            snapshot_solution(spec, ws, snap)
            t2 = time.monotonic()
            result = official_score(spec, profile, snap, Isolation.LOCAL)
            summary[name] = {"build_s": round(built, 1), "score_s": round(time.monotonic() - t2, 1),
                             "raw": result.raw, "message": result.message,
                             "details": result.details}
            print(f"{name}: built in {built:.1f} s, {result.to_json()}", flush=True)
    summary["total_s"] = round(time.monotonic() - t0, 1)
    Path(args.out).write_text(json.dumps(summary, indent=2, default=str))
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
