"""Named solutions built once and kept (harness/built.py, issue 30 finding 10): a second
materialization copies the kept build instead of running the build command, gives exactly
what a fresh build gives, and rebuilds when anything that determines the build changes;
killed or failed builds keep nothing; two concurrent builders build once."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rebench.core.discovery import load_spec
from rebench.core.errors import RunError
from rebench.core.spec import EnvironmentSpec
from rebench.harness import workspace as workspace_module
from rebench.harness.built import MANIFEST, built_dir
from rebench.harness.evaluate import calibrate
from rebench.harness.prepare import prepare_environment
from rebench.harness.run import create_run
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "built_environments" / "toy_build"


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EnvironmentSpec]:
    """toy_build copied into a folder of its own (tests change its files), with its own
    cache, prepared."""
    envs = tmp_path / "envs"
    shutil.copytree(FIXTURE, envs / "toy_build")
    monkeypatch.setenv("REBENCH_ENVIRONMENTS_PATH", str(envs))
    monkeypatch.setenv("REBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("REBENCH_PREPARE", raising=False)
    monkeypatch.delenv("REBENCH_REBUILD", raising=False)
    spec = load_spec("toy_build")
    prepare_environment(spec, spec.profile("cpu"))
    yield spec


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the solutions whose build command ran, in order."""
    ran: list[str] = []
    real = workspace_module.run_recipe

    def counted(spec: Any, profile: Any, name: str, ws: Path, iso: Isolation) -> None:
        ran.append(name)
        real(spec, profile, name, ws, iso)

    monkeypatch.setattr(workspace_module, "run_recipe", counted)
    return ran


