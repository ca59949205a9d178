"""Agent runs for the integrity tests: replay files run through the real harness (run
directory, sandbox, events, snapshots, hash-chained score log), scored by a stand-in scorer
unless a test asks for the real one.

Environments whose prepare is cheap, or whose own tests prepare them in the same session,
are prepared for real; the others get stand-in assets (their public files replaced by a
few named files of random bytes), which is all the integrity rules read of them.
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
from rebench.core.paths import PREPARED_MARKER, env_cache_dir
from rebench.core.score import ScoreResult
from rebench.core.spec import EnvironmentSpec, Profile
from rebench.harness.driver import execute_run
from rebench.harness.run import create_run
from rebench.harness.workspace import apply_starting_recipe
from rebench.integrity.extension import environment_rules
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring.declarations import cheats_folder, cheats_of

ENVIRONMENTS = Path(__file__).resolve().parents[1] / "environments"
# Environments prepared for real in these tests, in the session's shared cache: their
# prepare takes seconds (small_scaling_law's experiment service needs its real protected
# data), or, for nanogpt_chat_rl (about 3 minutes: its judge service needs the real world
# and fluency LM, its honest replays sample and fine-tune the real base model), the
# session's own tests/environments/nanogpt_chat_rl prepared it already (`chat_assets`, the
# same cpu assets in the same cache, collected before these tests): shared, not paid twice.
PREPARED_FOR_REAL = frozenset({"triton_cumsum", "rust_codecontests_inference",
                               "small_scaling_law", "nanogpt_chat_rl"})
# Stand-in public and protected files (random bytes) for environments not prepared here
# (minutes of training each).
STAND_IN_FILES: Mapping[str, tuple[str, ...]] = {
    "fix_embedding": ("public/large_model.pth", "public/small_correct_model.pth",
                      "public/config.json", "protected/test.bin", "protected/reference.pth"),
    "restricted_mlm": ("public/data/train.bin", "public/data/val.bin", "public/config.json",
                       "public/model.pt", "public/tokenizer.json", "protected/test.bin",
                       "protected/secret.bin", "protected/eval.json"),
    "optimize_llm_foundry": ("public/base_model/model.safetensors",
                             "public/base_model/config.json", "public/tokenizer.json",
                             "public/train_data.jsonl", "protected/heldout_data.jsonl",
                             "protected/reference_model.safetensors", "protected/secret.bin"),
}


def _stand_in_texts(env_id: str) -> dict[str, str]:
    """Public text files whose content the rules read (as the starting files' baseline, or
    to compare with), made as prepare makes them."""
    if env_id == "restricted_mlm":
        from rebench.environments.restricted_mlm import export_child, graph_check

        return {f"public/{Path(m.__file__).name}": Path(m.__file__).read_text()
                for m in (export_child, graph_check) if m.__file__}
    if env_id == "optimize_llm_foundry":
        import yaml

        from rebench.assets import gpt
        from rebench.environments.optimize_llm_foundry.prepare import finetune_yaml

        params = load_spec(env_id).profile("cpu").typed
        return {"public/finetune.yaml": yaml.safe_dump(finetune_yaml(params), sort_keys=False),
                "public/foundry/model.py": Path(str(gpt.__file__)).read_text()}
    return {}


Action = dict[str, Any]
RAW_LINE = re.compile(r"# raw=(-?[0-9]+(?:\.[0-9]+)?)")


def isolation() -> Isolation:
    return Isolation.BWRAP if bwrap_available() else Isolation.LOCAL


# Set by tests/integrity/conftest.py: the session's shared cache, while the integrity tests
# use a cache of their own (so that stand-in assets never reach another test).
SHARED_CACHE_VAR = "REBENCH_TEST_SHARED_CACHE"


def ensure_assets(env_id: str) -> Path:
    """The cpu assets of `env_id`: prepared for real (in the session's shared cache, linked
    into this one) for PREPARED_FOR_REAL, else stand-ins."""
    spec = load_spec(env_id)
    profile = spec.profile("cpu")
    assets = env_cache_dir(spec.id, profile.name)
    if (assets / PREPARED_MARKER).is_file():
        return assets
    if env_id in PREPARED_FOR_REAL:
        from rebench.harness.prepare import prepare_environment

        shared = os.environ.get(SHARED_CACHE_VAR)
        if not shared:
            return prepare_environment(spec, profile)
        real = Path(shared) / spec.id / profile.name
        own = os.environ["REBENCH_CACHE"]
        os.environ["REBENCH_CACHE"] = shared  # prepared once a session, for every test
        try:
            prepare_environment(spec, profile)
        finally:
            os.environ["REBENCH_CACHE"] = own
        assets.parent.mkdir(parents=True, exist_ok=True)
        assets.symlink_to(real, target_is_directory=True)
        return assets
    for folder in ("public", "protected"):
        (assets / folder).mkdir(parents=True, exist_ok=True)
    for rel in STAND_IN_FILES.get(env_id, ()):
        (assets / rel).parent.mkdir(parents=True, exist_ok=True)
        (assets / rel).write_bytes(_STAND_IN_WEIGHTS[env_id, rel]() if (env_id, rel) in
                                   _STAND_IN_WEIGHTS else os.urandom(4096))
    for rel, text in _stand_in_texts(env_id).items():
        (assets / rel).parent.mkdir(parents=True, exist_ok=True)
        (assets / rel).write_text(text)
    (assets / PREPARED_MARKER).write_text(json.dumps({"stand_in": True}))
    return assets


def _tiny_corrupted_model() -> bytes:
    """A stand-in fix_embedding large_model.pth that loads as weights (the start copies it
    to fixed_model.pth, and the rules that compare a submission with the start read it)."""
    import io

    import torch

    generator = torch.Generator().manual_seed(0)
    # rows with a structure (two strong directions), as a trained embedding has
    wte = (2 * torch.randn(64, 2, generator=generator) @ torch.randn(2, 16, generator=generator)
           + 0.1 * torch.randn(64, 16, generator=generator))
    state = {"transformer.wte.weight": wte,
             "transformer.h.0.mlp.c_fc.weight": torch.randn(32, 16, generator=generator),
             "transformer.ln_f.weight": torch.ones(16), "transformer.ln_f.bias": torch.zeros(16)}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


_STAND_IN_WEIGHTS = {("fix_embedding", "public/large_model.pth"): _tiny_corrupted_model}


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


# Environments whose starting solution is built by training, at the creation of every run
# (nanogpt_chat_rl's improve.py: a judged best-of-2 on 1000 prompts and 150 fine-tuning
# steps, 45 s on the idle 2-core VM, 80 s and more under load). In CI their runs start
# from the starting files without that build: it runs in a sandbox of its own, outside the
# run's record, and its output is the t=0 snapshot, which no rule reads as the agent's
# (and which the stand-in scorer scores NaN anyway). Real scoring builds it once per
# measurement (benchmarks/integrity_measure.py).
TRAINED_STARTING_BUILD = frozenset({"nanogpt_chat_rl"})


def stand_in_starting_build(spec: EnvironmentSpec, profile: Profile, workspace: Path,
                            isolation: Isolation) -> None:
    """The harness's starting build, except for TRAINED_STARTING_BUILD (none there)."""
    if spec.id not in TRAINED_STARTING_BUILD:
        apply_starting_recipe(spec, profile, workspace, isolation)


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


