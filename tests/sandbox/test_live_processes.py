"""What of the agent still runs is part of the sandbox interface (`Sandbox.live_processes`,
recorded on each score event for the integrity report): a bubblewrap sandbox lists the
processes started in it, and only those; local isolation, sharing the host's process table,
says it cannot tell (None), never an empty list that would read as "nothing runs"."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebench.sandbox import LocalSandbox, SandboxConfig
from rebench.sandbox.bwrap import BwrapSandbox, bwrap_available


@pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")
def test_a_bwrap_sandbox_lists_what_was_left_running(tmp_path: Path) -> None:
    box = BwrapSandbox(SandboxConfig(workdir=tmp_path / "w"))
    box.create()
    try:
        assert box.live_processes() == []
        started = box.exec("sleep 37.5 >/dev/null 2>&1 &", timeout=10)
        assert started.returncode == 0, started.stderr
        alive = box.live_processes()
        assert alive is not None and len(alive) == 1, alive
        pid, command = alive[0].split(" ", 1)
        assert pid.isdigit() and command.strip() == "sleep 37.5"
    finally:
        box.destroy()


def test_local_isolation_cannot_tell(tmp_path: Path) -> None:
    box = LocalSandbox(SandboxConfig(workdir=tmp_path / "w"))
    box.create()
    try:
        assert box.live_processes() is None
    finally:
        box.destroy()
