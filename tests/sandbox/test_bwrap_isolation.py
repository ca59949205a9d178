"""What code inside a bubblewrap sandbox can and cannot see or do."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rebench.core.paths import runs_root
from rebench.sandbox import SandboxConfig
from rebench.sandbox.bwrap import BwrapSandbox, bwrap_available

pytestmark = pytest.mark.skipif(
    not bwrap_available(),
    reason="bubblewrap (bwrap) is missing or cannot create namespaces on this machine",
)


@pytest.fixture
def run_dirs(tmp_path: Path) -> dict[str, Path]:
    """Two runs side by side: ours (workspace + protected) and another one."""
    dirs = {
        "workspace": tmp_path / "run1" / "workspace",
        "protected": tmp_path / "run1" / "protected",
        "other": tmp_path / "run2",
    }
    for path in dirs.values():
        path.mkdir(parents=True)
    (dirs["workspace"] / "solution.py").write_text("print('hi')\n")
    (dirs["protected"] / "secret.txt").write_text("held-out answers\n")
    (dirs["other"] / "notes.txt").write_text("someone else's run\n")
    return dirs


def sandbox(workdir: Path, **kwargs: object) -> BwrapSandbox:
    box = BwrapSandbox(SandboxConfig(workdir=workdir, **kwargs))  # type: ignore[arg-type]
    box.create()
    return box


def test_workspace_is_writable_and_home(run_dirs: dict[str, Path]) -> None:
    box = sandbox(run_dirs["workspace"])
    result = box.exec("echo made > out.txt && cat solution.py && echo $HOME && pwd", 30)
    assert result.returncode == 0, result.stderr
    assert (run_dirs["workspace"] / "out.txt").read_text() == "made\n"
    workspace = str(run_dirs["workspace"])
    assert result.stdout.splitlines() == ["print('hi')", workspace, workspace]
    box.write_file("sub/data.bin", b"\x00\x01")
    assert box.read_file("sub/data.bin") == b"\x00\x01"
    assert box.exec("od -An -tx1 sub/data.bin", 30).stdout.split() == ["00", "01"]


def test_hidden_paths_are_invisible(run_dirs: dict[str, Path]) -> None:
    box = sandbox(run_dirs["workspace"], hidden=(run_dirs["protected"], run_dirs["other"]))
    secret, notes = run_dirs["protected"] / "secret.txt", run_dirs["other"] / "notes.txt"
    result = box.exec(f"cat {secret}; cat ../protected/secret.txt; ls -A {run_dirs['other']}"
                      f"; cat {notes}", 30)
    assert "held-out" not in result.stdout and "someone" not in result.stdout
    assert result.stderr.count("No such file") == 4, result.stderr  # not even mounted
    # the workspace itself stays visible although its run's sibling is hidden
    assert box.exec("cat solution.py", 30).stdout == "print('hi')\n"


def test_hidden_symlink_and_real_path_both_hidden(run_dirs: dict[str, Path],
                                                  tmp_path: Path) -> None:
    link = tmp_path / "link-to-protected"
    link.symlink_to(run_dirs["protected"])
    box = sandbox(run_dirs["workspace"], hidden=(link,))
    out = box.exec(f"cat {link}/secret.txt {run_dirs['protected']}/secret.txt", 30)
    assert "held-out" not in out.stdout and out.returncode != 0


def test_runs_root_hidden_by_default(tmp_path: Path) -> None:
    root = runs_root()  # conftest points REBENCH_RUNS at a per-session tmp dir
    other = root / f"run-{uuid.uuid4().hex[:8]}"
    (other / "protected").mkdir(parents=True)
    (other / "protected" / "score_log.jsonl").write_text("{}\n")
    box = sandbox(tmp_path / "ws")
    result = box.exec(f"ls -A {root}; cat {other}/protected/score_log.jsonl", 30)
    assert result.stdout.strip() == "" and result.returncode != 0


def test_workspace_inside_hidden_runs_root_stays_visible() -> None:
    workspace = runs_root() / f"run-{uuid.uuid4().hex[:8]}" / "workspace"
    workspace.mkdir(parents=True)
    (workspace.parent / "run.json").write_text("{}")
    box = sandbox(workspace)
    result = box.exec("echo ok > a.txt && cat a.txt && ls -A ..", 30)
    assert result.stdout == "ok\nworkspace\n", result.stderr  # run.json is not there


def test_read_only_snapshot_and_system(run_dirs: dict[str, Path], tmp_path: Path) -> None:
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "data.txt").write_text("public\n")
    box = sandbox(run_dirs["workspace"], writable=False, extra_ro=(assets,))
    result = box.exec(
        f"echo x > new.txt; echo x >> solution.py; echo x > {assets}/data.txt; "
        f"touch /usr/pwned; touch /etc/pwned; cat {assets}/data.txt", 30
    )
    assert result.stderr.count("Read-only file system") == 5, result.stderr
    assert result.stdout == "public\n"
    assert (run_dirs["workspace"] / "solution.py").read_text() == "print('hi')\n"
    assert not (run_dirs["workspace"] / "new.txt").exists()
    with pytest.raises(PermissionError):
        box.write_file("new.txt", b"x")


def test_extra_rw_is_writable(tmp_path: Path) -> None:
    out_dir = tmp_path / "outputs"
    out_dir.mkdir()
    box = sandbox(tmp_path / "ws", writable=False, extra_rw=(out_dir,))
    assert box.exec(f"echo y > {out_dir}/result.txt", 30).returncode == 0
    assert (out_dir / "result.txt").read_text() == "y\n"


@pytest.fixture
def loopback_server() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(20)

    def accept() -> None:
        try:
            conn, _ = server.accept()
            conn.sendall(b"hello")
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()


CONNECT = ("import socket,sys; s=socket.create_connection(('127.0.0.1',{port}),timeout=3); "
           "print(s.recv(5).decode())")


def test_network_unreachable(tmp_path: Path, loopback_server: int) -> None:
    box = sandbox(tmp_path / "ws")
    result = box.exec(f'{sys.executable} -c "{CONNECT.format(port=loopback_server)}"', 30)
    assert result.returncode != 0 and "hello" not in result.stdout
    assert "Error" in result.stderr


def test_network_allowed_when_asked(tmp_path: Path, loopback_server: int) -> None:
    box = sandbox(tmp_path / "ws", network=True)
    result = box.exec(f'{sys.executable} -c "{CONNECT.format(port=loopback_server)}"', 30)
    assert result.stdout.strip() == "hello", result.stderr


def test_environment_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REBENCH_TEST_API_KEY", "sk-secret")
    box = sandbox(tmp_path / "ws", env={"MY_SETTING": "1"})
    out = box.exec("env", 30, env={"PER_CALL": "2"}).stdout
    assert "sk-secret" not in out
    assert "MY_SETTING=1" in out and "PER_CALL=2" in out
    assert "OMP_WAIT_POLICY=PASSIVE" in out  # rebench/__init__.py, through the allowed list
    wrapped = box.wrap(["env"])
    done = subprocess.run(wrapped, capture_output=True, text=True, check=True, timeout=30)
    assert "sk-secret" not in done.stdout and "MY_SETTING=1" in done.stdout


def test_no_capabilities_inside(tmp_path: Path) -> None:
    out = sandbox(tmp_path / "ws").exec("grep CapEff /proc/self/status; umount /tmp", 30)
    assert out.stdout.split()[1] == "0000000000000000"
    assert "umount" in out.stderr


def test_file_descriptors_pass_through(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    memfd = os.memfd_create("payload")
    os.write(memfd, b"from-trusted-side")
    code = (f"import os; os.lseek({memfd}, 0, 0); data = os.read({memfd}, 100); "
            f"os.write({write_end}, data.upper())")
    argv = sandbox(tmp_path / "ws").wrap([sys.executable, "-c", code])
    try:
        proc = subprocess.run(argv, pass_fds=(write_end, memfd), capture_output=True,
                              timeout=30, check=False)
        os.close(write_end)
        assert proc.returncode == 0, proc.stderr
        assert os.read(read_end, 100) == b"FROM-TRUSTED-SIDE"
    finally:
        os.close(read_end)
        os.close(memfd)


def test_read_file_refuses_links_out_of_workspace(run_dirs: dict[str, Path]) -> None:
    box = sandbox(run_dirs["workspace"])
    box.exec(f"ln -s {run_dirs['protected']}/secret.txt leak.txt", 30)
    with pytest.raises(PermissionError):
        box.read_file("leak.txt")
    with pytest.raises(PermissionError):
        box.read_file("../protected/secret.txt")
