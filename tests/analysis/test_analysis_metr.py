"""The converter of METR's released run data, on a small synthetic file of the same shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rebench.analysis.metr import MetrFormatError, convert_metr_runs
from rebench.analysis.metrics import final_score
from rebench.analysis.sources import from_csv

HOUR_MS = 3_600_000


def metr_line(run_id: object, family: str, alias: str, limit: int, score: float | None,
              hours: float = 0.0) -> str:
    return json.dumps({
        "run_id": run_id, "task_id": f"{family}/main", "score": score, "time_limit": limit,
        "started_at": 0, "completed_at": int(hours * HOUR_MS), "task_family": family,
        "alias": alias, "model": alias.lower(), "human_score": 0.62,
    })


def test_converted_file_reads_as_runs(tmp_path: Path) -> None:
    source = tmp_path / "all_runs.jsonl"
    source.write_text("\n".join([
        metr_line("a1", "ai_rd_triton_cumsum", "o1", 1800, 0.5),
        metr_line("a2", "ai_rd_triton_cumsum", "o1", 7200, None),
        metr_line(65, "ai_rd_small_scaling_law", "human", 0, 0.9, hours=7.98),
        metr_line(66, "ai_rd_fix_embedding", "human", 0, 0.4, hours=3.98),
        metr_line("x", "swaa_word", "o1", 60, 1.0),  # another benchmark: skipped
        "",
    ]))
    dest = tmp_path / "metr.csv"
    summary = convert_metr_runs(source, dest)
    assert (summary.runs, summary.skipped, summary.agents) == (4, 1, ("human (METR runs)", "o1"))
    table = from_csv(dest)
    runs = {r.run_id: r for r in table.runs}
    assert set(runs) == {"metr-a1", "metr-a2", "metr-65", "metr-66"}
    assert runs["metr-65"].env_id == "small_scaling_law"
    assert runs["metr-65"].time_limit_s == 8 * 3600  # the paper's human limit
    assert runs["metr-66"].time_limit_s == 4 * 3600  # a 4 h human run
    assert final_score(runs["metr-a1"]) == 0.5
    assert final_score(runs["metr-a2"]) == 0.0  # no score: invalid, counts as 0
    assert runs["metr-a1"].events[0].working_s == 1800


def test_malformed_line_is_a_clear_error(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps({"run_id": 1, "task_family": "ai_rd_x", "score": 0.1}))
    with pytest.raises(MetrFormatError, match="run 1"):
        convert_metr_runs(source, tmp_path / "out.csv")
