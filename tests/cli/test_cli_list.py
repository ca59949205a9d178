"""`rebench list` reads the specs once and keeps what it lists; any change to a Python file
of rebench or of an environment makes it read them again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rebench import cli_list


def test_listing_is_the_specs_and_is_read_again_after_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rebench.core.discovery import all_specs

    monkeypatch.setenv("REBENCH_CACHE", str(tmp_path / "cache"))
    envs = tmp_path / "envs"
    (envs / "extra_env").mkdir(parents=True)
    marker = envs / "extra_env" / "helper.py"
    marker.write_text("X = 1\n")
    monkeypatch.setenv("REBENCH_ENVIRONMENTS_PATH", str(envs))
    reads: list[int] = []
    real = cli_list._read_specs

    def counted() -> list[dict[str, Any]]:
        reads.append(1)
        return list(real())

    monkeypatch.setattr(cli_list, "_read_specs", counted)
    first = cli_list.environment_listing()
    assert [e["id"] for e in first] == [s.id for s in all_specs()]
    assert cli_list.environment_listing() == first and len(reads) == 1  # from the cache
    marker.write_text("X = 22\n")  # an edit (size and time change)
    cli_list.environment_listing()
    assert len(reads) == 2


def test_rebench_list_does_not_import_torch(tmp_path: Path) -> None:
    env = {**os.environ, "REBENCH_CACHE": str(tmp_path / "cache")}
    code = ("import sys\nfrom click.testing import CliRunner\nfrom rebench.cli import main\n"
            "r = CliRunner().invoke(main, ['list'])\nassert r.exit_code == 0, r.output\n"
            "print('torch' in sys.modules, 'numpy' in sys.modules)")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)  # fills the cache
    done = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                          capture_output=True, text=True)
    assert done.stdout.split() == ["False", "False"]
