"""gpu profile, where a CUDA GPU is present: the protocol works end to end through CUDA IPC,
and every attack on the gpu timing fails: it is refused (NaN), or its official time is no
lower than the same work timed honestly in-process (the bound the protocol promises)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from triton_cumsum_helpers import CHEATS

from rebench.core.discovery import load_spec
from rebench.core.score import ScoreResult
from rebench.harness.prepare import prepare_environment
from rebench.harness.scoring import official_score, snapshot_solution
from rebench.harness.workspace import materialize_solution
from rebench.sandbox import default_isolation

pytestmark = [pytest.mark.gpu, pytest.mark.slow]
ENV_DIR = Path(__file__).parents[3] / "src" / "rebench" / "environments" / "triton_cumsum"
BENCHMARKS = Path(__file__).parents[3] / "benchmarks"
# Honest work timed in-process may be this much slower than a cheat's official time before
# the cheat counts as having gained (run-to-run noise of the in-process time).
NOISE = 0.93


def _score(solution: str | Path, tmp_path: Path) -> ScoreResult:
    spec = load_spec("triton_cumsum")
    profile = spec.profile("gpu")
    prepare_environment(spec, profile)
    workspace = tmp_path / "workspace"
    if isinstance(solution, Path) and solution.is_dir():
        workspace = solution
    elif isinstance(solution, Path):
        workspace.mkdir(parents=True)
        (workspace / "solution.py").write_text(solution.read_text())
    else:
        materialize_solution(spec, profile, solution, workspace, default_isolation())
    snapshot_solution(spec, workspace, tmp_path / "snapshot")
    return official_score(spec, profile, tmp_path / "snapshot", default_isolation())


def _in_process_ms(name: str) -> float:
    """The paper-style in-process median of one of the shipped solutions (own process)."""
    spec = load_spec("triton_cumsum")
    n = int(spec.profile("gpu").params["n"])
    done = subprocess.run(
        [sys.executable, "-m", "rebench.environments.triton_cumsum.inprocess",
         "--solution-dir", str(ENV_DIR / name), "--device", "cuda", "--n", str(n),
         "--calls", "30"],
        capture_output=True, text=True, check=True, env={**os.environ, "REBENCH_PROFILE": "gpu"},
    )
    return float(json.loads(done.stdout.splitlines()[-1])["median_ms"])


@pytest.fixture(scope="module")
def honest_start_ms() -> float:
    return _in_process_ms("starting")


@pytest.fixture(scope="module")
def honest_reference_ms() -> float:
    return _in_process_ms("reference")


def test_official_time_is_close_to_the_in_process_time(tmp_path: Path,
                                                       honest_reference_ms: float) -> None:
    result = _score("reference", tmp_path)
    assert result.valid, result.message
    official = result.message["ms"]
    # Measured on an H200 (1.2.0, medians of 10): +0.014 ms; the paper-style time of the
    # reference itself moves by SD 0.07 of ln between processes there, hence the margin.
    # Since 1.3.0 the clock also covers drawing the inputs (one 400 MB write per call,
    # about 0.1 ms at the measured bandwidth: an estimate until measured), hence 0.25.
    assert honest_reference_ms * NOISE <= official <= honest_reference_ms + 0.25, (
        official, honest_reference_ms)
    assert result.details["prep_ms_max"] > 0 and result.details["draw_ms"]
    assert "load" not in result.message  # not a number the agent may see (FEEDBACK)


def test_reference_beats_start_and_expert_beats_reference(tmp_path: Path) -> None:
    start = _score("starting", tmp_path / "start")
    reference = _score("reference", tmp_path / "reference")
    expert = _score("expert", tmp_path / "expert")
    assert start.valid and reference.valid and expert.valid, (
        start.message, reference.message, expert.message)
    assert expert.raw < reference.raw < start.raw


@pytest.mark.parametrize("name", ["early_done_thread.py", "stack_walk.py", "lying_tensor.py",
                                  "wrong_device.py", "fork_escape.py", "cached_outputs.py",
                                  "early_start.py", "early_message.py"])
def test_gpu_cheats_are_invalid(name: str, tmp_path: Path) -> None:
    result = _score(CHEATS / name, tmp_path)
    assert not result.valid, result.message


@pytest.mark.parametrize("name", ["patched_timers.py", "no_sync.py", "early_flag.py"])
def test_early_done_gains_nothing(name: str, tmp_path: Path, honest_start_ms: float) -> None:
    """Reporting done before the GPU finished (a no-op synchronize, a forged done flag):
    NaN, or no faster than the same (start-like) work done honestly in-process."""
    result = _score(CHEATS / name, tmp_path)
    if result.valid:
        assert result.message["ms"] >= honest_start_ms * NOISE, (result.message,
                                                                 honest_start_ms)


def test_work_armed_before_the_clock_gains_nothing(tmp_path: Path,
                                                   honest_reference_ms: float) -> None:
    """Issue 26, class 8: the reference's kernels plus work left waiting on the GPU for the
    next batch's inputs (benchmarks/triton_cumsum_prearm_solution.py). In 1.2.0 the inputs
    were drawn before the clock and the armed slots were computed there (17-18% faster
    than honest); now they are drawn inside it. benchmarks/triton_cumsum_prearm.py
    measures the pair against the scorer's noise."""
    sys.path.insert(0, str(BENCHMARKS))
    from triton_cumsum_prearm import make_twin, prearm_stats

    result = _score(make_twin(tmp_path / "prearmed", 6), tmp_path)
    assert result.valid, result.message
    assert prearm_stats(result.details).get("armed_calls", 0) > 0, "nothing was armed"
    assert result.message["ms"] >= honest_reference_ms * NOISE, (result.message,
                                                                 honest_reference_ms)