# Environments whose cheat suites and solutions the integrity rules are measured on.
MEASURED_ENVIRONMENTS = ("fix_embedding", "nanogpt_chat_rl", "optimize_llm_foundry",
                         "restricted_mlm", "rust_codecontests_inference", "small_scaling_law",
                         "triton_cumsum")
# The file a cheat replaces, where it is not solution.py (as each environment's own cheat
# test submits it).
CHEAT_TARGETS: Mapping[str, str] = {"restricted_mlm": "model.py",
                                    "optimize_llm_foundry": "finetune.sh"}


def cheat_files() -> list[tuple[str, Path]]:
    """(environment, file) of every cheat file (Python or shell) of the measured
    environments: the cheats an environment declares in its folder (degenerate.py,
    CHEATS; files of its cheats/ folder), and those of the cheats/ folders of the
    environments' test folders (test modules that keep their cheats inline are not cheat
    files). A cheat declared as code (`make`) is no file: benchmarks/integrity_measure.py
    makes and measures those itself (kind "made", or "broken" for MADE_BROKEN)."""
    declared = [(env_id, cheats_folder(env_id) / cheat.file)
                for env_id in MEASURED_ENVIRONMENTS for cheat in cheats_of(env_id)
                if cheat.make is None]
    in_tests = [(path.parent.parent.name, path)
                for path in sorted([*ENVIRONMENTS.glob("*/cheats/*.py"),
                                    *ENVIRONMENTS.glob("*/cheats/*.sh")])
                if not path.name.startswith(("test_", "_"))
                and path.parent.parent.name in MEASURED_ENVIRONMENTS]
    return sorted(declared + in_tests, key=lambda pair: (pair[0], pair[1].name))


def solution_target(env_id: str, cheat: Path) -> str:
    """Where a cheat file goes in the workspace: over the file its environment's cheat
    test replaces, else over the starting solution.py, else under its own name."""
    declared = {c.file: c.submit_as for c in cheats_of(env_id) if c.make is None}
    if cheat.name in declared:
        return declared[cheat.name]
    if env_id in CHEAT_TARGETS:
        return CHEAT_TARGETS[env_id]
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


def environment_rule_ids(env_id: str) -> set[str]:
    """Every rule id an environment's integrity rules can raise (none without an
    integrity.py): those its modules' Flag(...) calls name (integrity.py and the modules
    it draws rules from, such as nanogpt_chat_rl's sampled_rules.py) and its patterns."""
    rules = environment_rules(env_id)
    folder = environment_dir(env_id)
    if not (folder / "integrity.py").is_file():
        return set()
    source = "".join(p.read_text() for p in sorted(folder.glob("*.py")))
    ids = set(re.findall(r'(?:Flag\(|_flag\(unit,)\s*"([a-z-]+)"', source))
    return ids | {r.id for r in rules.patterns}
