"""Attack: swap a workspace folder with a symlink to a protected folder while the harness
reads, writes or snapshots through it (issue: TOCTOU in safe_join and snapshot_solution).

Before the fix (resolve once, then open by path) these loops won within a few hundred tries
(benchmarks/race_attacks.py measures both implementations; docs/benchmarks/sandbox.md). Now
every operation goes through directory descriptors with O_NOFOLLOW, so no try may win.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest
from race_attack import SECRET, Arena, Flipper

from rebench.core.spec import Direction, EnvironmentSpec, Profile, SolutionRecipe
from rebench.harness.scoring import snapshot_solution
from rebench.sandbox import SandboxConfig
from rebench.sandbox.local import LocalSandbox

# Wall-clock length of each attack loop (the flipper swaps ~10^5-10^6 times a second).
ATTACK_S = 3.0


def _spec() -> EnvironmentSpec:
    return EnvironmentSpec(
        id="toy", version="1", title="Toy", direction=Direction.LOWER, raw_score_meaning="x",
        profiles={"cpu": Profile("cpu", "t", 2.0, 1.0, "test")},
        solutions={"starting": SolutionRecipe("starting"),
                   "reference": SolutionRecipe("reference")},
        solution_globs=("**/*",),
    )


def _until(seconds: float) -> float:
    return time.monotonic() + seconds


def test_read_file_never_follows_a_swapped_link(tmp_path: Path) -> None:
    arena = Arena.make(tmp_path)
    box = LocalSandbox(SandboxConfig(workdir=arena.workspace))
    tries = refused = 0
    with Flipper(arena):
        deadline = _until(ATTACK_S)
        while time.monotonic() < deadline:
            tries += 1
            try:
                assert box.read_file("d/f.txt") != SECRET
            except (PermissionError, FileNotFoundError):
                refused += 1
    assert tries > 100 and refused < tries  # the race was run, and sometimes read honestly


def test_write_file_never_lands_outside(tmp_path: Path) -> None:
    arena = Arena.make(tmp_path)
    box = LocalSandbox(SandboxConfig(workdir=arena.workspace))
    tries = 0
    with Flipper(arena):
        deadline = _until(ATTACK_S)
        while time.monotonic() < deadline:
            tries += 1
            with contextlib.suppress(PermissionError, FileNotFoundError):
                box.write_file("d/f.txt", b"overwritten by the harness")
            assert arena.secret_intact()
    assert tries > 100


def test_snapshot_never_copies_through_a_swapped_link(tmp_path: Path) -> None:
    arena = Arena.make(tmp_path)
    spec = _spec()
    tries = 0
    with Flipper(arena):
        deadline = _until(ATTACK_S)
        while time.monotonic() < deadline:
            dest = tmp_path / "snaps" / str(tries)
            tries += 1
            snapshot_solution(spec, arena.workspace, dest)
            for path in dest.rglob("*"):
                assert not path.is_file() or path.read_bytes() != SECRET, path
    assert tries > 20


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO where a file should be would block a plain open() forever."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "f.txt")
    box = LocalSandbox(SandboxConfig(workdir=ws))
    with pytest.raises(PermissionError):
        box.read_file("f.txt")
    with pytest.raises(PermissionError):
        box.write_file("f.txt", b"x")
    copied = snapshot_solution(_spec(), ws, tmp_path / "snap")
    assert copied == []
