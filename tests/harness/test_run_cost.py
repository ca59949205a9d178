"""What a run's model calls cost (issue 32): tokens per model from Inspect's usage records,
dollars from a price table the user keeps (none shipped), in run.json, the events and
`rebench show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rebench.cli_runs import cost_lines
from rebench.harness.costs import PriceTableError, load_prices, record_cost, run_cost
from rebench.harness.events import read_events
from rebench.harness.lifecycle import events_for
from rebench.harness.records import RunRecord
from rebench.harness.run import create_run
from rebench.sandbox import Isolation

USAGE = {"openai/gpt-x": {"input_tokens": 1_000_000, "output_tokens": 200_000,
                          "input_tokens_cache_read": 500_000, "total_tokens": 1_700_000},
         "mockllm/model": {"input_tokens": 10, "output_tokens": 5}}


def _prices(tmp_path: Path, models: dict[str, dict[str, float]]) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": models}))
    return path


def test_dollars_follow_the_table_and_unpriced_models_are_named(
        tmp_path: Path) -> None:
    path = _prices(tmp_path, {"openai/gpt-x": {"input": 2.0, "output": 10.0,
                                               "cache_read": 0.5}})
    partial = run_cost(USAGE, path)
    assert partial.dollars is None and partial.unpriced == ("mockllm/model",)
    assert partial.tokens["openai/gpt-x"]["output_tokens"] == 200_000
    full = run_cost({"openai/gpt-x": USAGE["openai/gpt-x"]}, path)
    assert full.dollars == pytest.approx(2.0 + 2.0 + 0.25)  # input, output, cache reads
    assert run_cost(USAGE, tmp_path / "none.json").unpriced == tuple(USAGE)
    (tmp_path / "bad.json").write_text("{\"models\": [1]}")
    with pytest.raises(PriceTableError, match="dollars per million"):
        load_prices(tmp_path / "bad.json")


def test_a_runs_cost_is_recorded_and_shown(prepared_env: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REBENCH_PRICES", str(_prices(tmp_path, {
        "openai/gpt-x": {"input": 2.0, "output": 10.0},
        "mockllm/model": {"input": 1.0, "output": 1.0}})))
    run = create_run(prepared_env, "cpu", "inspect:openai/gpt-x", 60.0, Isolation.LOCAL,
                     root=tmp_path / "runs")
    cost = record_cost(run, events_for(run), USAGE)
    assert cost.dollars == pytest.approx(2.0 + 2.0 + 1.0 + 15 / 1e6)  # cache reads at input
    saved = RunRecord.load(run.run_dir / "run.json").cost
    assert saved == cost
    (event,) = [e for e in read_events(run.run_dir / "events.jsonl") if e.type == "cost"]
    assert event.data["tokens"]["mockllm/model"]["output_tokens"] == 5
    lines = dict(cost_lines(saved))
    assert lines["tokens openai/gpt-x"].startswith("input 1,000,000, output 200,000")
    assert lines["cost"].startswith("$5.0000")


def test_a_broken_price_table_costs_the_dollars_not_the_record(
        prepared_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "prices.json"
    broken.write_text("not json")
    monkeypatch.setenv("REBENCH_PRICES", str(broken))
    run = create_run(prepared_env, "cpu", "inspect:x", 60.0, Isolation.LOCAL,
                     root=tmp_path / "runs")
    cost = record_cost(run, events_for(run), USAGE)
    assert cost.dollars is None and cost.tokens["mockllm/model"]["input_tokens"] == 10
    shown = dict(cost_lines(cost))["cost"]
    assert shown.startswith("unknown: price table") and "dollars per million" in shown