def tree(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path of a workspace: kind, contents, mode, link target."""
    out: dict[str, tuple[Any, ...]] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            out[rel] = ("dir",)
        else:
            out[rel] = ("file", path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return out


def make(spec: EnvironmentSpec, dest: Path, isolation: Isolation,
         rebuild: bool | None = None) -> tuple[Path, list[str]]:
    lines: list[str] = []
    folder = materialize_solution(spec, spec.profile("cpu"), "reference", dest, isolation,
                                  rebuild, lines.append)
    return folder, lines


def nonce(folder: Path) -> str:
    return (folder / "out.txt").read_text().splitlines()[1]


def test_a_second_materialization_reuses_exactly_what_the_build_made(
        toy: EnvironmentSpec, builds: list[str], isolation: Isolation, tmp_path: Path) -> None:
    entry = built_dir("toy_build", "cpu", "reference")
    fresh, first = make(toy, tmp_path / "a", isolation)
    assert builds == ["reference"]
    assert len(first) == 1 and first[0].startswith(
        "building the reference solution (`python build.py`, at most 120 s; first time; "
        f"kept in {entry})"), first
    reused, second = make(toy, tmp_path / "b", isolation)
    assert builds == ["reference"], "the build command ran again"
    assert len(second) == 1 and second[0].startswith(
        f"reusing the built reference from {entry} (built 20"), second
    assert tree(reused) == tree(fresh)  # contents, modes, links, folders made and removed
    # every kind of change the build made is there
    assert not (reused / "gone.txt").exists() and not (reused / "olddir").exists()
    assert (reused / "empty_dir").is_dir() and not any((reused / "empty_dir").iterdir())
    assert os.readlink(reused / "link.txt") == "out.txt"
    assert stat.S_IMODE((reused / "tool.sh").stat().st_mode) == 0o755
    assert (reused / "keep.txt").read_text() == "start\nbuilt\n"
    # the workspace holds copies: changing it (as a submission could) leaves the entry
    (reused / "out.txt").write_text("99\n")
    (reused / "deep" / "er" / "model.bin").write_bytes(b"changed")
    again, third = make(toy, tmp_path / "c", isolation)
    assert builds == ["reference"] and third[0].startswith("reusing"), third
    assert tree(again) == tree(fresh)


def test_a_changed_solution_file_rebuilds(toy: EnvironmentSpec, builds: list[str],
                                          isolation: Isolation, tmp_path: Path) -> None:
    first, _ = make(toy, tmp_path / "a", isolation)
    script = Path(os.environ["REBENCH_ENVIRONMENTS_PATH"]) / "toy_build" / "reference" / "build.py"
    script.write_text(script.read_text() + "# changed\n")
    second, lines = make(toy, tmp_path / "b", isolation)
    assert builds == ["reference", "reference"]
    assert "environment_files changed since the one built" in lines[0], lines
    assert nonce(second) != nonce(first)
    third, lines = make(toy, tmp_path / "c", isolation)
    assert builds == ["reference", "reference"] and lines[0].startswith("reusing"), lines
    assert nonce(third) == nonce(second)


def test_a_changed_spec_version_or_prepare_rebuilds(toy: EnvironmentSpec, builds: list[str],
                                                    isolation: Isolation,
                                                    tmp_path: Path) -> None:
    make(toy, tmp_path / "a", isolation)
    bumped = dataclasses.replace(toy, version="1.0.1")
    _, lines = make(bumped, tmp_path / "b", isolation)
    assert builds == ["reference"] * 2 and "version changed" in lines[0], lines
    _, lines = make(toy, tmp_path / "c", isolation)  # one entry is kept: the newest
    assert builds == ["reference"] * 3 and "version changed" in lines[0], lines
    prepare_environment(toy, toy.profile("cpu"), force=True)  # new public data
    folder, lines = make(toy, tmp_path / "d", isolation)
    assert builds == ["reference"] * 4 and "prepared changed" in lines[0], lines
    data = (folder / "data.txt").read_text()
    assert (folder / "out.txt").read_text().endswith(data)  # built from the new assets


def test_rebuild_is_forced_by_the_flag_or_the_variable(
        toy: EnvironmentSpec, builds: list[str], isolation: Isolation, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = make(toy, tmp_path / "a", isolation)
    second, lines = make(toy, tmp_path / "b", isolation, rebuild=True)
    assert builds == ["reference"] * 2 and "rebuild asked" in lines[0], lines
    assert nonce(second) != nonce(first)
    monkeypatch.setenv("REBENCH_REBUILD", "1")
    make(toy, tmp_path / "c", isolation)
    assert builds == ["reference"] * 3
    _, lines = make(toy, tmp_path / "d", isolation, rebuild=False)  # the flag wins
    assert builds == ["reference"] * 3 and lines[0].startswith("reusing"), lines
    monkeypatch.setenv("REBENCH_REBUILD", "sometimes")
    with pytest.raises(RunError, match="REBENCH_REBUILD='sometimes'"):
        make(toy, tmp_path / "e", isolation)


def test_a_failed_build_keeps_nothing(toy: EnvironmentSpec, isolation: Isolation,
                                      tmp_path: Path) -> None:
    reference = Path(os.environ["REBENCH_ENVIRONMENTS_PATH"]) / "toy_build" / "reference"
    (reference / "fail").write_text("")
    with pytest.raises(RunError, match="failed to build"):
        make(toy, tmp_path / "a", isolation)
    entry = built_dir("toy_build", "cpu", "reference")
    assert not entry.exists()
    assert sorted(p.name for p in entry.parent.iterdir()) == [".reference.lock"]


def test_a_changed_entry_on_disk_is_rebuilt(toy: EnvironmentSpec, builds: list[str],
                                            isolation: Isolation, tmp_path: Path) -> None:
    make(toy, tmp_path / "a", isolation)
    entry = built_dir("toy_build", "cpu", "reference")
    (entry / "files" / "out.txt").write_text("1000\n")
    folder, lines = make(toy, tmp_path / "b", isolation)
    assert builds == ["reference"] * 2 and "changed on disk" in lines[0], lines
    assert (folder / "out.txt").read_text().startswith("1\n")
    (entry / MANIFEST).write_text("{not json")  # an unreadable record: built again
    _, lines = make(toy, tmp_path / "c", isolation)
    assert builds == ["reference"] * 3 and "first time" in lines[0], lines


_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from rebench.core.discovery import load_spec
    from rebench.harness.workspace import materialize_solution
    from rebench.sandbox import Isolation
    ready, other, dest = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    ready.touch()
    deadline = time.monotonic() + 60
    while not other.exists() and time.monotonic() < deadline:  # start together
        time.sleep(0.01)
    spec = load_spec("toy_build")
    folder = materialize_solution(spec, spec.profile("cpu"), "reference", dest,
                                  Isolation(sys.argv[4]),
                                  progress=lambda m: print(m, flush=True))
    print("NONCE", (folder / "out.txt").read_text().splitlines()[1], flush=True)
""")


def _child(tmp_path: Path, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _CHILD, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=tmp_path)


