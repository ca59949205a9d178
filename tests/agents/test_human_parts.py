"""Parts of the human agent that need no run: PATH, start-up files, texts, attach."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rebench.agents.attach import ATTACH_FILE, AttachServer, attach
from rebench.agents.human_server import format_message, participant_paths, short_time
from rebench.agents.human_shell import BASHRC, install_task_dir, shell_path
from rebench.core.errors import RunError


def test_harness_python_comes_first_even_when_not_on_path(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # rebench started by its path, no venv active
    parts = shell_path(tmp_path).split(os.pathsep)
    assert parts[:2] == [str(tmp_path), str(Path(sys.executable).parent)]
    assert parts[2:] == ["/usr/bin", "/bin"]


def test_start_up_files_are_valid_bash(tmp_path: Path) -> None:
    install_task_dir(tmp_path)
    for name in ("bashrc", "rebench-shell"):
        done = subprocess.run(["bash", "-n", str(tmp_path / name)], capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stderr
    assert os.access(tmp_path / "rebench-task", os.X_OK)
    assert os.access(tmp_path / "rebench-shell", os.X_OK)
    assert "IGNOREEOF" in BASHRC and "PS0=" in BASHRC and "HISTFILE=/tmp/" in BASHRC


def test_load_errors_point_at_the_participants_file(tmp_path: Path) -> None:
    snapshot = tmp_path / "run" / "protected" / "snapshots" / "0003"
    workspace = tmp_path / "run" / "workspace"
    message = {"error": f'could not load solution.py: File "{snapshot}/solution.py", '
                        "line 7\n    def f(:\n          ^\nSyntaxError: invalid syntax",
               "n": 3}
    text = format_message(message, snapshot, workspace)
    assert f'File "{workspace}/solution.py", line 7' in text
    assert "snapshots" not in text and "\\n" not in text  # not escaped JSON
    assert "  SyntaxError: invalid syntax" in text and "n: 3" in text
    assert participant_paths(str(snapshot.resolve()), snapshot, workspace) == str(workspace)


def test_short_time() -> None:
    assert [short_time(s) for s in (28800, 3599, 61, 5, -3)] == \
        ["8h00m", "59m59s", "1m01s", "5s", "0s"]


def test_attach_passes_the_terminal_and_returns_when_the_shell_ends(tmp_path: Path) -> None:
    master, slave = os.openpty()
    opened: list[str] = []

    def open_shell(fd: int) -> None:
        os.write(fd, b"hello from the run\r\n")
        opened.append(os.ttyname(fd))

    server = AttachServer(tmp_path, open_shell)
    try:
        assert (tmp_path / ATTACH_FILE).is_file()
        attach(tmp_path, tty_fd=slave)  # returns once the harness's shell ended
        assert opened == [os.ttyname(slave)]
        assert b"hello from the run" in os.read(master, 1024)
    finally:
        server.close()
        os.close(master)
        os.close(slave)
    assert not (tmp_path / ATTACH_FILE).exists()
    with pytest.raises(RunError, match="no human shell is running"):
        attach(tmp_path, tty_fd=os.openpty()[1])


def test_attach_refuses_what_is_not_a_terminal(tmp_path: Path) -> None:
    got: list[int] = []
    server = AttachServer(tmp_path, got.append)
    r, w = os.pipe()
    try:
        import json
        import socket

        path = json.loads((tmp_path / ATTACH_FILE).read_text())["socket"]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)
            socket.send_fds(sock, [b"rebench-attach"], [r])
            assert sock.makefile("rb").readline().startswith(b"refused")
        assert got == []
        assert oct(Path(path).parent.stat().st_mode & 0o777) == "0o700"
    finally:
        server.close()
        os.close(r)
        os.close(w)



def test_the_guide_names_every_participant_command() -> None:
    from click.testing import CliRunner

    from rebench.agents.task_cli import COMMANDS
    from rebench.cli import main

    guide = (Path(__file__).parents[2] / "docs" / "human-baselines.md").read_text()
    for command in COMMANDS:
        assert f"rebench-task {command}" in guide, command
    for needle in ("rebench attach RUN", "rebench resume RUN", "scriptreplay", "tmux",
                   "shell_command", "Protocol"):
        assert needle in guide, needle
    result = CliRunner().invoke(main, ["attach", "--help"])
    assert result.exit_code == 0 and "another shell" in result.output
