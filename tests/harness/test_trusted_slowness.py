"""The harness's own slowness is never the agent's: a slow t=0 score does not cost the agent
working time, a score asked for before the deadline verifies however long the harness
took, a trusted scorer past its deadline or memory bound is a harness error (retried for
the final score, never the agent's NaN). The slowness comes from fixtures, not real load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from rebench.agents.replay import ReplayAgent
from rebench.core import hardware
from rebench.core.errors import ScoringHarnessError
from rebench.core.hardware import load_stretch
from rebench.core.score import ScoreResult
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.records import Outcome, RunStatus
from rebench.harness.resume import verify_run
from rebench.harness.run import create_run
from rebench.harness.scorer_process import (
    TrustedMemoryError,
    TrustedTimeoutError,
    watch_scorer,
)
from rebench.sandbox import Isolation


def fake_official_score(spec: object, profile: object, snapshot_dir: Path,
                        isolation: object, timeout_s: float | None = None,
                        kind: object = None) -> ScoreResult:
    """Instant: raw = lines of solution.py / 100."""
    del spec, profile, isolation, timeout_s, kind
    lines = len((snapshot_dir / "solution.py").read_text().splitlines())
    return ScoreResult(raw=lines / 100, message={"lines": lines})


def _replay(tmp_path: Path, actions: list[dict[str, object]]) -> ReplayAgent:
    path = tmp_path / f"actions-{uuid.uuid4().hex[:6]}.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return ReplayAgent(str(path))


def _python(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_scorer_past_its_deadline_is_the_harness_fault() -> None:
    proc = _python("import time; time.sleep(30)")
    began = time.monotonic()
    with pytest.raises(TrustedTimeoutError, match="not the submission's fault"):
        watch_scorer(proc, timeout_s=0.5, memory_mb=4096)
    assert time.monotonic() - began < 5 and proc.poll() is not None


def test_a_scorer_past_its_memory_bound_is_stopped() -> None:
    proc = _python("x = bytearray(400 << 20); x[::4096] = b'1' * len(x[::4096]); "
                   "import time; time.sleep(30)")
    with pytest.raises(TrustedMemoryError, match="above its bound"):
        watch_scorer(proc, timeout_s=30, memory_mb=200)
    assert proc.poll() is not None


def test_a_finished_scorer_reports_its_usage() -> None:
    proc = _python("sum(range(3_000_000)); x = bytearray(50 << 20)")
    usage = watch_scorer(proc, timeout_s=30, memory_mb=4096)
    assert proc.returncode == 0 and usage.cpu_s > 0 and usage.wall_s > 0
    details = usage.to_details()
    assert {"scorer_cpu_s", "load_before", "load_after", "contended"} <= set(details)


def test_the_deadline_stretches_with_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (6.0, 6.0, 6.0))
    assert load_stretch(2) == 3.0
    monkeypatch.setattr(os, "getloadavg", lambda: (40.0, 6.0, 6.0))
    assert load_stretch(2) == hardware.MAX_LOAD_STRETCH
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 6.0, 6.0))
    assert load_stretch(2) == 1.0


class SlowInitialScorer:
    """The fake scorer, with the t=0 score taking `delay_s` (a busy machine)."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def __call__(self, spec: object, profile: object, snapshot_dir: Path, isolation: object,
                 timeout_s: float | None = None, kind: object = None) -> ScoreResult:
        if getattr(kind, "value", None) == "initial":
            time.sleep(self.delay_s)
        return fake_official_score(spec, profile, snapshot_dir, isolation, timeout_s, kind)


def test_a_score_asked_during_a_slow_t0_score_costs_no_working_time(
        prepared_env: str, isolation: Isolation, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4-second budget, a t=0 score of 6 seconds, a score asked at once: it waits for
    the t=0 score on a paused clock, is logged at the time it was asked for, and the run
    verifies."""
    monkeypatch.setattr("rebench.harness.run.official_score", SlowInitialScorer(6.0))
    agent = _replay(tmp_path, [{"action": "score"}])
    run = create_run(prepared_env, "cpu", agent.name, 4.0, isolation, root=tmp_path / "runs")
    execute_run(run, agent)
    entries = run.entries()
    assert [e.kind for e in entries] == ["initial", "agent", "final"]
    asked = entries[1]
    assert asked.working_s < 2.0, asked.working_s
    assert asked.details["harness_wait_s"] > 3.0
    score_event = next(e for e in read_events(run.run_dir / "events.jsonl")
                       if e.type == "score")
    assert score_event.data["harness_wait_s"] > 3.0
    assert run.record.working_s_used < 4.0
    report = verify_run(run.run_dir)
    assert report.ok, report.problems


class FailingFinalScorer:
    """The fake scorer whose final score fails `failures` times with a harness error."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    def __call__(self, spec: object, profile: object, snapshot_dir: Path, isolation: object,
                 timeout_s: float | None = None, kind: object = None) -> ScoreResult:
        if getattr(kind, "value", None) == "final" and self.failures > 0:
            self.failures -= 1
            raise TrustedTimeoutError("the trusted scorer ran past its deadline")
        return fake_official_score(spec, profile, snapshot_dir, isolation, timeout_s, kind)


def test_a_final_score_that_times_out_once_is_retried(
        prepared_env: str, isolation: Isolation, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rebench.harness.run.official_score", FailingFinalScorer(1))
    agent = _replay(tmp_path, [])
    run = create_run(prepared_env, "cpu", agent.name, 5.0, isolation, root=tmp_path / "runs")
    execute_run(run, agent)
    assert run.record.status is RunStatus.FINISHED
    assert [e.kind for e in run.entries()] == ["initial", "final"]
    errors = [e for e in read_events(run.run_dir / "events.jsonl")
              if e.type == "harness_error"]
    assert [e.data["during"] for e in errors] == ["final"]


def test_a_final_score_that_keeps_failing_is_not_the_agents_nan(
        prepared_env: str, isolation: Isolation, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rebench.harness.run.official_score", FailingFinalScorer(5))
    agent = _replay(tmp_path, [])
    run = create_run(prepared_env, "cpu", agent.name, 5.0, isolation, root=tmp_path / "runs")
    with pytest.raises(ScoringHarnessError):
        execute_run(run, agent)
    assert run.record.status is RunStatus.FAILED
    assert run.record.outcome is Outcome.INFRASTRUCTURE  # the harness's, not the agent's
    assert [e.kind for e in run.entries()] == ["initial"]  # nothing logged as the agent's