def test_two_concurrent_builders_build_once(toy: EnvironmentSpec, isolation: Isolation,
                                            tmp_path: Path) -> None:
    r1, r2 = tmp_path / "ready1", tmp_path / "ready2"
    procs = [_child(tmp_path, [str(r1), str(r2), str(tmp_path / "w1"), isolation.value]),
             _child(tmp_path, [str(r2), str(r1), str(tmp_path / "w2"), isolation.value])]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    texts = [out for out, _ in outputs]
    lines = [line for t in texts for line in t.splitlines()]

    def count(prefix: str) -> int:
        return sum(line.startswith(prefix) for line in lines)

    assert count("building the reference solution") == 1, texts
    assert count("reusing the built reference") == 1, texts
    assert count("waiting for another process building") == 1, texts
    nonces = {line for line in lines if line.startswith("NONCE")}
    assert len(nonces) == 1, texts
    assert tree(tmp_path / "w1") == tree(tmp_path / "w2")


def test_a_killed_build_leaves_no_entry(toy: EnvironmentSpec, isolation: Isolation,
                                        tmp_path: Path) -> None:
    reference = Path(os.environ["REBENCH_ENVIRONMENTS_PATH"]) / "toy_build" / "reference"
    (reference / "slow").write_text("5")
    (tmp_path / "go").touch()
    proc = _child(tmp_path, [str(tmp_path / "ready"), str(tmp_path / "go"),
                             str(tmp_path / "w"), isolation.value])
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("building the reference solution"), line
        time.sleep(1.0)  # inside the build command
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    entry = built_dir("toy_build", "cpu", "reference")
    assert not entry.exists()
    # a build killed while its entry was being written left a temporary folder: never used
    tmp_entry = entry.parent / ".reference.tmp-12345"
    (tmp_entry / "files").mkdir(parents=True)
    (tmp_entry / MANIFEST).write_text(json.dumps({"key": {}}))
    (reference / "slow").unlink()
    _, lines = make(toy, tmp_path / "w2", isolation)
    assert "first time" in lines[0], lines
    assert not tmp_entry.exists()  # cleaned by the next builder, under the lock
    assert entry.is_dir()


def test_calibrate_builds_the_reference_once(toy: EnvironmentSpec, builds: list[str],
                                             isolation: Isolation) -> None:
    steps: list[str] = []
    calibrate(toy, toy.profile("cpu"), 2, isolation, progress=steps.append, save=False)
    assert builds == ["starting", "reference"]
    entry = calibrate(toy, toy.profile("cpu"), 1, isolation, progress=steps.append,
                      save=False)
    assert builds == ["starting", "reference"]
    assert entry.reference_raw == 1.0 and entry.starting_raw == 0.0
    assert any(s.startswith("reusing the built reference from") for s in steps), steps
    calibrate(toy, toy.profile("cpu"), 1, isolation, progress=steps.append, save=False,
              rebuild=True)
    assert builds == ["starting", "reference"] * 2


def test_a_runs_starting_build_is_kept_too(toy: EnvironmentSpec, builds: list[str],
                                           isolation: Isolation, tmp_path: Path) -> None:
    runs = [create_run("toy_build", "cpu", "start", 60, isolation, root=tmp_path / "runs")
            for _ in range(2)]
    assert builds == ["starting"]
    first, second = (tree(run.workspace) for run in runs)
    assert first == second and "start_built.txt" in first
    # evaluating the start reuses it too: a run's workspace and a materialized one agree
    folder = materialize_solution(toy, toy.profile("cpu"), "starting", tmp_path / "s",
                                  isolation)
    assert builds == ["starting"] and tree(folder) == first


def test_evaluate_reuses_the_kept_build_and_says_so(toy: EnvironmentSpec,
                                                    isolation: Isolation) -> None:
    def evaluate(*extra: str) -> tuple[dict[str, Any], str]:
        done = subprocess.run(
            [sys.executable, "-m", "rebench.cli", "evaluate", "toy_build", "--solution",
             "reference", "--isolation", isolation.value, "--json", *extra],
            capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "400"})
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), done.stderr

    entry = built_dir("toy_build", "cpu", "reference")
    result, log = evaluate()
    assert result["raw"] == 1.0 and f"first time; kept in {entry})" in log, log
    built_at = json.loads((entry / MANIFEST).read_text())["built_at"]
    result, log = evaluate()
    assert result["raw"] == 1.0
    assert f"reusing the built reference from {entry} (built {built_at}" in log, log
    _, log = evaluate("--rebuild")
    assert "rebuild asked" in log, log
