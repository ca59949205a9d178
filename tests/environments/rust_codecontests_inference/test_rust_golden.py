"""The workspace's tools: the local evaluate tool works, and
`rebench evaluate` works against the simulator and against a real OpenAI-compatible server
(a loopback server of our own that is not the simulator). The golden bands (the start
exactly 0, the reference about 1, within the spread of the scorer's secret seed) are
declared in degenerate.py (GOLDEN) and checked by the generic test,
tests/environments/test_golden_all_environments.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from rust_cc_support import ENV_DIR, bwrap_isolation, first_problems
from test_rust_gateway import _FakeOpenAI

from rebench.core.spec import EnvironmentSpec
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import Isolation, SandboxConfig, make_sandbox


def test_workspace_has_the_tools(spec: EnvironmentSpec, prepared: Path, tmp_path: Path) -> None:
    workspace = materialize_solution(spec, spec.profile("cpu"), "starting", tmp_path / "ws",
                                     Isolation.LOCAL)
    names = {p.name for p in workspace.iterdir()}
    assert {"solution.py", "evaluate.py", "validation.jsonl"} <= names
    assert not any("test" in n for n in names)


def test_local_evaluate_tool_runs_on_validation(spec: EnvironmentSpec, prepared: Path,
                                                tmp_path: Path) -> None:
    workspace = materialize_solution(spec, spec.profile("cpu"), "reference", tmp_path / "ws",
                                     Isolation.LOCAL)
    proc = subprocess.run([sys.executable, "evaluate.py", "--limit", "3"], cwd=workspace,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED" in proc.stdout
    assert "solved" in proc.stdout.splitlines()[-1]


@pytest.fixture
def fake_server(prepared_test: Path) -> Iterator[str]:
    problems = first_problems(prepared_test, 8)
    _FakeOpenAI.solutions = {p["description"]: p["solution"] for p in problems}
    _FakeOpenAI.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _cli_evaluate(solution: Path, extra_env: dict[str, str]) -> dict[str, Any]:
    """`rebench evaluate` on the small test profile (8 held-out problems): what is checked
    here (the endpoint's settings reach the requests, the message's schema) does not depend
    on the cpu profile's 32 problems, which the golden test scores."""
    rebench = shutil.which("rebench") or ""
    argv = [rebench] if rebench else [sys.executable, "-m", "rebench.cli"]
    proc = subprocess.run([*argv, "evaluate", "rust_codecontests_inference", "--solution",
                           str(solution), "--profile", "test", "--json"],
                          capture_output=True, text=True,
                          timeout=600, env={**os.environ, **extra_env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_cli_evaluate_against_a_real_openai_compatible_server(
        prepared_test: Path, fake_server: str, tmp_path: Path) -> None:
    solution = tmp_path / "sol"
    solution.mkdir()
    shutil.copyfile(ENV_DIR / "reference" / "solution.py", solution / "solution.py")
    result = _cli_evaluate(solution, {"REBENCH_RUST_BASE_URL": fake_server,
                                      "REBENCH_RUST_MODEL": "fake-model",
                                      "REBENCH_RUST_API_KEY": "sk-test"})
    assert result["raw"] == 1.0, result  # the fake server always answers the right program
    # The model label is private since 1.2.0 (feedback schema); the requests show the model.
    assert "model" not in result["message"]
    assert {s["auth"] for s in _FakeOpenAI.seen} == {"Bearer sk-test"}
    assert {s["body"]["model"] for s in _FakeOpenAI.seen} == {"fake-model"}


def test_cli_evaluate_against_the_simulator(prepared_test: Path, tmp_path: Path) -> None:
    solution = tmp_path / "sol"
    solution.mkdir()
    shutil.copyfile(ENV_DIR / "starting" / "solution.py", solution / "solution.py")
    result = _cli_evaluate(solution, {})
    assert result["valid"] and result["raw"] == 0.0
    assert result["message"] == {"valid": True, "fraction_solved": 0.0, "solved": 0,
                                 "problems": 8}


def test_local_evaluate_tool_works_in_the_agent_sandbox(spec: EnvironmentSpec, prepared: Path,
                                                        tmp_path: Path) -> None:
    """In bwrap HOME is the workspace, so the rustup proxy alone would not find a toolchain."""
    isolation = bwrap_isolation()
    if isolation is None:
        pytest.skip("the bwrap sandbox is not available here")
    workspace = materialize_solution(spec, spec.profile("cpu"), "reference", tmp_path / "ws",
                                     Isolation.LOCAL)
    sandbox = make_sandbox(isolation, SandboxConfig(workdir=workspace, writable=True,
                                                    env={"REBENCH_PROFILE": "cpu"}))
    try:
        result = sandbox.exec("python evaluate.py --limit 3", 300)
    finally:
        sandbox.destroy()
    assert result.returncode == 0, result.stderr[-2000:]
    # candidates were compiled and run on tests inside (which verdicts depends on the draws)
    assert any(v in result.stdout for v in ("passed", "wrong_answer", "runtime_error"))
