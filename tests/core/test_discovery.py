"""Discovery by folder convention and `validate`."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebench.core import discovery
from rebench.core.errors import UnknownEnvironmentError


def test_incomplete_folder_lists_every_missing_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / "half_done"
    env.mkdir()
    (env / "environment.py").write_text("SPEC = None\n")
    (env / "starting").mkdir()
    monkeypatch.setattr(discovery, "ENVIRONMENTS_DIR", tmp_path)
    problems = {p.problem for p in discovery.validate_environment("half_done")}
    assert problems == {
        "missing file instructions.md", "missing file scoring.py", "missing file prepare.py",
        "missing file README.md", "missing folder reference/",
    }
    assert discovery.environment_ids(tmp_path) == ["half_done"]


def test_shipped_environments_are_valid() -> None:
    ids = discovery.environment_ids()
    assert "triton_cumsum" in ids
    for env_id in ids:
        assert discovery.validate_environment(env_id) == [], env_id


def test_unknown_environment_names_the_known_ones() -> None:
    with pytest.raises(UnknownEnvironmentError, match="triton_cumsum"):
        discovery.load_spec("no_such_env")
