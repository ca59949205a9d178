"""Every run that stops gets an outcome (the agent's result or the harness's failure) and
the share of the agent's scored submissions that were valid (issue 32), in run.json, the
run_end event, `rebench runs` and `rebench show`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.normalize import Anchors, AnchorSource
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.records import (
    Outcome,
    RunRecord,
    RunStatus,
    ScoreEntry,
    classify,
    valid_rate,
)
from rebench.harness.run import create_run
from rebench.harness.run_values import RunExtra
from rebench.sandbox import Isolation


def _entry(kind: str, valid: bool, check_only: bool = False) -> ScoreEntry:
    return ScoreEntry(index=0, wall_time="", wall_s=0.0, working_s=0.0,
                      raw=1.0 if valid and not check_only else math.nan,
                      normalized=0.5 if valid and not check_only else math.nan,
                      valid=valid and not check_only, kind=kind,
                      message={"valid": valid} if check_only else {},
                      details={"check_only": True} if check_only else {},
                      snapshot="", prev_hash="")


def _record(status: RunStatus, crashed: str | None = None) -> RunRecord:
    return RunRecord(run_id="r", env_id="e", env_version="1", profile="cpu", agent="a", seed=0,
                     budget_s=60.0, hardware="h",
                     anchors=Anchors(1.0, 0.0, AnchorSource.PROFILE_DEFAULT, "h"),
                     isolation=Isolation.LOCAL, created_at="", status=status,
                     extra=RunExtra(crashed=crashed))


def test_the_outcome_follows_the_status_and_the_score_log() -> None:
    start = _entry("initial", True)
    finished = _record(RunStatus.FINISHED)
    assert classify(finished, [start, _entry("agent", False), _entry("final", True)]) is (
        Outcome.OK)
    assert classify(finished, [start, _entry("agent", False), _entry("final", False)]) is (
        Outcome.AGENT_INVALID)
    assert classify(finished, [_entry("final", True)]) is Outcome.INFRASTRUCTURE  # no t=0
    assert classify(_record(RunStatus.FAILED), [start]) is Outcome.INFRASTRUCTURE
    assert classify(_record(RunStatus.FINISHED, crashed="x"), [start, _entry("final", True)]
                    ) is Outcome.INFRASTRUCTURE
    assert classify(_record(RunStatus.INTERRUPTED), [start]) is Outcome.ABORTED


def test_the_valid_rate_counts_the_agents_submissions_and_validity_checks() -> None:
    start = _entry("initial", True)
    assert valid_rate([start]) is None
    assert valid_rate([start, _entry("agent", False), _entry("final", True)]) == 0.5
    # a hidden-score environment's requested score only checks validity: it counts by it
    checks = [start, _entry("agent", True, check_only=True),
              _entry("agent", False, check_only=True), _entry("final", True)]
    assert valid_rate(checks) == pytest.approx(2 / 3)


def test_a_start_run_is_ok_with_every_submission_valid(
        prepared_env: str, fake_scorer: None, isolation: Isolation, tmp_path: Path) -> None:
    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"action": "score"}) + "\n")
    run = create_run(prepared_env, "cpu", f"replay:{actions}", 30.0, isolation,
                     root=tmp_path / "runs")
    execute_run(run, make_agent(f"replay:{actions}"))
    record = RunRecord.load(run.run_dir / "run.json")
    assert record.outcome is Outcome.OK and record.valid_rate == 1.0
    end = [e for e in read_events(run.run_dir / "events.jsonl") if e.type == "run_end"]
    assert end[0].data["outcome"] == "ok" and end[0].data["valid_rate"] == 1.0


def test_a_run_with_no_valid_submission_is_the_agents(
        prepared_env: str, fake_scorer: None, isolation: Isolation, tmp_path: Path) -> None:
    actions = tmp_path / "actions.jsonl"
    actions.write_text("".join(json.dumps(a) + "\n" for a in (
        {"action": "exec", "cmd": "rm solution.py"}, {"action": "score"})))
    run = create_run(prepared_env, "cpu", f"replay:{actions}", 30.0, isolation,
                     root=tmp_path / "runs")
    execute_run(run, make_agent(f"replay:{actions}"))
    record = RunRecord.load(run.run_dir / "run.json")
    assert record.outcome is Outcome.AGENT_INVALID and record.valid_rate == 0.0


def test_the_report_leaves_infrastructure_failures_out_and_says_so(tmp_path: Path) -> None:
    from rebench.analysis.sources import LeftOut, left_out_kind

    record = _record(RunStatus.FINISHED)
    assert left_out_kind(record, tmp_path) is None
    record.outcome = Outcome.INFRASTRUCTURE
    kind, why = left_out_kind(record, tmp_path) or (None, "")
    assert kind is LeftOut.INFRASTRUCTURE and "infrastructure" in why
