"""Timing fidelity and calibration (cpu, offline): the official time of the reference is
close to the paper-style in-process time measured in the same test run, and a calibration
on a busy machine is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from env_bench import EnvBench
from triton_cumsum_helpers import CpuEnv

from rebench.core.calibration import find_interference
from rebench.core.errors import CalibrationError
from rebench.core.score import ScoreResult
from rebench.harness import evaluate

ENV_DIR = Path(__file__).parents[3] / "src" / "rebench" / "environments" / "triton_cumsum"


def _in_process_min_ms(cpu_env: CpuEnv) -> float:
    params = cpu_env.profile.params
    done = subprocess.run(
        [sys.executable, "-m", "rebench.environments.triton_cumsum.inprocess",
         "--solution-dir", str(ENV_DIR / "reference"), "--device", "cpu",
         "--n", str(params["n"]), "--calls", str(params["timed_calls"])],
        capture_output=True, text=True, check=True, env={**os.environ, "REBENCH_PROFILE": "cpu"},
    )
    return float(json.loads(done.stdout.splitlines()[-1])["min_ms"])


def test_official_time_of_the_reference_is_close_to_the_in_process_time(
        env_bench: EnvBench, cpu_env: CpuEnv) -> None:
    """Target on idle cores: within 5% + 0.05 ms. A CI machine is busy and the two timings
    cannot run at the same moment, so the bounds here are wide (on a 2-core machine at load
    18 one pair came out 100 ms official vs 146 ms in-process, 15x the idle time): each side
    takes the better of two (interference only adds time). The official side is the
    session's two scorings of the reference that the local anchors are made of
    (tests/env_bench.py; the golden and cheat tests share them), made in the same pass of
    the same session. What fails is a protocol that adds a multiple of the work, or one
    faster than the work."""
    references = env_bench.anchor_results("triton_cumsum")[1]
    assert len(references) >= 2 and all(r.valid for r in references), references
    official = [r.message["ms"] for r in references]
    in_process = [_in_process_min_ms(cpu_env) for _ in range(2)]
    assert min(in_process) * 0.5 <= min(official) <= min(in_process) * 2 + 2.0, (
        official, in_process)


def test_a_quiet_calibration_shows_no_interference() -> None:
    found = find_interference([5.57, 5.58, 5.58], [1.93, 1.94, 1.93], (1.93, 1.94),
                              (0.3, 0.4), sd_limit=0.05, cores=2)
    assert not found.found, found.reasons


@pytest.mark.parametrize(("starting", "reference", "probes", "load", "reason"), [
    ([5.5, 5.9, 6.5], [1.93, 1.94, 1.93], (1.93, 1.94), (0.3, 0.4), "starting samples"),
    ([5.57, 5.58, 5.58], [1.93, 1.94, 1.93], (1.93, 2.30), (0.3, 0.4), "probe moved"),
    ([5.57, 5.58, 5.58], [1.93, 1.94, 1.93], (1.93, 1.94), (0.3, 4.5), "load average"),
])
def test_interference_is_found(starting: list[float], reference: list[float],
                               probes: tuple[float, float], load: tuple[float, float],
                               reason: str) -> None:
    found = find_interference(starting, reference, probes, load, sd_limit=0.05, cores=2)
    assert found.found and any(reason in r for r in found.reasons), found.reasons


def test_calibrate_refuses_on_a_busy_machine(cpu_env: CpuEnv, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The start's samples spread like a loaded 2-core machine's, twice: measured again
    after a wait, then refused; nothing is saved."""
    busy = [1.93, 5.5, 6.5, 6.0, 1.93, 1.95, 1.94, 1.94]  # probe, 3 start, 3 + probe
    raws = iter(busy * 2)
    waits: list[float] = []

    def fake_score(*_args: object) -> ScoreResult:
        return ScoreResult(raw=next(raws), message={})

    monkeypatch.setattr(evaluate, "score_folder", fake_score)
    monkeypatch.setattr(evaluate, "materialize_solution", lambda *_a: tmp_path)
    monkeypatch.setattr(evaluate, "_wait_for_quiet", waits.append)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    with pytest.raises(CalibrationError, match="busy"):
        evaluate.calibrate(cpu_env.spec, cpu_env.profile, 3, cpu_env.isolation, save=False)
    assert len(waits) == 1 and next(raws, None) is None  # two measurements, one wait


def test_calibrate_measures_again_once_the_machine_is_quiet(
        cpu_env: CpuEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    busy = [1.93, 5.5, 6.5, 6.0, 1.93, 1.95, 1.94, 1.94]
    quiet = [1.93, 5.57, 5.58, 5.58, 1.93, 1.94, 1.93, 1.94]
    raws = iter(busy + quiet)
    monkeypatch.setattr(evaluate, "score_folder",
                        lambda *_a: ScoreResult(raw=next(raws), message={}))
    monkeypatch.setattr(evaluate, "materialize_solution", lambda *_a: tmp_path)
    monkeypatch.setattr(evaluate, "_wait_for_quiet", lambda _s: None)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    said: list[str] = []
    entry = evaluate.calibrate(cpu_env.spec, cpu_env.profile, 3, cpu_env.isolation,
                               progress=said.append, save=False)
    assert not entry.interference and entry.starting_raw == 5.58
    assert any("measuring again" in m for m in said)


def test_calibrate_keeps_busy_anchors_only_when_allowed(cpu_env: CpuEnv, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With --allow-busy the anchors are kept, with the warning shown and recorded."""
    raws = iter([1.93, 5.5, 6.5, 6.0, 1.93, 1.95, 1.94, 1.94])
    monkeypatch.setattr(evaluate, "score_folder",
                        lambda *_a: ScoreResult(raw=next(raws), message={}))
    monkeypatch.setattr(evaluate, "materialize_solution", lambda *_a: tmp_path)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    said: list[str] = []
    entry = evaluate.calibrate(cpu_env.spec, cpu_env.profile, 3, cpu_env.isolation,
                               progress=said.append, save=False, allow_busy=True)
    assert any(m.startswith("WARNING") and "busy" in m for m in said)
    assert entry.interference and "starting samples" in entry.interference[0]
