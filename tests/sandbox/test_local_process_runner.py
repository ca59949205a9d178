"""The shared process runner and the local (no isolation) sandbox."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rebench.sandbox import LocalSandbox, SandboxConfig
from rebench.sandbox.local import child_env
from rebench.sandbox.process import MAX_OUTPUT_BYTES, run_process_group


def test_exit_code_and_output(tmp_path: Path) -> None:
    result = run_process_group(["bash", "-c", "echo out; echo err >&2; exit 3"], tmp_path,
                               {"PATH": "/usr/bin:/bin"}, 10)
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out


def test_timeout_kills_process_group(tmp_path: Path) -> None:
    start = time.monotonic()
    result = run_process_group(["bash", "-c", "sleep 30 & sleep 30; echo never"], tmp_path,
                               {"PATH": "/usr/bin:/bin"}, 0.5)
    assert result.timed_out and "never" not in result.stdout
    assert time.monotonic() - start < 3


def test_detached_child_holding_the_pipe_does_not_hang(tmp_path: Path) -> None:
    box = LocalSandbox(SandboxConfig(workdir=tmp_path))
    start = time.monotonic()
    # the detached sleep keeps stdout open; the exec must still return promptly
    result = box.exec("setsid sleep 5 & echo started", 10)
    assert result.stdout == "started\n" and not result.timed_out
    assert time.monotonic() - start < 3


def test_output_is_bounded(tmp_path: Path) -> None:
    result = run_process_group(["bash", "-c", "head -c 5000000 /dev/zero | tr '\\0' b"],
                               tmp_path, {"PATH": "/usr/bin:/bin"}, 30)
    assert result.returncode == 0
    assert result.stdout.startswith("b" * MAX_OUTPUT_BYTES)
    assert result.stdout.endswith("[output truncated: 4000000 more bytes dropped]")


def test_file_access_refuses_escapes(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret").write_text("x")
    (tmp_path / "ws" / "link").symlink_to(tmp_path / "secret")
    (tmp_path / "ws" / "dirlink").symlink_to(tmp_path)
    box = LocalSandbox(SandboxConfig(workdir=tmp_path / "ws"))
    box.write_file("a/b.txt", b"ok")
    assert box.read_file("a/b.txt") == b"ok"
    assert box.read_file(str(tmp_path / "ws" / "a" / "b.txt")) == b"ok"
    for bad in ("../secret", "link", "/etc/passwd", "dirlink/secret"):
        with pytest.raises(PermissionError):
            box.read_file(bad)
        with pytest.raises(PermissionError):
            box.write_file(bad, b"overwritten")
    assert (tmp_path / "secret").read_text() == "x"


def test_child_env_is_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = child_env(SandboxConfig(workdir=tmp_path, env={"A": "1"}), {"B": "2"})
    assert "OPENAI_API_KEY" not in env
    assert env["HOME"] == str(tmp_path) and env["A"] == "1" and env["B"] == "2"


def test_child_env_waits_passively_unless_the_operator_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenMP's wait policy reaches sandboxed children: PASSIVE (set on importing rebench)
    unless the operator's environment sets another."""
    assert child_env(SandboxConfig(workdir=tmp_path), None)["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert child_env(SandboxConfig(workdir=tmp_path), None)["OMP_WAIT_POLICY"] == "ACTIVE"


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_importing_rebench_sets_passive_openmp_waits(given: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    code = "import os, rebench; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, timeout=30).stdout
    assert out.strip() == expected


def test_local_destroy_kills_running_exec(tmp_path: Path) -> None:
    import threading

    box = LocalSandbox(SandboxConfig(workdir=tmp_path))
    results = []
    worker = threading.Thread(target=lambda: results.append(box.exec("sleep 30", 60)))
    worker.start()
    time.sleep(0.3)
    start = time.monotonic()
    box.destroy()
    worker.join(5)
    assert time.monotonic() - start < 3
    assert results and results[0].returncode != 0
