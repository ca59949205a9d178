"""One scale per chart, curves joined only over the same environments, honest human limits
from METR's data, a per-environment table that does not grow sideways, an empty chart that
says why, and every cited source reachable."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from rebench.analysis.budget import BudgetScore, EnvScore
from rebench.analysis.html import env_table, render_html
from rebench.analysis.humans import load_human_reference
from rebench.analysis.metr import METR_HUMAN, convert_metr_runs, human_time_limit_s
from rebench.analysis.report import ReportSettings, build_report
from rebench.analysis.sources import CsvFormatError, from_csv, write_csv
from rebench.analysis.table import RunTable, ScoreScale

MakeCsv = Callable[[Sequence[dict[str, object]]], Path]
HOUR = 3600.0
REPO = Path(__file__).resolve().parents[2]


def _rows(scale: str, agents: int = 2) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for a in range(agents):
        for env in ("triton_cumsum", "fix_embedding"):
            for i in range(2):
                rows.append({"env": env, "agent": f"agent-{a}", "run_id": f"{env}-{a}-{i}",
                             "time_limit_s": 1800, "working_s": 1800,
                             "normalized": 0.2 + 0.1 * i, "scale": scale})
    return rows


def _labels(fig: object) -> list[str]:
    return [line.get_label() for ax in fig.axes for line in ax.get_lines()]  # type: ignore[attr-defined]


def test_metr_scale_charts_draw_no_paper_scale_reference(make_csv: MakeCsv) -> None:
    pytest.importorskip("matplotlib")
    from rebench.analysis.plots import budget_figure, env_bars_figure

    capped = build_report(from_csv(make_csv(_rows("metr_capped"))), ReportSettings(n_boot=100))
    assert capped.table.scale is ScoreScale.METR_CAPPED
    fig = budget_figure(capped)
    assert not any("paper" in label for label in _labels(fig))
    assert "METR's capped 0-1 score" in fig.axes[0].get_ylabel()
    bars = env_bars_figure(capped)
    assert not any("human" in label for label in _labels(bars))
    assert "published" not in env_table(capped)  # no paper-scale human rows beside them

    paper = build_report(from_csv(make_csv(_rows(""))), ReportSettings(n_boot=100))
    assert paper.table.scale is ScoreScale.NORMALIZED
    assert any("human experts (paper, H100, gpu setting" in label
               for label in _labels(budget_figure(paper)))
    assert "paper's scale" in budget_figure(paper).axes[0].get_ylabel()
    assert "published" in env_table(paper)


def test_csv_scale_is_checked_and_kept(tmp_path: Path, make_csv: MakeCsv) -> None:
    rows = _rows("metr_capped")
    rows[0]["scale"] = "normalized"
    with pytest.raises(CsvFormatError, match="different scales"):
        from_csv(make_csv(rows))
    with pytest.raises(CsvFormatError, match="unknown scale"):
        from_csv(make_csv(_rows("percent")))
    table = from_csv(make_csv(_rows("metr_capped")))
    write_csv(table, tmp_path / "again.csv")
    assert from_csv(tmp_path / "again.csv").scale is ScoreScale.METR_CAPPED


def _point(budget: float, envs: tuple[str, ...], complete: bool) -> BudgetScore:
    per_env = tuple(EnvScore(e, "a", budget, 1800.0, 1, 0.5, 0.4, 0.6, 3, True) for e in envs)
    return BudgetScore("a", budget, 1800.0, 1, 0.5, 0.4, 0.6, complete, per_env)


def test_curve_points_over_different_environments_are_not_joined() -> None:
    pytest.importorskip("matplotlib")
    from rebench.analysis.plots import curve_segments

    four, seven = ("a", "b", "c", "d"), ("a", "b", "c", "d", "e", "f", "g")
    points = [_point(1800, four, False), _point(3600, four, False),
              _point(7200, seven, True), _point(14400, seven, True)]
    segments = curve_segments(points)
    assert [[p.budget_s for p in s] for s in segments] == [[1800, 3600], [7200, 14400]]


def _metr_line(run_id: int, family: str, alias: str, limit: float, hours: float,
               score: float | None) -> str:
    return json.dumps({"run_id": run_id, "task_family": family, "alias": alias,
                       "time_limit": limit, "started_at": 0,
                       "completed_at": hours * 3.6e6, "score": score})


def test_metr_human_limits_are_binned_from_wall_time(tmp_path: Path) -> None:
    assert human_time_limit_s(0, 3.98 * 3.6e6) == 4 * HOUR  # METR's 4 h runs end at 3.98 h
    assert human_time_limit_s(0, 7.05 * 3.6e6) == 8 * HOUR
    assert human_time_limit_s(0, 9.67 * 3.6e6) == 8 * HOUR
    assert human_time_limit_s(0, 5.0 * 3.6e6) == 8 * HOUR  # not a "4 h" run
    assert human_time_limit_s(0, 21.95 * 3.6e6) is None
    source = tmp_path / "runs.jsonl"
    source.write_text("\n".join([
        _metr_line(1, "ai_rd_triton_cumsum", "human", 0, 7.98, 0.7),
        _metr_line(2, "ai_rd_triton_cumsum", "human", 0, 136.5, 1.0),
        _metr_line(3, "ai_rd_triton_cumsum", "o1", 7200, 2.0, 0.3),
        _metr_line(4, "other_task", "o1", 7200, 2.0, 0.3),
    ]) + "\n")
    summary = convert_metr_runs(source, tmp_path / "metr.csv")
    assert (summary.runs, summary.skipped, summary.left_out) == (3, 1, 1)
    table = from_csv(tmp_path / "metr.csv")
    assert table.scale is ScoreScale.METR_CAPPED
    assert {(r.agent, r.time_limit_s) for r in table.runs} == {(METR_HUMAN, 8 * HOUR),
                                                               ("o1", 7200.0)}
    (problem,) = table.problems
    assert problem.startswith("metr-2: human run of 136.5 h wall time")


def test_per_environment_table_grows_down_not_sideways(make_csv: MakeCsv) -> None:
    few = build_report(from_csv(make_csv(_rows("", agents=2))), ReportSettings(n_boot=100))
    many = build_report(from_csv(make_csv(_rows("", agents=9))), ReportSettings(n_boot=100))
    heads = [env_table(r).split("</tr>")[0].count("<th") for r in (few, many)]
    assert heads[0] == heads[1] == 1 + 2  # the agent column and one per environment
    assert env_table(many).count("<tr>") > env_table(few).count("<tr>")


def test_empty_trajectory_chart_says_why(make_csv: MakeCsv) -> None:
    result = build_report(from_csv(make_csv(_rows(""))), ReportSettings(n_boot=100))
    assert result.trajectories == ()
    page = render_html(result, {"budget": "data:,", "bars": "data:,", "trajectories": None})
    assert "every run here has a single score" in page


def test_every_cited_source_exists_in_the_project_or_online() -> None:
    humans = load_human_reference()
    for source in humans.sources.values():
        assert "ENVIRONMENTS.md" not in source.citation
        for path in re.findall(r"\b(docs/[\w./-]+\.md)\b", source.citation):
            assert (REPO / path).is_file(), f"{source.key} cites a missing {path}"
        assert source.url.startswith("https://"), source.key
    page = render_html(build_report(RunTable(()), ReportSettings(n_boot=100)), {})
    targets = set(re.findall(r'id="(src-[\w-]+)"', page))
    assert set(re.findall(r'href="#(src-[\w-]+)"', page)) <= targets


def test_facts_file_matches_the_data() -> None:
    text = (REPO / "docs" / "human-reference.md").read_text()
    humans = load_human_reference()
    for env_id, ref in humans.environments.items():
        assert env_id in text
        if ref.best is not None:
            assert f"{ref.best.value:.2f}" in text
        if ref.starting_raw is not None and math.isfinite(ref.starting_raw):
            assert f"{ref.starting_raw:g}"[:6] in text
