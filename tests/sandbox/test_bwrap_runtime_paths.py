"""The interpreter's folders are bound read-only, also from under /tmp (which every sandbox
replaces with a fresh tmpfs), so sandboxed Python children find their interpreter; the
fresh folders themselves and the OS folders are never bound as Python paths."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from rebench.sandbox import mounts
from rebench.sandbox.base import SandboxConfig


def test_interpreter_under_tmp_is_rebound(monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as venv:
        monkeypatch.setattr(sys, "prefix", venv)
        assert Path(venv).resolve() in mounts.python_paths()
        args = mounts.mount_args(SandboxConfig(workdir=Path(venv) / "ws"))
        i = args.index(str(Path(venv).resolve()))
        assert args[i - 1] == "--ro-bind"


def test_tmp_itself_and_paths_elsewhere_are_not_rebound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "prefix", "/tmp")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert Path("/tmp") not in mounts.python_paths()
    assert Path("/usr") not in mounts.python_paths()
