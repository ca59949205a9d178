"""Concurrent prepares of one (environment, profile) build once, across processes (pytest-xdist
workers share one cache): a second process waits for the first, then reuses its assets; a
prepare killed mid-build leaves no lock behind (the next one rebuilds)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rebench.core.discovery import load_spec
from rebench.core.paths import PREPARED_MARKER
from rebench.harness.prepare import prepare_environment

FIXTURE_ENVIRONMENTS = Path(__file__).resolve().parents[1] / "fixtures" / "environments"

# One process: wait for the go file, then prepare toy_probe with its prepare step slowed
# down and logged (one line per build: pid, start, end), and print the assets' path.
PREPARER = r"""
import json, os, sys, time
from pathlib import Path
log, go, hold = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
from rebench.core.discovery import load_spec
from rebench.harness.prepare import prepare_environment
spec = load_spec("toy_probe")  # makes the fixture environment importable
import rebench.environments.toy_probe.prepare as env_prepare
real = env_prepare.prepare
def slow(ctx):
    start = time.time()
    with log.open("a") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "event": "start"}) + "\n")
    time.sleep(hold)  # a second build would start inside this window without the lock
    real(ctx)
    with log.open("a") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "event": "end", "s": time.time() - start})
                 + "\n")
env_prepare.prepare = slow
while not go.exists():
    time.sleep(0.01)
print(prepare_environment(spec, spec.profile("cpu")))
"""


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REBENCH_PREPARE"}
    return {**env, "REBENCH_CACHE": str(cache),
            "REBENCH_ENVIRONMENTS_PATH": str(FIXTURE_ENVIRONMENTS)}


def _start(tmp_path: Path, cache: Path, hold: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", PREPARER, str(tmp_path / "builds.jsonl"), str(tmp_path / "go"),
         str(hold)], env=_env(cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


def _builds(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "builds.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_two_processes_prepare_once_and_share_the_assets(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    procs = [_start(tmp_path, cache, hold=1.5) for _ in range(2)]
    time.sleep(1.0)  # both imported and polling: the go file starts them together
    (tmp_path / "go").touch()
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    paths = {out.strip().splitlines()[-1] for out, _ in outs}
    builds = _builds(tmp_path)
    assert [b["event"] for b in builds] == ["start", "end"], builds  # one build, not two
    assert paths == {str(cache.resolve() / "toy_probe" / "cpu")}
    assets = Path(paths.pop())
    recorded = json.loads((assets / PREPARED_MARKER).read_text())
    assert set(recorded["files"]) == {"protected/target.json"}


def test_a_killed_prepare_releases_the_lock(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    (tmp_path / "go").touch()
    holder = _start(tmp_path, cache, hold=600)  # builds for ten minutes unless killed
    deadline = time.monotonic() + 60
    while not _builds(tmp_path):
        assert holder.poll() is None, holder.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the first prepare never started"
        time.sleep(0.05)
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=30)
    # This process now gets the lock at once and rebuilds (the killed build wrote no marker).
    for key, value in _env(cache).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("REBENCH_PREPARE", raising=False)
    spec = load_spec("toy_probe")
    started = time.monotonic()
    assets = prepare_environment(spec, spec.profile("cpu"))
    assert time.monotonic() - started < 30
    assert (assets / PREPARED_MARKER).is_file()
    assert (assets / "protected" / "target.json").is_file()
