"""Processes in a bubblewrap sandbox: background jobs persist between execs, timeouts kill
the command's session, and destroy kills everything, detached or not."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from rebench.sandbox import ExecResult, SandboxConfig
from rebench.sandbox.bwrap import BwrapSandbox, bwrap_available

pytestmark = pytest.mark.skipif(
    not bwrap_available(),
    reason="bubblewrap (bwrap) is missing or cannot create namespaces on this machine",
)


def marker() -> str:
    """A sleep duration unique to this test, to find its processes on the host."""
    return f"{4000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"


def host_processes_with(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def wait_gone(text: str, within_s: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (left := host_processes_with(text)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def wait_present(text: str, within_s: float = 10.0) -> list[int]:
    """The host processes with `text`, once there are any (a job started in the
    background may not have exec'd yet when the command that started it returns; on a
    busy machine, such as two pytest-xdist workers on two cores, it often has not)."""
    deadline = time.monotonic() + within_s
    while not (found := host_processes_with(text)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def make(tmp_path: Path, **kwargs: object) -> BwrapSandbox:
    box = BwrapSandbox(SandboxConfig(workdir=tmp_path / "ws", **kwargs))  # type: ignore[arg-type]
    box.create()
    return box


@pytest.mark.parametrize("gpu", [False, True], ids=["cpu", "gpu-config"])
def test_detached_job_persists_until_destroy(tmp_path: Path, gpu: bool) -> None:
    box = make(tmp_path, gpu=gpu)
    tag = marker()
    try:
        result = box.exec(f"setsid nohup sleep {tag} >/dev/null 2>&1 & echo started", 30)
        assert result.stdout == "started\n" and not result.timed_out
        assert len(wait_present(tag)) == 1
        # the next command sees it: jobs live on between commands, as in a container
        assert tag in box.exec("ps -eo args", 30).stdout
    finally:
        box.destroy()
    assert wait_gone(tag) == []


def test_timeout_kills_the_command_and_its_jobs(tmp_path: Path) -> None:
    box = make(tmp_path)
    job, detached = marker(), marker()
    try:
        start = time.monotonic()
        result = box.exec(f"sleep {job} & setsid sleep {detached} & sleep {job}", 1.0)
        assert result.timed_out and result.returncode != 0
        assert time.monotonic() - start < 5
        assert wait_gone(job) == []
        assert len(wait_present(detached)) == 1  # left the session: lives on
        assert box.exec("echo still usable", 30).stdout == "still usable\n"
    finally:
        box.destroy()
    assert wait_gone(detached) == []


def test_destroy_during_exec_returns_promptly(tmp_path: Path) -> None:
    box = make(tmp_path)
    tag = marker()
    results: list[ExecResult] = []
    worker = threading.Thread(target=lambda: results.append(box.exec(f"sleep {tag}", 60)))
    worker.start()
    deadline = time.monotonic() + 5
    while not host_processes_with(tag) and time.monotonic() < deadline:
        time.sleep(0.02)
    start = time.monotonic()
    box.destroy()
    worker.join(10)
    assert time.monotonic() - start < 2
    assert results and results[0].returncode != 0
    assert wait_gone(tag) == []


def test_killed_server_is_reported_and_restarted(tmp_path: Path) -> None:
    box = make(tmp_path)
    tag = marker()
    try:
        box.exec(f"setsid sleep {tag} >/dev/null 2>&1 &", 30)
        # code inside can kill the command server (its parent); the sandbox then restarts
        killed = box.exec("kill -9 $PPID", 30)
        assert killed.returncode != 0 and "every process in it was stopped" in killed.stderr
        assert box.exec("echo back", 30).stdout == "back\n"
        assert wait_gone(tag) == []  # the old sandbox took its processes with it
    finally:
        box.destroy()


def test_concurrent_execs(tmp_path: Path) -> None:
    box = make(tmp_path)
    results: list[ExecResult] = []
    try:
        threads = [threading.Thread(target=lambda i=i: results.append(
            box.exec(f"sleep 0.5; echo {i}", 30))) for i in range(4)]
        start = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        assert time.monotonic() - start < 1.8  # ran side by side, not one after another
        assert sorted(r.stdout for r in results) == [f"{i}\n" for i in range(4)]
    finally:
        box.destroy()


def test_loopback_service_shared_between_execs(tmp_path: Path) -> None:
    box = make(tmp_path)
    try:
        serve = ("python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 8765)); "
                 "s.listen(); c,_=s.accept(); c.sendall(b'pong'); c.close()\" "
                 ">/dev/null 2>&1 &")
        box.exec(f"{serve} sleep 0.5", 30)
        client = ("python3 -c \"import socket; c=socket.create_connection(('127.0.0.1', 8765),"
                  " timeout=5); print(c.recv(4).decode())\"")
        result = box.exec(client, 30)
        assert result.stdout == "pong\n", result.stderr
    finally:
        box.destroy()


def test_huge_output_is_truncated(tmp_path: Path) -> None:
    box = make(tmp_path)
    try:
        result = box.exec("head -c 30000000 /dev/zero | tr '\\0' a; echo done >&2", 60)
    finally:
        box.destroy()
    assert result.returncode == 0 and result.stderr == "done\n"
    assert result.stdout.startswith("aaaa")
    assert len(result.stdout) < 1_100_000
    assert "output truncated" in result.stdout[-100:]


def test_wrapped_one_off_sandbox_takes_its_jobs_along(tmp_path: Path) -> None:
    import subprocess

    box = make(tmp_path)
    tag = marker()
    try:
        argv = box.wrap(["bash", "-c", f"setsid sleep {tag} >/dev/null 2>&1 & echo ok"])
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        assert done.stdout == "ok\n"
        assert wait_gone(tag) == []
    finally:
        box.destroy()


def test_exec_after_destroy_is_refused_until_create(tmp_path: Path) -> None:
    box = make(tmp_path)
    box.destroy()
    refused = box.exec("echo should-not-run", 30)
    assert refused.returncode != 0 and "destroyed" in refused.stderr
    assert refused.stdout == ""
    box.create()
    try:
        assert box.exec("echo again", 30).stdout == "again\n"
    finally:
        box.destroy()
