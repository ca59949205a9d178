"""The score request and reply across the scorer process boundary (harness/scorer_schema.py):
one versioned schema, checked on both sides; a record off the schema is the harness's
failure (an infrastructure error), never the agent's invalid score."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.discovery import load_spec
from rebench.core.errors import ScoringHarnessError
from rebench.core.score import ScoreResult
from rebench.harness import scorer_main, scorer_schema
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.records import Outcome, RunRecord, RunStatus
from rebench.harness.run import create_run
from rebench.harness.scorer_schema import (
    SCHEMA_VERSION,
    ScoreReply,
    ScoreRequest,
    ScorerSchemaError,
    read_reply,
    read_request,
    write_json,
)
from rebench.harness.scoring import official_score
from rebench.sandbox import Isolation
from rebench.scoring.contract import ScoreKind


def _request(tmp_path: Path) -> ScoreRequest:
    return ScoreRequest(env_id="toy_probe", profile="cpu", solution_dir=tmp_path / "snap",
                        assets_dir=tmp_path / "assets", scratch_dir=tmp_path / "scratch",
                        isolation=Isolation.BWRAP, hidden=(tmp_path / "runs",),
                        kind=ScoreKind.REQUESTED)


def _written(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "record.json"
    path.write_text(json.dumps(data))
    return path


def test_a_request_and_its_replies_round_trip(tmp_path: Path) -> None:
    request = _request(tmp_path)
    write_json(tmp_path / "request.json", request)
    assert read_request(tmp_path / "request.json") == request
    scored = ScoreReply(result=ScoreResult(raw=0.25, message={"score": 0.25},
                                           details={"n": 3}))
    write_json(tmp_path / "reply.json", scored)
    assert read_reply(tmp_path / "reply.json") == scored
    invalid = ScoreReply(result=ScoreResult.invalid("no answer"))
    write_json(tmp_path / "reply.json", invalid)
    back = read_reply(tmp_path / "reply.json").result
    assert back is not None and math.isnan(back.raw) and back.message == {"error": "no answer"}
    failed = ScoreReply(harness_error="KeyError: 'n'", traceback="Traceback ...")
    write_json(tmp_path / "reply.json", failed)
    assert read_reply(tmp_path / "reply.json") == failed


def test_another_schema_version_is_refused_on_both_sides(tmp_path: Path) -> None:
    request = {**_request(tmp_path).to_json(), "schema": SCHEMA_VERSION + 1}
    with pytest.raises(ScorerSchemaError, match="schema 2"):
        read_request(_written(tmp_path, request))
    unversioned = ScoreReply(harness_error="x").to_json()
    del unversioned["schema"]
    with pytest.raises(ScorerSchemaError, match="schema None"):
        read_reply(_written(tmp_path, unversioned))
    assert issubclass(ScorerSchemaError, ScoringHarnessError)  # the harness's failure


@pytest.mark.parametrize(("field", "value", "words"), [
    ("isolation", 1, "isolation must be str"),
    ("isolation", "docker", "not one of"),
    ("hidden", "/runs", "hidden must be list"),
    ("kind", "agents", "not one of"),
    ("profile", None, "profile must be str"),
])
def test_a_mistyped_request_field_is_refused(tmp_path: Path, field: str, value: object,
                                             words: str) -> None:
    request = {**_request(tmp_path).to_json(), field: value}
    with pytest.raises(ScorerSchemaError, match=words):
        read_request(_written(tmp_path, request))


def test_a_missing_or_unknown_field_is_refused(tmp_path: Path) -> None:
    request = _request(tmp_path).to_json()
    del request["kind"]
    with pytest.raises(ScorerSchemaError, match=r"missing fields \['kind'\]"):
        read_request(_written(tmp_path, request))
    with pytest.raises(ScorerSchemaError, match=r"unknown fields \['params'\]"):
        read_request(_written(tmp_path, {**_request(tmp_path).to_json(), "params": {}}))


@pytest.mark.parametrize("result", [
    {"raw": "0.5", "valid": True, "message": {}, "details": {}},
    {"raw": True, "valid": True, "message": {}, "details": {}},
    {"raw": 0.5, "valid": False, "message": {}, "details": {}},  # valid contradicts raw
    {"raw": 0.5, "valid": True, "message": [], "details": {}},
    {"raw": 0.5, "valid": True, "message": {}},
])
def test_a_mistyped_reply_is_refused(tmp_path: Path, result: dict[str, object]) -> None:
    with pytest.raises(ScorerSchemaError):
        read_reply(_written(tmp_path, {"schema": SCHEMA_VERSION, "result": result}))


def test_records_are_checked_when_written_too() -> None:
    with pytest.raises(ScorerSchemaError, match="env_id must be str"):
        ScoreRequest(env_id=Path("toy_probe"), profile="cpu",  # type: ignore[arg-type]
                     solution_dir=Path("/s"), assets_dir=Path("/a"), scratch_dir=Path("/t"),
                     isolation=Isolation.LOCAL)
    with pytest.raises(ScorerSchemaError, match="exactly one"):
        ScoreReply()
    with pytest.raises(ScorerSchemaError, match="raw must be a number"):
        ScoreReply(result=ScoreResult(raw="1.0"))  # type: ignore[arg-type]


def test_scorer_main_answers_a_request_off_the_schema_with_a_harness_error(
        tmp_path: Path) -> None:
    request = {**_request(tmp_path).to_json(), "schema": SCHEMA_VERSION + 1}
    result = tmp_path / "result.json"
    assert scorer_main.main([str(_written(tmp_path, request)), str(result)]) == 0
    reply = read_reply(result)
    assert reply.result is None and reply.harness_error is not None
    assert reply.harness_error.startswith("ScorerSchemaError: score request has schema 2")


def test_a_version_mismatch_is_an_infrastructure_failure_of_the_run(
        toy_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(toy_env)
    profile = spec.profile("cpu")
    snapshot = tmp_path / "snap"
    snapshot.mkdir()
    # the harness writes and reads schema 2; the scorer process it starts speaks schema 1
    monkeypatch.setattr(scorer_schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(ScoringHarnessError, match="schema"):
        official_score(spec, profile, snapshot, Isolation.LOCAL)
    run = create_run(toy_env, "cpu", "start", 30, Isolation.LOCAL, root=tmp_path / "runs")
    with pytest.raises(ScoringHarnessError):  # the final score failed twice, as any
        execute_run(run, make_agent("start"))  # trusted failure does (lifecycle.finish_run)
    record = RunRecord.load(run.run_dir / "run.json")
    assert record.status is RunStatus.FAILED and record.outcome is Outcome.INFRASTRUCTURE
    assert run.entries() == []  # nothing logged in the agent's name, not even a NaN
    errors = [e.data["during"] for e in read_events(run.run_dir / "events.jsonl")
              if e.type == "harness_error"]
    # the t=0 score, the start agent's own request and both tries of the final score
    assert errors == ["initial", "score", "final", "final"]
