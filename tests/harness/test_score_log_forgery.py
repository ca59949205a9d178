"""Attacks on the score log: a log made by hand (the old unkeyed sha256 chain could be
recomputed by anyone, so a self-made log passed `verify`), a log keyed with another key, a
spliced log, a truncated log. Also: harness faults inside a scorer are not the agent's NaN."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rebench.agents.base import make_agent
from rebench.core.errors import ScoringHarnessError
from rebench.harness import run as run_module
from rebench.harness.driver import execute_run
from rebench.harness.resume import verify_run
from rebench.harness.run import Run, create_run
from rebench.sandbox import Isolation
from rebench.scoring.contract import ScoreKind


def _finished_run(env: str, isolation: Isolation, root: Path) -> Run:
    run = create_run(env, "cpu", "start", 30, isolation, root=root)
    execute_run(run, make_agent("start"))
    assert verify_run(run.run_dir).ok
    return run


def _rechain_unkeyed(lines: list[str]) -> list[str]:
    """What a forger without the key can do: rewrite a line and recompute the chain with
    plain sha256, as the old log did."""
    out, prev = [], "0" * 64
    for line in lines:
        payload = json.loads(line)
        payload["prev_hash"] = prev
        body = {k: v for k, v in payload.items() if k != "hash"}
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        payload["hash"] = prev = hashlib.sha256(canonical.encode()).hexdigest()
        out.append(json.dumps(payload, sort_keys=True))
    return out


@pytest.mark.usefixtures("fake_scorer")
def test_a_self_made_log_fails_verify(prepared_env: str, isolation: Isolation,
                                      tmp_path: Path) -> None:
    run = _finished_run(prepared_env, isolation, tmp_path / "runs")
    lines = run.score_log_path.read_text().splitlines()
    forged = json.loads(lines[-1])
    forged["normalized"], forged["raw"] = 3.0, -9.0
    lines[-1] = json.dumps(forged)
    run.score_log_path.write_text("\n".join(_rechain_unkeyed(lines)) + "\n")
    report = verify_run(run.run_dir)
    assert not report.ok and "forged" in report.problems[0]


@pytest.mark.usefixtures("fake_scorer")
def test_a_log_from_another_run_fails_verify(prepared_env: str, isolation: Isolation,
                                             tmp_path: Path) -> None:
    """Splicing a valid log of another run (its own key) into this run."""
    first = _finished_run(prepared_env, isolation, tmp_path / "runs")
    second = _finished_run(prepared_env, isolation, tmp_path / "runs")
    second.score_log_path.write_bytes(first.score_log_path.read_bytes())
    assert not verify_run(second.run_dir).ok


@pytest.mark.usefixtures("fake_scorer")
def test_a_truncated_log_fails_verify(prepared_env: str, isolation: Isolation,
                                      tmp_path: Path) -> None:
    run = _finished_run(prepared_env, isolation, tmp_path / "runs")
    lines = run.score_log_path.read_text().splitlines()
    run.score_log_path.write_text("\n".join(lines[:-1]) + "\n")
    problems = verify_run(run.run_dir).problems
    assert any("truncated" in p for p in problems), problems


@pytest.mark.usefixtures("fake_scorer")
def test_a_log_under_another_master_key_fails_verify(
        prepared_env: str, isolation: Isolation, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    run = _finished_run(prepared_env, isolation, tmp_path / "runs")
    monkeypatch.setenv("REBENCH_KEY_FILE", str(tmp_path / "other.key"))
    assert not verify_run(run.run_dir).ok


def test_a_scorer_fault_is_a_harness_error_not_a_nan(
        prepared_env: str, isolation: Isolation, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise ScoringHarnessError("the scorer of triton_cumsum failed: KeyError: 'n'")

    run = create_run(prepared_env, "cpu", "start", 30, isolation, root=tmp_path / "runs")
    monkeypatch.setattr(run_module, "official_score", broken)
    with pytest.raises(ScoringHarnessError):
        run.scorer.score(ScoreKind.REQUESTED)
    assert run.entries() == []  # nothing logged in the agent's name


def test_scorer_main_reports_exceptions_as_harness_errors(tmp_path: Path) -> None:
    from rebench.harness import scorer_main
    from rebench.harness.scorer_schema import ScoreRequest, read_reply, write_json

    request, result = tmp_path / "request.json", tmp_path / "result.json"
    write_json(request, ScoreRequest(
        env_id="no_such_environment", profile="cpu", solution_dir=tmp_path,
        assets_dir=tmp_path, scratch_dir=tmp_path, isolation=Isolation.LOCAL))
    assert scorer_main.main([str(request), str(result)]) == 0
    reply = read_reply(result)
    assert reply.result is None
    assert reply.harness_error is not None and "no_such_environment" in reply.harness_error
