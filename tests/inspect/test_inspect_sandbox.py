"""The `rebench` Inspect sandbox maps Inspect's exec/read/write onto a rebench session."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.util._sandbox import SandboxTimeoutError
from inspect_ai.util._sandbox.environment import SandboxUserUnsupportedError

from rebench.inspect_ext.sandbox import RebenchSandboxEnvironment, shell_command
from rebench.sandbox import ExecResult, LocalSandbox, SandboxConfig


@dataclass
class _Run:
    workspace: Path


@dataclass
class FakeSession:
    """Just what the sandbox uses of a Session, over a LocalSandbox in a temp folder."""

    run: _Run
    commands: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.box = LocalSandbox(SandboxConfig(workdir=self.run.workspace))
        self.box.create()

    def exec(self, cmd: str, timeout: float = 600.0) -> ExecResult:
        self.commands.append(cmd)
        return self.box.exec(cmd, timeout=timeout)

    def read_file(self, path: str) -> bytes:
        return self.box.read_file(path)

    def write_file(self, path: str, data: bytes) -> None:
        self.box.write_file(path, data)

    def time_left(self) -> float:
        return 3600.0


@pytest.fixture
def env(tmp_path: Path) -> RebenchSandboxEnvironment:
    session: Any = FakeSession(_Run(tmp_path / "ws"))
    return RebenchSandboxEnvironment(session)


def test_exec_argv_env_cwd(env: RebenchSandboxEnvironment) -> None:
    (env.session.run.workspace / "sub dir").mkdir()
    result = asyncio.run(env.exec(
        ["bash", "-c", 'pwd; printf "%s|" "$A" "$1"', "x", "it's"],
        cwd="sub dir", env={"A": "a b;$(rm -rf /)"},
    ))
    assert result.success, result.stderr
    assert result.stdout.splitlines()[0].endswith("/ws/sub dir")
    assert result.stdout.splitlines()[1] == "a b;$(rm -rf /)|it's|"


@pytest.mark.parametrize("size", [10, 200_000])
def test_exec_stdin_small_and_large(env: RebenchSandboxEnvironment, size: int) -> None:
    code = "#" * size + "\nprint('ok')\n"  # a long comment makes a large script
    result = asyncio.run(env.exec(["python3", "-"], input=code))
    assert result.stdout.strip() == "ok", result.stderr
    leftovers = list(env.session.run.workspace.glob(".rebench-stdin-*"))
    assert leftovers == []  # the large-stdin file is removed after the command


def test_exec_binary_stdin(env: RebenchSandboxEnvironment) -> None:
    data = bytes(range(256))
    result = asyncio.run(env.exec(["bash", "-c", "od -An -tx1 | tr -d ' \\n' | wc -c"],
                                  input=data))
    assert result.stdout.strip() == "512"


def test_exec_failure_and_timeout(env: RebenchSandboxEnvironment) -> None:
    failed = asyncio.run(env.exec(["bash", "-c", "echo oops >&2; exit 3"]))
    assert (failed.success, failed.returncode, failed.stderr.strip()) == (False, 3, "oops")
    with pytest.raises(SandboxTimeoutError):
        asyncio.run(env.exec(["sleep", "5"], timeout=1))


def test_exec_as_other_user_is_refused(env: RebenchSandboxEnvironment) -> None:
    with pytest.raises(SandboxUserUnsupportedError):
        asyncio.run(env.exec(["true"], user="root"))


def test_files_round_trip_and_stay_in_workspace(env: RebenchSandboxEnvironment) -> None:
    asyncio.run(env.write_file("a/b.txt", "héllo\r\n"))
    assert asyncio.run(env.read_file("a/b.txt")) == "héllo\r\n"
    assert asyncio.run(env.read_file("a/b.txt", text=False)) == "héllo\r\n".encode()
    with pytest.raises(PermissionError):
        asyncio.run(env.read_file("../outside.txt"))
    with pytest.raises(PermissionError):
        asyncio.run(env.write_file("/etc/evil", b"x"))


def test_shell_command_quotes_everything() -> None:
    line = shell_command(["echo", "a'b", "$HOME"], cwd="d ir", env={"K": "v v"}, stdin_ref=None)
    assert line == "cd 'd ir' || exit 1\nexport K='v v'\necho 'a'\"'\"'b' '$HOME'"
    with pytest.raises(ValueError):
        shell_command(["true"], cwd=None, env={"A;rm -rf /": "x"}, stdin_ref=None)
