"""Snapshots copy regular solution files only, within the size limit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rebench.core.spec import Direction, EnvironmentSpec, Profile, SolutionRecipe
from rebench.harness.scoring import snapshot_solution


def spec(**overrides: object) -> EnvironmentSpec:
    base = EnvironmentSpec(
        id="toy", version="1", title="Toy", direction=Direction.LOWER, raw_score_meaning="x",
        profiles={"cpu": Profile("cpu", "t", 2.0, 1.0, "test")},
        solutions={"starting": SolutionRecipe("starting"),
                   "reference": SolutionRecipe("reference")},
        solution_globs=("*.py", "**/*.py"),
    )
    return dataclasses.replace(base, **overrides)  # type: ignore[arg-type]


def test_copies_matching_regular_files_and_skips_links(tmp_path: Path) -> None:
    ws, secret = tmp_path / "ws", tmp_path / "protected.py"
    (ws / "pkg").mkdir(parents=True)
    (ws / "solution.py").write_text("x = 1")
    (ws / "pkg" / "helper.py").write_text("y = 2")
    (ws / "notes.txt").write_text("not a solution file")
    (ws / ".hidden.py").write_text("dotfiles are skipped")
    secret.write_text("held-out")
    (ws / "leak.py").symlink_to(secret)
    copied = snapshot_solution(spec(), ws, tmp_path / "snap")
    assert copied == ["pkg/helper.py", "solution.py"]
    assert not (tmp_path / "snap" / "leak.py").exists()
    assert (tmp_path / "snap" / "pkg" / "helper.py").read_text() == "y = 2"


def test_refuses_oversized_snapshots(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "solution.py").write_bytes(b"#" * 2048)
    with pytest.raises(ValueError, match="over the limit"):
        snapshot_solution(spec(snapshot_max_bytes=1024), ws, tmp_path / "snap")


def test_missing_workspace_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        snapshot_solution(spec(), tmp_path / "gone", tmp_path / "snap")
