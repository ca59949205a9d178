"""A run under its budget: the hard stop, events, the clock, agent errors (fast fake scorer)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from rebench.agents.replay import ReplayAgent
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.records import RunStatus
from rebench.harness.run import create_run
from rebench.harness.session import Session
from rebench.sandbox import Isolation
from rebench.scoring.contract import ScoreKind


def replay_file(tmp_path: Path, actions: list[dict[str, object]]) -> str:
    path = tmp_path / f"actions-{uuid.uuid4().hex[:6]}.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return str(path)


def processes_with(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.usefixtures("fake_scorer")
def test_hard_stop_kills_detached_process(prepared_env: str, isolation: Isolation,
                                          tmp_path: Path) -> None:
    if isolation is Isolation.LOCAL:
        pytest.skip("local isolation cannot contain a setsid process")
    tag = f"{1000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"
    agent = ReplayAgent(replay_file(tmp_path, [
        {"action": "exec", "cmd": f"setsid nohup sleep {tag} >/dev/null 2>&1 &"},
        {"action": "sleep", "seconds": 60},
    ]))
    run = create_run(prepared_env, "cpu", agent.name, 1.5, isolation, root=tmp_path / "runs")
    start = time.monotonic()
    execute_run(run, agent)
    assert time.monotonic() - start < 15
    assert processes_with(tag) == []
    events = read_events(run.run_dir / "events.jsonl")
    # the t=0 score's own event comes whenever it is done (it runs beside the agent)
    kinds = [e.type for e in events if e.type != "initial_score"]
    assert kinds[:2] == ["run_start", "agent_start"] and kinds[-1] == "run_end"
    assert [e.type for e in events].count("initial_score") == 1
    stop = next(e for e in events if e.type == "hard_stop")
    assert stop.data["lateness_s"] < 1.0
    entries = run.entries()
    assert [e.kind for e in entries] == ["initial", "final"]
    assert entries[0].working_s == 0.0 and entries[1].working_s >= 1.5
    assert run.record.status is RunStatus.FINISHED


@pytest.mark.usefixtures("fake_scorer")
def test_events_record_every_action(prepared_env: str, isolation: Isolation,
                                    tmp_path: Path) -> None:
    agent = ReplayAgent(replay_file(tmp_path, [
        {"action": "exec", "cmd": "echo hello; echo oops >&2"},
        {"action": "write_file", "path": "notes.txt", "content": "abc"},
        {"action": "read_file", "path": "notes.txt"},
        {"action": "read_file", "path": "missing.txt"},
        {"action": "score"},
        {"action": "time_left"},
    ]))
    run = create_run(prepared_env, "cpu", agent.name, 120, isolation, root=tmp_path / "runs")
    execute_run(run, agent)
    events = read_events(run.run_dir / "events.jsonl")
    acts = [e for e in events if e.type in ("exec", "write_file", "read_file", "score")]
    assert [e.type for e in acts] == ["exec", "write_file", "read_file", "read_file", "score"]
    assert acts[0].data["stdout"] == "hello\n" and acts[0].data["stderr"] == "oops\n"
    assert acts[1].data["content_b64"] == "YWJj" and acts[2].data["bytes"] == 3
    assert "error" in acts[3].data
    assert acts[4].data["index"] == 1 and acts[4].data["valid"] is True
    assert [e.type for e in events].count("time_left") == 1
    working = [e.working_s for e in events]
    assert working == sorted(working) and all(e.wall_s >= 0 for e in events)
    assert [e.kind for e in run.entries()] == ["initial", "agent", "final"]


class RaisingAgent:
    name = "raising"

    def act(self, session: Session) -> None:
        session.exec("true")
        raise RuntimeError("the agent broke")


@pytest.mark.usefixtures("fake_scorer")
def test_agent_error_is_noted_and_run_finishes(prepared_env: str, isolation: Isolation,
                                               tmp_path: Path) -> None:
    run = create_run(prepared_env, "cpu", "raising", 60, isolation, root=tmp_path / "runs")
    execute_run(run, RaisingAgent())
    assert "the agent broke" in run.record.note
    assert run.record.status is RunStatus.FINISHED
    assert any(e.type == "agent_error" for e in read_events(run.run_dir / "events.jsonl"))


@pytest.mark.usefixtures("fake_scorer")
def test_actions_after_the_deadline_are_refused(prepared_env: str, isolation: Isolation,
                                                tmp_path: Path) -> None:
    from rebench.harness.session import OutOfTimeError

    run = create_run(prepared_env, "cpu", "x", 0.3, isolation, root=tmp_path / "runs")
    run.scorer.score(ScoreKind.INITIAL)
    session = Session(run)
    try:
        time.sleep(0.4)
        for action in (lambda: session.exec("true"), session.score,
                       lambda: session.write_file("a.txt", "x")):
            with pytest.raises(OutOfTimeError):
                action()
    finally:
        session.close()


@pytest.mark.usefixtures("fake_scorer")
def test_clock_frozen_until_the_session_opens(prepared_env: str, isolation: Isolation,
                                              tmp_path: Path) -> None:
    run = create_run(prepared_env, "cpu", "x", 60, isolation, root=tmp_path / "runs")
    time.sleep(0.2)
    assert run.working_s() == 0.0  # setup is not the agent's time
    session = Session(run)
    try:
        time.sleep(0.1)
        assert 0.05 < session.working_s() < 1.0
    finally:
        session.close()


@pytest.mark.usefixtures("fake_scorer")
def test_replayed_trajectory_reproduces_its_score_log(prepared_env: str, isolation: Isolation,
                                                      tmp_path: Path) -> None:
    from rebench.agents.replay import actions_from_events

    original = ReplayAgent(replay_file(tmp_path, [
        {"action": "exec", "cmd": "printf 'x = 1\\ny = 2\\n' >> solution.py"},
        {"action": "score"},
        {"action": "write_file", "path": "solution.py", "content": "a = 1\n" * 7},
        {"action": "score"},
    ]))
    root = tmp_path / "runs"
    first = create_run(prepared_env, "cpu", original.name, 60, isolation, root=root)
    execute_run(first, original)
    # a replay file made from the first run's events redoes it
    recorded = actions_from_events(read_events(first.run_dir / "events.jsonl"))
    again = ReplayAgent(replay_file(tmp_path, recorded))
    second = create_run(prepared_env, "cpu", again.name, 60, isolation, root=root)
    execute_run(second, again)

    def log(run_dir: Path) -> list[tuple[object, ...]]:
        from rebench.harness.score_log import read_log

        return [(e.kind, e.raw, e.valid, e.message)
                for e in read_log(run_dir / "protected" / "score_log.jsonl")]

    entries = log(first.run_dir)
    assert entries == log(second.run_dir)
    assert [kind for kind, *_ in entries] == ["initial", "agent", "agent", "final"]
    assert entries[2][3] == {"lines": 7} and entries[1][1] != entries[2][1]
