"""The Inspect path (`inspect eval rebench/<env>`) and the CLI path (`rebench run --agent
inspect:...`) drive the same run lifecycle (harness/lifecycle.py): the same scripted
`mockllm` agent on toy_probe gives the same sequence of events in both run folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.model import Model, ModelOutput, get_model

from rebench.agents.inspect_agent import InspectAgent
from rebench.core.paths import runs_root
from rebench.harness.driver import execute_run
from rebench.harness.events import read_events
from rebench.harness.records import RunStatus
from rebench.harness.resume import verify_run
from rebench.harness.run import Run, create_run, open_run
from rebench.inspect_ext import _registry, rebench_task  # noqa: F401 (_registry: below)
from rebench.sandbox import Isolation

# Inspect's eval loads rebench's entry point (_registry), whose task list is made when it is
# first imported: imported here, before toy_env puts the fixture environments on the path,
# it lists the shipped environments only, as tests/inspect/test_inspect_registry.py expects.

MOCK = "mockllm/model"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("bash", {"command": "echo '{\"x\": 15}' > answer.json"}),
    ("score", {}),
    ("submit", {"answer": "done"}),
]


def _model() -> Model:
    outputs = [ModelOutput.for_tool_call(MOCK, name, args) for name, args in CALLS]
    return get_model(MOCK, custom_outputs=outputs)


# Events whose place depends on timing, not on the path: the t=0 score runs beside the
# agent (where it lands among the agent's events is a race), and Inspect's measured waiting
# time is credited as clock_pause whenever the model call waited at all.
TIMING = ("initial_score", "clock_pause")


def _sequence(run: Run) -> list[str]:
    kinds = [e.type for e in read_events(run.run_dir / "events.jsonl")]
    assert kinds.count("initial_score") == 1, kinds
    return [k for k in kinds if k not in TIMING]


def test_the_same_agent_gives_the_same_events_on_both_paths(toy_env: str,
                                                            tmp_path: Path) -> None:
    cli = create_run(toy_env, "cpu", f"inspect:{MOCK}", 600, Isolation.BWRAP)
    execute_run(cli, InspectAgent(MOCK, model=_model()))

    task = rebench_task(toy_env, profile="cpu", budget=600, isolation="bwrap")
    log = inspect_eval(task, model=_model(), display="none", log_dir=str(tmp_path / "logs"))[0]
    assert log.status == "success", log.error
    assert log.samples
    meta = log.samples[0].scores["normalized_score"].metadata or {}  # type: ignore[index]
    inspected = open_run(runs_root() / meta["run_id"])

    # The agent's actions, then its turn ended before the final score on both paths (the
    # CLI path's Inspect scorer ends the driver's turn: Session.end_turn).
    assert _sequence(cli) == _sequence(inspected) == [
        "run_start", "agent_start", "exec", "score", "cost", "agent_end", "final_score",
        "usage", "run_end"]
    for run in (cli, inspected):
        assert run.record.status is RunStatus.FINISHED
        assert run.record.agent == f"inspect:{MOCK}"
        assert [e.kind for e in run.entries()] == ["initial", "agent", "final"]
        assert verify_run(run.run_dir).ok
    assert cli.record.final_normalized == inspected.record.final_normalized
