"""Runs on disk outlive the code that wrote them: a committed run folder (old_run/, a
finished toy_probe run written by rebench on 2026-12-02, before the run record's fields
were typed) still loads, verifies and reports, and its records read back to the same JSON.

old_run/score-log.key is that folder's master key (a test key, made for it): without it
the score log's hash chain cannot verify. The run: a replay agent wrote x=3, asked for a
score, wrote x=15, asked again (toy_probe hides scores: the requested ones check validity
only); the final score of x=15 counts (aggregation LAST)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from rebench.analysis.sources import from_run_dirs
from rebench.core.normalize import Anchors, AnchorSource
from rebench.core.spec import Aggregation, Direction
from rebench.harness.records import (
    Outcome,
    RunRecord,
    RunStatus,
    ScoreEntry,
    classify,
    valid_rate,
)
from rebench.harness.resume import verify_run
from rebench.harness.run import open_run
from rebench.harness.run_values import BatchLanding, InspectLink, RecordError, RunCost, RunExtra
from rebench.harness.score_log import read_log
from rebench.sandbox import Isolation
from rebench.scoring import ScoreKind

OLD = Path(__file__).resolve().parent / "old_run"
RUN_ID = "toy_probe-replay-actions-jsonl-20261202T163556-3ab3b5"


@pytest.fixture
def old_run(toy_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The committed run, copied under a runs root of its own, with its master key."""
    del toy_env  # discoverable and prepared: open_run loads its spec
    root = tmp_path / "runs"
    shutil.copytree(OLD / RUN_ID, root / RUN_ID)
    monkeypatch.setenv("REBENCH_KEY_FILE", str(OLD / "score-log.key"))
    return root / RUN_ID


def test_the_old_record_reads_back_to_the_same_json(old_run: Path) -> None:
    stored = json.loads((old_run / "run.json").read_text())
    record = RunRecord.load(old_run / "run.json")
    assert record.to_json() == stored
    assert record.status is RunStatus.FINISHED and record.outcome is Outcome.OK
    assert record.direction is Direction.HIGHER
    for line in (old_run / "protected" / "score_log.jsonl").read_text().splitlines():
        data = json.loads(line)
        data.pop("hash")
        assert ScoreEntry.from_json(data).to_json() == data


def test_the_old_run_opens_and_verifies(old_run: Path) -> None:
    run = open_run(old_run)
    assert run.isolation is Isolation.BWRAP
    assert run.anchors == run.record.anchors == Anchors(-10.0, 0.0, AnchorSource.PROFILE_DEFAULT,
                                                       "any")
    assert run.record.aggregation is Aggregation.LAST
    assert run.record.extra == RunExtra() and run.record.cost is None
    report = verify_run(old_run)
    assert report.ok, report.problems
    assert (report.entries, report.events) == (4, 10)
    entries = read_log(run.score_log_path, verify=True)
    assert [e.kind for e in entries] == ["initial", "agent", "agent", "final"]
    assert [e.kind for e in entries] == [ScoreKind.INITIAL, ScoreKind.REQUESTED,
                                         ScoreKind.REQUESTED, ScoreKind.FINAL]
    assert classify(run.record, entries) is Outcome.OK
    assert valid_rate(entries) == run.record.valid_rate == 1.0
    assert run.aggregate_normalized() == pytest.approx(run.record.final_normalized)


def test_the_old_run_is_in_the_report(old_run: Path) -> None:
    table = from_run_dirs(old_run.parent)
    assert table.problems == ()
    (run,) = table.runs
    assert run.run_id == RUN_ID and run.time_limit_s == 120.0
    assert [e.kind for e in run.events] == ["initial", "agent", "agent", "final"]
    final = run.events[-1]
    assert final.valid and math.isclose(final.normalized, 0.543, abs_tol=1e-9)


