"""The v1 cgroup freezer can stay FREEZING when a task forks at the moment FROZEN is written;
the kernel's documentation says to write FROZEN again. A fake freezer folder that freezes
only on the second write shows the wait retries instead of timing out (CI timed out on a
forking loop before the retry)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebench.sandbox import limits
from rebench.sandbox.limits import ProcessGroup


class _StubbornFreezer:
    """freezer.state that reads FREEZING until FROZEN has been written `writes_needed` times."""

    def __init__(self, writes_needed: int) -> None:
        self.writes = 0
        self.writes_needed = writes_needed

    def write(self, path: Path, value: str) -> None:
        if path.name == "freezer.state" and value == "FROZEN":
            self.writes += 1

    def read(self, path: Path) -> str:
        if path.name != "freezer.state":
            return ""
        return "FROZEN" if self.writes >= self.writes_needed else "FREEZING"


def _group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writes_needed: int) -> tuple[
        ProcessGroup, _StubbornFreezer]:
    fake = _StubbornFreezer(writes_needed)
    monkeypatch.setattr(limits, "_write", fake.write)
    monkeypatch.setattr(limits, "_read", fake.read)
    monkeypatch.setattr(limits, "_FREEZE_TIMEOUT_S", 1.0)
    return ProcessGroup({"freezer": tmp_path}, v2=False), fake


def test_a_group_left_freezing_is_written_frozen_again(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    group, fake = _group(tmp_path, monkeypatch, writes_needed=3)
    group.freeze()
    assert fake.writes == 3


def test_a_group_that_never_freezes_still_times_out(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    group, fake = _group(tmp_path, monkeypatch, writes_needed=10**9)
    with pytest.raises(TimeoutError):
        group.freeze()
    assert fake.writes > 2  # it kept retrying until the deadline
