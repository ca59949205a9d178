"""Agent runs for the integrity tests: replay files run through the real harness (run
directory, sandbox, events, snapshots, hash-chained score log), scored by a stand-in scorer
unless a test asks for the real one.

Environments whose prepare is cheap are prepared for real; the others get stand-in assets
(their public files replaced by a few named files of random bytes), which is all the
integrity rules read of them.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rebench.agents.replay import ReplayAgent
from rebench.core.discovery import environment_dir, load_spec
from rebench.core.paths import env_cache_dir
from rebench.core.score import ScoreResult
from rebench.harness.driver import execute_run
from rebench.harness.run import create_run
from rebench.harness.workspace import PREPARED_MARKER
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available

ENVIRONMENTS = Path(__file__).resolve().parents[1] / "environments"
# Environments prepared for real in these tests: their prepare takes a second or two.
CHEAP_PREPARE = frozenset({"triton_cumsum", "rust_codecontests_inference"})
# Stand-in public and protected files (random bytes) for environments not prepared here.
STAND_IN_FILES: Mapping[str, tuple[str, ...]] = {
    "fix_embedding": ("public/large_model.pth", "public/small_correct_model.pth",
                      "public/config.json", "protected/test.bin", "protected/reference.pth"),
}
Action = dict[str, Any]
RAW_LINE = re.compile(r"# raw=(-?[0-9]+(?:\.[0-9]+)?)")


def isolation() -> Isolation:
    return Isolation.BWRAP if bwrap_available() else Isolation.LOCAL


def ensure_assets(env_id: str) -> Path:
    """The cpu assets of `env_id`: prepared for real when cheap, else stand-ins."""
    spec = load_spec(env_id)
    profile = spec.profile("cpu")
    assets = env_cache_dir(spec.id, profile.name)
    if (assets / PREPARED_MARKER).is_file():
        return assets
    if env_id in CHEAP_PREPARE:
        from rebench.harness.prepare import prepare_environment

        return prepare_environment(spec, profile)
    for folder in ("public", "protected"):
        (assets / folder).mkdir(parents=True, exist_ok=True)
    for rel in STAND_IN_FILES.get(env_id, ()):
        (assets / rel).write_bytes(os.urandom(4096))
    (assets / PREPARED_MARKER).write_text(json.dumps({"stand_in": True}))
    return assets


def stand_in_score(spec: object, profile: object, snapshot_dir: Path, isolation: object,
                   timeout_s: float | None = None, kind: object = None) -> ScoreResult:
    """A scorer that takes no time: raw = the number after `# raw=` in any snapshot file
    (NaN if none), so a test can script a run's scores."""
    del spec, profile, isolation, timeout_s, kind
    for path in sorted(snapshot_dir.rglob("*")):
        if path.is_file() and path.stat().st_size < 1_000_000:
            found = RAW_LINE.search(path.read_bytes().decode(errors="replace"))
            if found:
                return ScoreResult(raw=float(found.group(1)), message={})
    return ScoreResult.invalid("stand-in scorer: no `# raw=` line")


@dataclass(frozen=True)
class ReplayRun:
    """What a test needs of a finished run."""

    run_dir: Path
    env_id: str


def replay_run(env_id: str, actions: Iterable[Action], tmp: Path, budget_s: float = 300.0
               ) -> ReplayRun:
    """A finished agent run of `actions` (replay-file lines) at `env_id` (cpu profile)."""
    ensure_assets(env_id)
    tmp.mkdir(parents=True, exist_ok=True)
    replay = tmp / f"actions-{len(list(tmp.iterdir()))}.jsonl"
    replay.write_text("".join(json.dumps(a) + "\n" for a in actions))
    run = create_run(env_id, "cpu", f"replay:{replay.name}", budget_s, isolation(),
                     root=tmp / "runs")
    execute_run(run, ReplayAgent(str(replay)))
    return ReplayRun(run.run_dir, env_id)


def write(path: str, data: bytes | str) -> Action:
    raw = data.encode() if isinstance(data, str) else data
    return {"action": "write_file", "path": path, "content_b64": base64.b64encode(raw).decode()}


def run_cmd(cmd: str, timeout: float = 60.0) -> Action:
    return {"action": "exec", "cmd": cmd, "timeout": timeout}


SCORE: Action = {"action": "score"}


# Environments whose cheat suites and solutions the integrity rules are measured on. The
# environments added on 2026-11-30 (restricted_mlm, optimize_llm_foundry, small_scaling_law)
# are not yet: their cheats are refused by their scorers but no rule of the report names
# them (docs/benchmarks/integrity.md, "Not yet measured").
MEASURED_ENVIRONMENTS = ("fix_embedding", "rust_codecontests_inference", "triton_cumsum")


def cheat_files() -> list[tuple[str, Path]]:
    """(environment, file) of every file in the cheats/ folders of the measured
    environments."""
    return [(path.parent.parent.name, path)
            for path in sorted(ENVIRONMENTS.glob("*/cheats/*.py"))
            if not path.name.startswith(("test_", "_"))
            and path.parent.parent.name in MEASURED_ENVIRONMENTS]


def solution_target(env_id: str, cheat: Path) -> str:
    """Where a cheat file goes in the workspace: over the starting solution.py when the
    environment has one, else under its own name."""
    starting = environment_dir(env_id) / "starting"
    return "solution.py" if (starting / "solution.py").is_file() else cheat.name


def solution_actions(env_id: str, name: str, recipe_timeout_s: float = 60.0) -> list[Action]:
    """What a human-style agent does to submit solution `name`: write its files, run its
    build recipe (bounded), score."""
    spec = load_spec(env_id)
    recipe = spec.solutions[name]
    folder = environment_dir(env_id) / recipe.folder
    actions = [write(str(p.relative_to(folder)), p.read_bytes())
               for p in sorted(folder.rglob("*"))
               if p.is_file() and "__pycache__" not in p.parts and p.stat().st_size < 60_000]
    if recipe.run:
        actions.append(run_cmd(" ".join(recipe.run), min(recipe_timeout_s, recipe.run_timeout_s)))
    return [*actions, SCORE]


ScorerPatch = Callable[[], None]


def finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)