# Records with every optional field filled (cost, usage, each key of `extra` the harness
# writes, other anchor sources, local isolation, a failed run), written on 2026-12-04 by
# the version before the record's fields were typed: an Inspect sample's run that crashed
# before its scorer, and a CLI `inspect:` run landed from a Ray node whose agent raised.
OLD_RECORDS = Path(__file__).resolve().parent / "old_records"
SHOWN = {
    "inspect-sample-crashed.json": [
        ("tokens openai/gpt-x", "input 1,200, output 300, cache read 0"),
        ("tokens mockllm/model", "input 10, output 5, cache read 0"),
        ("cost", "unknown: no price for mockllm/model (add it to the price table: "
                 "docs/inspect.md)"),
        ("agent cpu", "41.5 s"), ("scoring", "12.2 cpu s, 30.5 wall s over 2 scores"),
        ("gpu", "not measured"),
        ("anchors", "4.1250 -> 2.5000: calibrated on cpu:AMD EPYC x2")],
    "batch-agent-error.json": [
        ("tokens openai/gpt-x", "input 1,200, output 300, cache read 0"),
        ("cost", "$0.0054 (prices: /home/user/.cache/rebench/prices.json)"),
        ("agent cpu", "not counted (no process group with CPU accounting: local isolation)"),
        ("scoring", "1.5 cpu s, 2.2 wall s over 1 scores"), ("gpu", "not measured"),
        ("anchors", "-10.0000 -> 0.0000: measured by prepare on the setting it drew, on any")],
}


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_old_records_with_every_field_read_back_and_show(name: str) -> None:
    from rebench.cli_runs import cost_lines, usage_lines
    from rebench.cli_tables import anchors_text

    stored = json.loads((OLD_RECORDS / name).read_text())
    record = RunRecord.load(OLD_RECORDS / name)
    assert record.to_json() == stored
    assert RunRecord.from_json(record.to_json()).to_json() == stored
    assert record.crashed
    shown = [*cost_lines(record.cost), *usage_lines(record.usage),
             ("anchors", anchors_text(record.anchors))]
    assert shown == SHOWN[name]


def test_old_records_read_as_typed_values() -> None:
    sample = RunRecord.load(OLD_RECORDS / "inspect-sample-crashed.json")
    assert sample.isolation is Isolation.BWRAP and sample.aggregation is Aggregation.BEST
    assert sample.anchors == Anchors(4.125, 2.5, AnchorSource.CALIBRATION, "cpu:AMD EPYC x2")
    assert isinstance(sample.cost, RunCost) and sample.cost.unpriced == ("mockllm/model",)
    assert sample.cost.dollars is None and sample.cost.tokens["mockllm/model"]["input_tokens"] == 10
    assert sample.extra.crashed and sample.extra.agent_traceback is None
    assert sample.extra.inspect == InspectLink(
        task="rebench/fix_embedding", model="openai/gpt-x", eval_id="Hq3m9Lk2", run_id="Zx81Pq",
        sample_uuid="a9Bc", epoch=1)  # its log_location is null, written as such
    batch = RunRecord.load(OLD_RECORDS / "batch-agent-error.json")
    assert batch.isolation is Isolation.LOCAL and batch.aggregation is Aggregation.LAST
    assert batch.cost is not None and batch.cost.dollars == 0.0054
    assert batch.extra.batch == BatchLanding("b-20261204", 4, 2, ("node 10.0.0.2 lost",), True,
                                             "10.0.0.3", "n3", "worker-3", 0)
    assert batch.extra.inspect is not None and batch.extra.inspect.status == "error"
    assert batch.extra.agent_traceback and batch.extra.agent_traceback.endswith("boom")


@pytest.mark.parametrize(("path", "value", "message"), [
    (("isolation",), "docker", r"isolation: 'docker' is not one of bwrap, local"),
    (("aggregation",), "mean", r"aggregation: 'mean' is not one of best, last"),
    (("anchors", "source"), "guess", r"anchors.source: 'guess' is not one of"),
    (("anchors", "starting_raw"), "1.0", r"anchors.starting_raw: expected a number, not str"),
    (("cost", "dollars"), "free", r"cost.dollars: expected a number"),
    (("extra", "batch", "tries"), True, r"extra.batch.tries: expected an integer, not bool"),
    (("extra", "inspect", "epoch"), "1", r"extra.inspect.epoch: expected an integer"),
    (("extra", "unknown_key"), 1, r"extra: unknown fields \['unknown_key'\]"),
])
def test_a_malformed_record_is_refused_naming_the_field(
        path: tuple[str, ...], value: object, message: str) -> None:
    data = json.loads((OLD_RECORDS / "batch-agent-error.json").read_text())
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(RecordError, match=message):
        RunRecord.from_json(data)
    missing = json.loads((OLD_RECORDS / "batch-agent-error.json").read_text())
    del missing["anchors"]["hardware"]
    with pytest.raises(RecordError, match="anchors: missing field 'hardware'"):
        RunRecord.from_json(missing)
