"""The untrusted runner names how a child ended: ok with its data, timeout, memory,
output cap, crash; and nothing it started outlives it."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rebench.core.discovery import load_spec
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available
from rebench.scoring import ScoringContext
from rebench.scoring.runner import ChildFailure, run_child

pytestmark = pytest.mark.skipif(not bwrap_available(), reason="needs bubblewrap")


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[ScoringContext]:
    spec = load_spec("triton_cumsum")
    profile = dataclasses.replace(spec.profile("cpu"), memory_gb=0.5, pids_max=64)
    (tmp_path / "solution").mkdir()
    context = ScoringContext(spec=spec, profile=profile, solution_dir=tmp_path / "solution",
                             assets_dir=tmp_path / "assets", scratch_dir=tmp_path / "scratch",
                             isolation=Isolation.BWRAP)
    yield context
    context.close()


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_data_comes_back_on_stdout(ctx: ScoringContext) -> None:
    outcome = run_child(ctx, _py("import json,sys; print(json.dumps({'echo': sys.stdin.read()}))"),
                        timeout_s=60, stdin=b"hello")
    assert outcome.failure is ChildFailure.NONE, outcome.stderr_tail
    assert json.loads(outcome.stdout) == {"echo": "hello"}


def test_timeout(ctx: ScoringContext) -> None:
    start = time.monotonic()
    outcome = run_child(ctx, _py("import time; time.sleep(100)"), timeout_s=3)
    assert outcome.failure is ChildFailure.TIMEOUT
    assert time.monotonic() - start < 30


def test_memory(ctx: ScoringContext) -> None:
    outcome = run_child(ctx, _py("x = bytearray(2 * 2**30); x[::4096] = b'1' * len(x[::4096])"),
                        timeout_s=60)
    assert outcome.failure is ChildFailure.MEMORY, (outcome.returncode, outcome.stderr_tail)
    assert "memory" in outcome.describe()


def test_output_cap(ctx: ScoringContext) -> None:
    outcome = run_child(ctx, _py("import sys\nwhile True: sys.stdout.write('x' * 65536)"),
                        timeout_s=60, max_output_bytes=1 << 20)
    assert outcome.failure is ChildFailure.OUTPUT_CAP
    assert len(outcome.stdout) <= 1 << 20


def test_crash_keeps_the_stderr_tail(ctx: ScoringContext) -> None:
    outcome = run_child(ctx, _py("raise SystemExit('no model.py found')"), timeout_s=60)
    assert outcome.failure is ChildFailure.CRASH and "no model.py found" in outcome.describe()


def test_nothing_outlives_the_child(ctx: ScoringContext, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code = ("import subprocess; subprocess.Popen(['sh', '-c', 'sleep 2; echo alive > "
            f"{out}/late.txt'], start_new_session=True); print('done')")
    outcome = run_child(ctx, _py(code), timeout_s=60, workdir=out, writable=True)
    assert outcome.failure is ChildFailure.NONE
    time.sleep(4)
    assert not (out / "late.txt").exists()  # the detached grandchild died with the child


_PRINT_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


def test_local_child_gets_exactly_env_with_clear_env(ctx: ScoringContext,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Under local isolation the child inherits the host's environment (REBENCH_* removed)
    plus `env`; with clear_env it gets `env` alone, as a bwrap sandbox's --clearenv would."""
    monkeypatch.setenv("RUNNER_TEST_HOST_ONLY", "host")
    monkeypatch.setenv("REBENCH_RUNNER_TEST", "harness")
    local = dataclasses.replace(ctx, isolation=Isolation.LOCAL)
    inherited = json.loads(run_child(local, _py(_PRINT_ENV), timeout_s=60, env={"A": "1"}).stdout)
    assert inherited["A"] == "1" and inherited["RUNNER_TEST_HOST_ONLY"] == "host"
    assert "REBENCH_RUNNER_TEST" not in inherited
    exact = json.loads(run_child(local, _py(_PRINT_ENV), timeout_s=60, env={"A": "1"},
                                 clear_env=True).stdout)
    assert exact["A"] == "1"
    assert set(exact) <= {"A", "LC_CTYPE"}  # Python may add LC_CTYPE (C locale coercion)


# output_file: stdout and stderr to a file (a log), waited on by process, size-capped.

def test_output_file_holds_stdout_and_stderr(ctx: ScoringContext, tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    code = "import sys; print('to stdout', flush=True); print('to stderr', file=sys.stderr)"
    outcome = run_child(ctx, _py(code), timeout_s=60, output_file=log)
    assert outcome.failure is ChildFailure.NONE, outcome.stderr_tail
    assert outcome.stdout == b""
    assert "to stdout" in outcome.stderr_tail and "to stderr" in outcome.stderr_tail
    assert log.read_text().splitlines() == ["to stdout", "to stderr"]


def test_output_file_is_not_held_open_by_a_detached_writer(ctx: ScoringContext,
                                                           tmp_path: Path) -> None:
    """The child returns at once, leaving a detached process that keeps the file open and
    writes on: the runner stops at the child's return and the writer dies then."""
    log = tmp_path / "child.log"
    code = ("import subprocess; subprocess.Popen(['sh', '-c', 'while true; do echo late; "
            "sleep 0.1; done'], start_new_session=True); print('returned', flush=True)")
    outcome = run_child(ctx, _py(code), timeout_s=120, output_file=log)
    assert outcome.failure is ChildFailure.NONE, outcome.stderr_tail
    assert outcome.seconds < 60  # a runner that waited for the file to close: 120 s
    size = log.stat().st_size
    time.sleep(1)
    assert log.stat().st_size == size  # nobody writes any more


def test_output_file_cap(ctx: ScoringContext, tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    start = time.monotonic()
    outcome = run_child(ctx, _py("import sys\nwhile True: sys.stdout.write('x' * 65536)"),
                        timeout_s=120, max_output_bytes=1 << 20, output_file=log)
    assert outcome.failure is ChildFailure.OUTPUT_CAP
    assert time.monotonic() - start < 60


def test_output_file_timeout(ctx: ScoringContext, tmp_path: Path) -> None:
    outcome = run_child(ctx, _py("import time; print('started', flush=True); time.sleep(100)"),
                        timeout_s=3, output_file=tmp_path / "child.log")
    assert outcome.failure is ChildFailure.TIMEOUT and "started" in outcome.stderr_tail
    assert outcome.seconds < 30


def test_output_file_is_never_opened_through_a_link(ctx: ScoringContext,
                                                    tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    (tmp_path / "child.log").symlink_to(target)
    with pytest.raises(FileExistsError):  # the caller's bug, never the child's doing
        run_child(ctx, _py("print('x')"), timeout_s=60, output_file=tmp_path / "child.log")
    assert target.read_text() == "keep"
