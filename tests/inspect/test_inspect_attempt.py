"""Full Inspect attempts at triton_cumsum with `mockllm` scripting the tool calls, on its
small `test` profile (N = 1e6: a scoring takes seconds; the start and the reference are as
far apart as on cpu, about 3.5 in ln ms).

1. `inspect eval rebench/triton_cumsum`-style: the model writes the reference solution through
   the bash tool, scores, submits; the Inspect score (the run's normalized score) is about 1
   and the run is in the run index (which `rebench report` reads).
2. `rebench run --agent inspect:...`-style: the model tries to read protected/ through bash
   and python and fails to; the run still finishes normally.

Anchors are timing-based, so this machine is calibrated first on that profile (one
scoring each of the starting and the reference solution).
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessageTool, Model, ModelOutput, get_model

from rebench.agents.inspect_agent import InspectAgent
from rebench.core.calibration import new_entry, save_entry
from rebench.core.discovery import environment_dir, environment_ids, load_spec
from rebench.core.paths import runs_root
from rebench.harness.driver import execute_run
from rebench.harness.evaluate import score_folder
from rebench.harness.index import index_path, list_runs
from rebench.harness.prepare import prepare_environment
from rebench.harness.records import RunStatus
from rebench.harness.run import create_run
from rebench.harness.workspace import materialize_solution
from rebench.inspect_ext import rebench_task
from rebench.sandbox import Isolation
from rebench.sandbox.bwrap import bwrap_available

ENV_ID = "triton_cumsum"
PROFILE = "test"
MOCK = "mockllm/model"

pytestmark = pytest.mark.slow


def _isolation() -> Isolation:
    return Isolation.BWRAP if bwrap_available() else Isolation.LOCAL


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> None:
    """triton_cumsum prepared, and this machine's anchors measured: one official scoring
    each of the starting and the reference solution, saved as this machine's calibration
    (what `rebench calibrate -n 1` saves; it also scores the reference twice more, as
    probes of a busy machine, which these wide bounds do not need)."""
    if ENV_ID not in environment_ids():
        pytest.skip(f"{ENV_ID} is not installed")
    spec = load_spec(ENV_ID)
    profile = spec.profile(PROFILE)
    prepare_environment(spec, profile)
    raws = {}
    for name in ("starting", "reference"):
        workspace = materialize_solution(spec, profile, name,
                                         tmp_path_factory.mktemp(f"calibrate-{name}") / "ws",
                                         _isolation())
        result = score_folder(spec, profile, workspace, _isolation())
        assert result.valid, result.details
        raws[name] = result.raw
    assert raws["reference"] < raws["starting"], raws
    save_entry(new_entry(spec, profile, [raws["starting"]], [raws["reference"]],
                         (round(os.getloadavg()[0], 2),)))


def mock_model(calls: list[tuple[str, dict[str, Any]]]) -> Model:
    """A mockllm model that makes exactly these tool calls, one per turn."""
    outputs = [ModelOutput.for_tool_call(MOCK, name, args) for name, args in calls]
    return get_model(MOCK, custom_outputs=outputs)


def write_files_command(folder: Path) -> str:
    """A bash command that recreates the files of `folder` in the working directory."""
    lines = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            rel = path.relative_to(folder)
            data = base64.b64encode(path.read_bytes()).decode()
            lines.append(f"mkdir -p '{rel.parent}' && echo {data} | base64 -d > '{rel}'")
    return "\n".join(lines) + "\nls -R"


def tool_outputs(log: EvalLog) -> list[str]:
    assert log.samples
    return [m.text for m in log.samples[0].messages if isinstance(m, ChatMessageTool)]


def test_reference_through_bash_scores_about_one(calibrated: None, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.json"  # the user's table (none is shipped): $ per 1M tokens
    prices.write_text(json.dumps({"models": {MOCK: {"input": 3.0, "output": 15.0}}}))
    monkeypatch.setenv("REBENCH_PRICES", str(prices))
    spec = load_spec(ENV_ID)
    recipe = spec.solutions["reference"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("bash", {"command": write_files_command(environment_dir(ENV_ID) / recipe.folder)}),
    ]
    if recipe.run:
        calls.append(("bash", {"command": " ".join(recipe.run)}))
    calls += [("score", {}), ("score_log", {}), ("submit", {"answer": "reference written"})]
    task = rebench_task(ENV_ID, profile=PROFILE, budget="20m", isolation=_isolation().value)
    log = inspect_eval(task, model=mock_model(calls), display="none",
                       log_dir=str(runs_root().parent / "inspect-logs"))[0]

    assert log.status == "success", log.error
    assert log.samples
    score = log.samples[0].scores["normalized_score"]  # type: ignore[index]
    meta = score.metadata or {}
    # Timing on a shared CPU is noisy (the anchors are one scoring each): near 1, far from 0.
    assert 0.6 <= float(score.value) <= 1.6, meta  # type: ignore[arg-type]
    assert [e["kind"] for e in meta["score_log"]] == ["initial", "agent", "final"]
    assert all(raw is not None and math.isfinite(raw) for raw in meta["raw_scores"])
    assert meta["anchors"]["source"] == "calibration"
    # The agent saw its score (triton_cumsum shows it) through score, then in score_log.
    scored, logged = (json.loads(text) for text in tool_outputs(log)[-2:])
    assert scored["valid"]
    # (the agent is shown it rounded to the feedback schema's places)
    assert scored["normalized"] == round(meta["score_log"][1]["normalized"], 4)
    assert [row["kind"] for row in logged] == ["initial", "agent"]

    indexed = {r.run_id: r for r, _ in list_runs(index_path(runs_root()))}
    record = indexed[meta["run_id"]]
    assert record.status is RunStatus.FINISHED
    assert record.agent == f"inspect:{MOCK}"
    assert record.final_normalized == pytest.approx(float(score.value))  # type: ignore[arg-type]
    assert record.extra.inspect is not None
    assert record.extra.inspect.eval_id == log.eval.eval_id
    # What the model calls cost: Inspect's usage of the sample, priced by the table.
    assert record.cost is not None, "no cost recorded"
    tokens = record.cost.tokens[MOCK]
    assert tokens["input_tokens"] > 0 and tokens["output_tokens"] > 0
    assert record.cost.dollars == pytest.approx(
        (3.0 * tokens["input_tokens"] + 15.0 * tokens["output_tokens"]
         + 3.0 * (tokens["input_tokens_cache_read"] + tokens["input_tokens_cache_write"]))
        / 1e6)
    # `rebench report` reads the same table.
    from rebench.analysis.sources import from_index

    table = from_index(index_path(runs_root()))
    assert meta["run_id"] in {run.run_id for run in table.runs}


@pytest.mark.skipif(not bwrap_available(), reason="hiding protected/ needs bubblewrap")
def test_reading_protected_through_tools_fails(calibrated: None) -> None:
    run = create_run(ENV_ID, PROFILE, f"inspect:{MOCK}", 600, Isolation.BWRAP)
    log_path = run.score_log_path
    snapshot_dir = run.protected / "snapshots"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("bash", {"command": f"cat ../protected/score_log.jsonl; cat {log_path}; "
                             f"ls -a {snapshot_dir} ../protected {runs_root()}; "
                             f"find {run.run_dir} /tmp -name score_log.jsonl 2>&1"}),
        ("python", {"code": f"print(open({str(log_path)!r}).read())"}),
        ("submit", {"answer": "gave up"}),
    ]
    agent = InspectAgent(MOCK, model=mock_model(calls))
    normalized = execute_run(run, agent)

    assert run.record.extra.inspect is not None
    log = read_eval_log(run.record.extra.inspect.log_location)
    outputs = tool_outputs(log)
    assert len(outputs) == 2  # bash, python (submit's result is not kept)
    assert "No such file or directory" in outputs[0]
    assert "FileNotFoundError" in outputs[1]
    first_line = log_path.read_text().splitlines()[0]
    for text in outputs:
        assert "snapshots/0000" not in text and first_line[:60] not in text
    # The run itself is intact and scored the starting solution: about 0.
    assert run.record.status is RunStatus.FINISHED
    assert [e.kind for e in run.entries()][:2] == ["initial", "final"]
    assert normalized < 0.5
    assert run.record.note == ""  # the agent did not fail
