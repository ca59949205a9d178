"""The tidy table from run directories, the run index and CSV files."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from rebench.analysis.metrics import final_score
from rebench.analysis.sources import CsvFormatError, from_csv, from_index, from_run_dirs, write_csv
from rebench.core.spec import Aggregation
from rebench.harness.records import RunStatus

MakeCsv = Callable[[Sequence[dict[str, object]]], Path]
WriteRun = Callable[..., Path]  # the make_run fixture of conftest.py


def test_run_dirs_become_tidy_rows(runs_dir: Path, make_run: WriteRun) -> None:
    make_run("r1", "triton_cumsum", "reference", 60.0, [(0.0, 0.0), (30.0, 0.7), (60.2, 1.0)])
    make_run("r2", "small_scaling_law", "start", 60.0, [(0.0, 0.3), (59.0, math.nan)],
             aggregation="last")
    table = from_run_dirs(runs_dir)
    assert [r.run_id for r in table.runs] == ["r2", "r1"]  # sorted by environment
    events = table.events()
    assert len(events) == 5
    row = events[-1]
    assert (row.env_id, row.agent, row.time_limit_s, row.working_s, row.kind) == (
        "triton_cumsum", "reference", 60.0, 60.2, "final")
    scaling = table.runs[0]
    assert scaling.rule.aggregation is Aggregation.LAST
    assert not scaling.rule.score_visible  # the paper's rule: the environment is not installed
    assert not events[1].valid and math.isnan(events[1].normalized)
    assert final_score(scaling) == 0.3  # the last *valid* score
    assert table.problems == ()


def test_tampered_or_empty_runs_are_left_out_with_a_reason(
    runs_dir: Path, make_run: WriteRun
) -> None:
    run_dir = make_run("bad", "triton_cumsum", "x", 60.0, [(0.0, 0.0), (10.0, 0.2)])
    log = run_dir / "protected" / "score_log.jsonl"
    log.write_text(log.read_text().replace('"normalized": 0.2', '"normalized": 9.0'))
    make_run("empty", "triton_cumsum", "x", 60.0, [])
    (runs_dir / "junk").mkdir()
    (runs_dir / "junk" / "run.json").write_text("{not json")
    make_run("good", "triton_cumsum", "x", 60.0, [(0.0, 0.0)])
    make_run("busy", "triton_cumsum", "x", 60.0, [(0.0, 0.0)], status=RunStatus.RUNNING)
    table = from_run_dirs(runs_dir)
    assert [r.run_id for r in table.runs] == ["good"]
    text = " ".join(table.problems)
    assert "bad: score log unreadable" in text and "altered" in text
    assert "empty: no official score" in text and "junk: run.json unreadable" in text
    assert "busy: status running, not finished" in text


def test_run_index(runs_dir: Path, make_run: WriteRun) -> None:
    from rebench.harness.index import index_path, reindex

    make_run("r1", "triton_cumsum", "a", 60.0, [(0.0, 0.0), (50.0, 0.5)])
    make_run("r2", "triton_cumsum", "a", 60.0, [(0.0, 0.0)])
    assert reindex(runs_dir) == 2
    table = from_index(index_path(runs_dir))
    assert sorted(r.run_id for r in table.runs) == ["r1", "r2"]


def test_csv_reads_external_runs(make_csv: MakeCsv) -> None:
    path = make_csv([
        {"env": "fix_embedding", "agent": "o1", "run_id": "a", "time_limit_s": 7200,
         "working_s": 100, "normalized": 0.4},
        {"env": "fix_embedding", "agent": "o1", "run_id": "a", "time_limit_s": 7200,
         "working_s": 7200, "normalized": ""},
        {"env": "small_scaling_law", "agent": "o1", "run_id": "b", "time_limit_s": 7200,
         "working_s": 7200, "normalized": -0.2},
    ])
    table = from_csv(path)
    by_id = {r.run_id: r for r in table.runs}
    assert final_score(by_id["a"]) == 0.4  # the empty (invalid) final score does not count
    assert by_id["b"].events[0].normalized == 0.0  # floored at 0, like every normalized score
    assert by_id["b"].rule.aggregation is Aggregation.LAST
    assert by_id["a"].events[1].kind == "external"


@pytest.mark.parametrize("row, message", [
    ({"env": "e", "agent": "a", "run_id": "r", "time_limit_s": "x", "working_s": 1,
      "normalized": 0.1}, "time_limit_s"),
    ({"env": "e", "agent": "a", "run_id": "r", "time_limit_s": 0, "working_s": 1,
      "normalized": 0.1}, "positive"),
    ({"env": "", "agent": "a", "run_id": "r", "time_limit_s": 10, "working_s": 1,
      "normalized": 0.1}, "'env' is empty"),
])
def test_csv_errors_are_clear(make_csv: MakeCsv, row: dict[str, object], message: str) -> None:
    with pytest.raises(CsvFormatError, match=message):
        from_csv(make_csv([row]))


def test_csv_missing_column_and_mixed_run(tmp_path: Path, make_csv: MakeCsv) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("env,agent\nx,y\n")
    with pytest.raises(CsvFormatError, match="missing column"):
        from_csv(path)
    mixed = make_csv([
        {"env": "e", "agent": "a", "run_id": "r", "time_limit_s": 10, "working_s": 1,
         "normalized": 0.1},
        {"env": "e", "agent": "b", "run_id": "r", "time_limit_s": 10, "working_s": 2,
         "normalized": 0.1},
    ])
    with pytest.raises(CsvFormatError, match="mixes"):
        from_csv(mixed)


def test_written_csv_reads_back_the_same(
    tmp_path: Path, runs_dir: Path, make_run: WriteRun
) -> None:
    make_run("r1", "triton_cumsum", "a", 60.0, [(0.0, 0.0), (20.0, math.nan), (61.0, 0.8)])
    table = from_run_dirs(runs_dir)
    write_csv(table, tmp_path / "out.csv")
    again = from_csv(tmp_path / "out.csv")
    assert [json.dumps(e.to_json(), sort_keys=True) for e in again.events()] == [
        json.dumps(e.to_json(), sort_keys=True) for e in table.events()]