SPIN_HOG = """
import torch
a = torch.randn(8192, 8192, device="cuda")
while True:
    a = (a @ a).clamp_(-1, 1)
"""
# Waits until the scorer's allocations show up in the free memory, then hogs the GPU.
MEMORY_WATCH_HOG = """
import time, torch
free0 = torch.cuda.mem_get_info()[0]
while torch.cuda.mem_get_info()[0] > free0 - (300 << 20):
    time.sleep(0.001)
a = torch.randn(8192, 8192, device="cuda")
while True:
    a = (a @ a).clamp_(-1, 1)
"""


@pytest.fixture(params=["spin", "memory_watch"])
def gpu_hog(request: pytest.FixtureRequest) -> Iterator[str]:
    """A process that keeps the GPU busy, as an agent's background job could."""
    code = SPIN_HOG if request.param == "spin" else MEMORY_WATCH_HOG
    hog = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)])
    time.sleep(3)  # CUDA start-up
    try:
        yield request.param
    finally:
        hog.kill()
        hog.wait()


def test_a_gpu_hog_during_scoring_gains_nothing(gpu_hog: str, tmp_path: Path,
                                                honest_reference_ms: float) -> None:
    result = _score("reference", tmp_path)
    if result.valid:
        assert result.message["ms"] >= honest_reference_ms * NOISE, result.message
    else:
        assert result.message["reason"] == "gpu_busy", result.message


def test_no_dev_shm_is_shared_between_agent_and_scoring_child(tmp_path: Path) -> None:
    """A scoring child writes a file to its /dev/shm (the host's, for CUDA IPC); a process
    in an agent's sandbox must not see it, so no signal can pass that way."""
    from rebench.sandbox import Isolation, SandboxConfig, make_sandbox

    if default_isolation() is not Isolation.BWRAP:
        pytest.skip("needs bubblewrap")
    name = f"rebench-signal-{time.monotonic_ns()}"
    scoring = make_sandbox(Isolation.BWRAP, SandboxConfig(workdir=tmp_path, gpu=True,
                                                          host_shm=True))
    agent = make_sandbox(Isolation.BWRAP, SandboxConfig(workdir=tmp_path, gpu=True))
    subprocess.run(scoring.wrap(["/bin/sh", "-c", f"echo 1 > /dev/shm/{name}"]), check=True)
    try:
        seen = subprocess.run(agent.wrap(["/bin/ls", "/dev/shm"]), capture_output=True,
                              text=True, check=True).stdout
        assert name not in seen
    finally:
        Path("/dev/shm", name).unlink(missing_ok=True)


def test_in_process_reference_time_is_stable(honest_reference_ms: float) -> None:
    again = [_in_process_ms("reference") for _ in range(2)]
    assert statistics.pstdev([honest_reference_ms, *again]) / honest_reference_ms < 0.1
